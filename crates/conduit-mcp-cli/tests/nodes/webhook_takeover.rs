//! Two `serve` processes on one PostgreSQL deliver webhooks from one outbox:
//! a task created on node A, its terminal `task.status_changed` goes to an
//! HTTPS receiver (a private CA the nodes trust) that fails the first
//! attempt; the node holding the claim on the second attempt is killed
//! (SIGKILL) mid-attempt, and the other node takes the delivery over once the
//! lease ends and delivers it. Every attempt carries the same `webhook-id`
//! and bytes, each signed afresh with the subscription's secret.

use super::webhook_receiver::{Delivery, Receiver};
use crate::common;

use common::*;
use conduit_mcp::protocol::webhook_signature::WebhookSecret;
use serde_json::{Value, json};
use std::time::Duration;

const EVENTS: &str = "io.modelcontextprotocol/events";

/// Short timings so the test runs in seconds: an attempt lasts at most 3 s, a
/// claim 4 s (longer than an attempt, as the settings require), a retry
/// waits 200 ms.
const WEBHOOKS_TABLE: &str = "[events.webhooks]
allow_loopback = true
attempt_timeout_ms = 3000
lease_ms = 4000
retry_first_delay_ms = 200
retry_max_delay_ms = 400
max_attempts = 10
";

/// Waiting guard for one step: a lease (4 s), a recheck (1 s), and room for a loaded machine.
const STEP: Duration = Duration::from_secs(20);

/// An Events request of `method` as alice on `node`: the JSON-RPC answer.
async fn events(node: &Node, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": { "extensions": { EVENTS: {} } }
    });
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    let r = reqwest::Client::new()
        .post(&node.url)
        .bearer_auth("alice-token")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .json(&body)
        .send()
        .await
        .expect("sent");
    r.json().await.expect("a JSON answer")
}

/// The node whose lease holds the outbox entry `webhook_id` now (`None`: unclaimed or gone).
async fn holder(db: &mut sqlx::PgConnection, schema: &str, webhook_id: &str) -> Option<String> {
    let sql = format!("SELECT lease_node FROM {schema}.conduit_webhook_outbox WHERE id = $1");
    sqlx::query_scalar::<_, Option<String>>(sqlx::AssertSqlSafe(sql))
        .bind(webhook_id)
        .fetch_optional(db)
        .await
        .expect("the outbox reads")
        .flatten()
}

/// Whether the outbox still holds the entry `webhook_id`.
async fn in_outbox(db: &mut sqlx::PgConnection, schema: &str, webhook_id: &str) -> bool {
    let sql = format!("SELECT count(*) FROM {schema}.conduit_webhook_outbox WHERE id = $1");
    let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).bind(webhook_id).fetch_one(db).await.expect("reads");
    n > 0
}

/// Checks an attempt is the terminal event of `task`, signed by `secret`; returns its id and body.
fn signed_terminal(d: &Delivery, secret: &WebhookSecret, task: &str) -> (String, Vec<u8>) {
    let event = d.json();
    assert_eq!(event["data"]["taskId"], task, "{event}");
    assert_eq!(event["data"]["status"], "completed", "{event}");
    let ts: i64 = d.header("webhook-timestamp").parse().expect("a timestamp");
    let id = d.header("webhook-id");
    assert!(secret.verify(id, ts, &d.body, d.header("webhook-signature")), "a valid Standard Webhooks signature");
    (id.to_owned(), d.body.clone())
}

// webhook-retry, webhook-lease-takeover, webhook-signature
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_mid_retry_is_finished_by_the_surviving_node() {
    use sqlx::Connection;
    let Some(url) = database_url() else { return };
    let schema = Schema::new(&url);
    let mut hooks = Receiver::start().await;
    let dir = std::env::temp_dir().join(format!("conduit-webhook-takeover-{:016x}", rand::random::<u64>()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let (ca, config) = (dir.join("ca.pem"), dir.join("conduit.toml"));
    std::fs::write(&ca, &hooks.ca_pem).expect("the CA written");
    std::fs::write(&config, WEBHOOKS_TABLE).expect("the config written");
    let store = format!("postgres:{url}");
    let (ca, config) = (ca.to_str().expect("a path").to_owned(), config.to_str().expect("a path").to_owned());
    let start = |id: &'static str| {
        let (store, schema, ca, config) = (store.clone(), schema.name.clone(), ca.clone(), config.clone());
        async move {
            let args = ["--store", &store, "--pg-schema", &schema, "--node-id", id, "--token", "alice-token=alice"];
            let mut all = args.to_vec();
            all.extend(["--config", &config, "--webhook-root-cert", &ca]);
            Node::start(&all).await
        }
    };
    let names = ["hooks-a", "hooks-b"];
    let mut nodes = [Some(start(names[0]).await), Some(start(names[1]).await)];
    let a = nodes[0].as_ref().expect("node A");

    let secret = WebhookSecret::from_bytes(vec![7; 32]).expect("a secret");
    let delivery = json!({ "mode": "webhook", "url": format!("{}/h", hooks.origin), "secret": secret.to_text() });
    let sub = events(a, "events/subscribe", json!({ "name": "task.status_changed", "delivery": delivery })).await;
    assert!(sub["result"]["id"].is_string(), "subscribed (the handshake passed over TLS): {sub}");
    let alice = Some("alice-token");
    let task = create(a, alice, "job", json!({ "name": "report" })).await;
    let done = call(a, alice, "complete_job", json!({ "taskId": task, "text": "ok" })).await;
    assert_eq!(first_text(&done), "completed", "{done:?}");

    // Earlier changes of the task are taken at once; the terminal one fails its first attempt.
    let first = loop {
        let d = hooks.next(STEP).await;
        if d.json()["data"]["status"] == "completed" {
            break d;
        }
        d.answer(204);
    };
    let (id, body) = signed_terminal(&first, &secret, &task);
    let mut db = sqlx::PgConnection::connect(&url).await.expect("PostgreSQL");
    let tried_by = holder(&mut db, &schema.name, &id).await.expect("the first attempt's node holds the claim");
    first.answer(503);

    // The retry: whichever node claimed it holds it while the attempt is open; it dies there.
    let second = hooks.next(STEP).await;
    assert_eq!(signed_terminal(&second, &secret, &task), (id.clone(), body.clone()), "the same id and bytes");
    let doomed = holder(&mut db, &schema.name, &id).await.expect("the retry's node holds the claim");
    let killed = names.iter().position(|n| *n == doomed).unwrap_or_else(|| panic!("a node of ours: {doomed}"));
    nodes[killed].as_mut().expect("running").kill();
    let still = holder(&mut db, &schema.name, &id).await;
    assert_eq!(still.as_deref(), Some(doomed.as_str()), "killed while its claim was held");
    drop(second);

    // The survivor takes the entry over once the lease ends, and delivers it.
    let survivor = names[1 - killed];
    let third = hooks.next(STEP).await;
    assert_eq!(signed_terminal(&third, &secret, &task), (id.clone(), body), "the same id and bytes");
    let delivered_by = holder(&mut db, &schema.name, &id).await;
    assert_eq!(delivered_by.as_deref(), Some(survivor), "the survivor's claim");
    third.answer(204);
    eprintln!(
        "webhook takeover: attempt 1 by {tried_by} (503), attempt 2 by {doomed} (killed), delivered by {survivor}"
    );

    // The survivor's worker settles an attempt before it claims again: once a later task's
    // terminal event arrives, the entry is gone from the outbox (delivered, not retried).
    let survivor_node = nodes[1 - killed].as_ref().expect("the survivor runs");
    let later = create(survivor_node, alice, "job", json!({ "name": "later" })).await;
    call(survivor_node, alice, "complete_job", json!({ "taskId": later, "text": "ok" })).await;
    loop {
        let d = hooks.next(STEP).await;
        let event = d.json();
        assert_ne!(d.header("webhook-id"), id, "delivered once, never retried after the 204");
        d.answer(204);
        if event["data"]["taskId"] == later.as_str() && event["data"]["status"] == "completed" {
            break;
        }
    }
    assert!(!in_outbox(&mut db, &schema.name, &id).await, "the survivor settled the delivery");
    drop(nodes);
    schema.drop_now().await;
    std::fs::remove_dir_all(&dir).ok();
}
