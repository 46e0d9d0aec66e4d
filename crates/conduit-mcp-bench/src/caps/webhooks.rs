//! Webhook deliveries per second from one node (issue 29), against a floor.
//!
//! A fresh bench server (memory store, `--events`, webhooks on with the
//! receiver's CA trusted: `--webhook-root-cert`) holds `tasks` tasks; the bench
//! makes `subscriptions` webhook subscriptions to `task.status_changed`, each to
//! its own path of one HTTPS receiver on loopback (`receiver.rs`), then asks the
//! admin route to complete every task at once and times until every terminal
//! event reached every subscription (`tasks × subscriptions` deliveries, each
//! signed, stored in the outbox, claimed, posted and settled). One
//! subscription's deliveries go one at a time, in order; different ones' at
//! once. The floor is the same receiver hit by a plain HTTPS POST loop (reqwest
//! over rustls, one client, as many loops as subscriptions, the same body):
//! what the machine does with no store, no signing and no SSRF checks.

use super::Sizes;
use super::receiver::Receiver;
use super::server::{Node, call, request_with};
use crate::client::Conn;
use crate::wire;
use std::path::Path;
use std::time::{Duration, Instant};

/// The static token of the bench's principal.
const TOKEN: &str = "bench-webhooks-token";

/// The subscriptions' secret (32 bytes of 0x07, base64).
const SECRET: &str = "whsec_BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=";

/// How long a measurement may take before it counts as failed.
const LIMIT: Duration = Duration::from_secs(180);

/// One round: the webhook deliveries and the floor, side by side.
#[derive(Debug, Clone)]
pub struct WebhookSample {
    /// The round (0-based).
    pub round: usize,
    /// Subscriptions (and floor loops).
    pub subscriptions: usize,
    /// Deliveries expected (tasks × subscriptions).
    pub expected: usize,
    /// Distinct terminal deliveries that came.
    pub delivered: usize,
    /// From the admin request to the last delivery, s.
    pub secs: f64,
    /// Floor POSTs answered.
    pub floor_posts: usize,
    /// The floor's wall time, s.
    pub floor_secs: f64,
}

impl WebhookSample {
    /// Deliveries per second.
    pub fn rate(&self) -> f64 {
        self.delivered as f64 / self.secs.max(1e-9)
    }

    /// Floor POSTs per second.
    pub fn floor_rate(&self) -> f64 {
        self.floor_posts as f64 / self.floor_secs.max(1e-9)
    }

    /// One log line.
    pub fn line(&self) -> String {
        format!(
            "webhooks round {} {}/{} deliveries in {:.2} s: {:.0}/s; floor {:.0} POSTs/s; ratio {:.3}",
            self.round + 1,
            self.delivered,
            self.expected,
            self.secs,
            self.rate(),
            self.floor_rate(),
            self.rate() / self.floor_rate().max(1e-9)
        )
    }
}

/// One round.
pub async fn round(server: &Path, z: &Sizes, round: usize) -> Result<WebhookSample, String> {
    let receiver = Receiver::start().await?;
    let ca = std::env::temp_dir().join(format!("conduit-bench-webhook-ca-{}.pem", std::process::id()));
    std::fs::write(&ca, &receiver.ca_pem).map_err(|e| format!("cannot write {}: {e}", ca.display()))?;
    let args = [
        "--events".to_owned(),
        format!("--bearer-token={TOKEN}"),
        "--webhook-root-cert".to_owned(),
        ca.display().to_string(),
    ];
    let node = Node::start(server, &args)?;
    let header = format!("Authorization: Bearer {TOKEN}");
    let (n, subs) = (z.webhook_tasks, z.webhook_subscriptions);

    let created = node.create_tasks(n, "h", &header).await?;
    // Subscribed after the creates: each subscription starts now, so only the completions follow.
    let mut conn = Conn::connect(node.addr).await.map_err(|e| e.to_string())?;
    for i in 0..subs {
        let params = format!(
            r#""name":"task.status_changed","delivery":{{"mode":"webhook","url":"{}","secret":"{SECRET}"}}"#,
            receiver.url(&format!("/h/{i}"))
        );
        let mut req = Vec::new();
        request_with(
            &mut req,
            &node.host(),
            &call("events/subscribe", "task.status_changed", i as u64 + 1, &params),
            &[&header],
        );
        let status = conn.roundtrip(&req).await.map_err(|e| e.to_string())?;
        if status != 200 || wire::find(conn.body(), b"\"result\"").is_none() {
            return Err(format!("events/subscribe answered {status}: {}", String::from_utf8_lossy(conn.body())));
        }
    }
    let ids: Vec<&str> = created.iter().map(String::as_str).collect();
    let t0 = Instant::now();
    node.complete(&mut conn, &ids).await?;
    let all = receiver.until_terminal(n * subs, LIMIT).await;
    let secs = t0.elapsed().as_secs_f64();
    let delivered = receiver.terminal();
    if !all {
        return Err(format!("{delivered} of {} deliveries within {LIMIT:?}", n * subs));
    }
    drop(node);
    let _ = std::fs::remove_file(&ca);
    let (floor_posts, floor_secs) = floor(&receiver, n * subs, subs).await?;
    Ok(WebhookSample { round, subscriptions: subs, expected: n * subs, delivered, secs, floor_posts, floor_secs })
}

/// `total` POSTs of the last delivery's body to the receiver from `loops` loops
/// sharing one client: (answered, seconds).
async fn floor(receiver: &Receiver, total: usize, loops: usize) -> Result<(usize, f64), String> {
    let ca = reqwest::Certificate::from_pem(receiver.ca_pem.as_bytes()).map_err(|e| e.to_string())?;
    let client = reqwest::Client::builder()
        .use_rustls_tls()
        .add_root_certificate(ca)
        .no_proxy()
        .build()
        .map_err(|e| e.to_string())?;
    let body = receiver.last_body();
    let url = receiver.url("/floor");
    let before = receiver.requests();
    let t0 = Instant::now();
    let mut runs = tokio::task::JoinSet::new();
    for l in 0..loops {
        let (client, body, url) = (client.clone(), body.clone(), url.clone());
        let mine = total / loops + usize::from(l < total % loops);
        runs.spawn(async move {
            let mut ok: usize = 0;
            for i in 0..mine {
                let sent = client
                    .post(&url)
                    .header("content-type", "application/json")
                    .header("webhook-id", format!("floor-{l}-{i}"))
                    .body(body.clone())
                    .send()
                    .await;
                if sent.is_ok_and(|r| r.status().is_success()) {
                    ok += 1;
                }
            }
            ok
        });
    }
    let answered: usize = runs.join_all().await.into_iter().sum();
    let secs = t0.elapsed().as_secs_f64();
    if receiver.requests() - before != total as u64 {
        return Err(format!("the floor's receiver saw {} of {total} POSTs", receiver.requests() - before));
    }
    Ok((answered, secs))
}
