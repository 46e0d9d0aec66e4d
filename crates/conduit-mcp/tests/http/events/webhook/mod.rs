//! Webhook delivery over real sockets: `events/subscribe` on the server,
//! the handshake and the deliveries received by a loopback receiver (plain
//! `http://`, an origin the egress and the test's configuration allow), each
//! signature checked with `protocol::webhook_signature`.

mod delivery;
mod evolution;
mod log_bounds;
mod python;
mod store_double;
mod subscribe;

use super::*;
use axum::body::Bytes;
use axum::http::{HeaderMap as AxumHeaders, StatusCode};
use conduit_mcp::ext::events::webhook::WebhookConfig;
use conduit_mcp::ext::events::webhook::egress::{Egress, EgressPolicy};
use conduit_mcp::protocol::webhook_signature::WebhookSecret;
use std::collections::VecDeque;
use std::time::Duration;
use store_double::DoubleStore;
use tokio::sync::mpsc;

/// One request the receiver got.
#[derive(Debug, Clone)]
pub struct Received {
    pub id: String,
    pub timestamp: i64,
    pub signature: String,
    pub subscription: String,
    pub content_type: String,
    pub body: Vec<u8>,
}

impl Received {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }

    /// Whether `secret` signed it.
    pub fn signed_by(&self, secret: &WebhookSecret) -> bool {
        secret.verify(&self.id, self.timestamp, &self.body, &self.signature)
    }
}

/// How the receiver answers.
#[derive(Default)]
pub struct Script {
    /// Answers to deliveries, in order (then 204).
    pub deliveries: VecDeque<u16>,
    /// Answer verification with this instead of the echo: status and body.
    pub verification: Option<(u16, String)>,
}

/// A loopback webhook receiver.
pub struct Receiver {
    /// Its callback URL.
    pub url: String,
    /// Its origin.
    pub origin: String,
    pub script: Arc<Mutex<Script>>,
    rx: tokio::sync::Mutex<mpsc::UnboundedReceiver<Received>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn header(h: &AxumHeaders, name: &str) -> String {
    h.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned()
}

impl Receiver {
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (tx, rx) = mpsc::unbounded_channel();
        let script = Arc::new(Mutex::new(Script::default()));
        let s = script.clone();
        let handler = move |headers: AxumHeaders, body: Bytes| {
            let (tx, s) = (tx.clone(), s.clone());
            async move {
                let got = Received {
                    id: header(&headers, "webhook-id"),
                    timestamp: header(&headers, "webhook-timestamp").parse().unwrap_or(-1),
                    signature: header(&headers, "webhook-signature"),
                    subscription: header(&headers, "x-mcp-subscription-id"),
                    content_type: header(&headers, "content-type"),
                    body: body.to_vec(),
                };
                let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let answer = if v["type"] == "verification" {
                    let planted = s.lock().unwrap().verification.clone();
                    planted.unwrap_or_else(|| (200, json!({ "challenge": v["challenge"] }).to_string()))
                } else {
                    (s.lock().unwrap().deliveries.pop_front().unwrap_or(204), String::new())
                };
                let _ = tx.send(got);
                (StatusCode::from_u16(answer.0).expect("a status"), answer.1)
            }
        };
        let app = axum::Router::new().route("/h", axum::routing::post(handler));
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.expect("serve");
        });
        Self {
            url: format!("http://{addr}/h"),
            origin: format!("http://{addr}"),
            script,
            rx: tokio::sync::Mutex::new(rx),
            task,
        }
    }

    /// The next request received.
    pub async fn next(&self) -> Received {
        guard("a webhook request", async { self.rx.lock().await.recv().await.expect("the receiver runs") }).await
    }

    /// Nothing more was received so far.
    pub async fn nothing_yet(&self) -> bool {
        self.rx.lock().await.try_recv().is_err()
    }
}

/// An application's event type offered by every mode, webhooks included.
pub struct AlertRaised;

impl TypedEvent for AlertRaised {
    type Arguments = serde_json::Map<String, Value>;
    type Payload = serde_json::Map<String, Value>;
    const NAME: &'static str = "alert.raised";
    const DESCRIPTION: &'static str = "Fires when an alert is raised";

    fn delivery() -> Vec<DeliveryMode> {
        vec![DeliveryMode::Poll, DeliveryMode::Push, DeliveryMode::Webhook]
    }
}

/// An `alert.raised` payload saying `text`.
pub fn alert(text: &str) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    m.insert("text".into(), text.into());
    m
}

/// A fixture with webhooks to a loopback receiver.
pub struct Hooks {
    pub f: Fixture,
    pub store: Arc<DoubleStore>,
    pub receiver: Receiver,
}

/// A secret of 32 bytes of `b`.
pub fn secret(b: u8) -> WebhookSecret {
    WebhookSecret::from_bytes(vec![b; 32]).expect("32 bytes")
}

/// Starts the receiver and a server delivering to it, `edit` applied to the webhook config.
pub async fn hooks_with(edit: impl FnOnce(WebhookConfig) -> WebhookConfig) -> Hooks {
    hooks_over(EventsConfig::new(), edit).await
}

/// As [`hooks_with`], on `events` (its webhook config set here).
pub async fn hooks_over(events: EventsConfig, edit: impl FnOnce(WebhookConfig) -> WebhookConfig) -> Hooks {
    let receiver = Receiver::start().await;
    let store = Arc::new(DoubleStore::default());
    // The real egress, plain http and loopback allowed at the receiver's origin only.
    let mut policy = EgressPolicy::new();
    policy.allow_origins.push(receiver.origin.clone());
    let egress = Arc::new(Egress::new(&policy).expect("an egress"));
    let config = WebhookConfig::new(store.clone(), egress)
        .allow_origin(receiver.origin.clone())
        .recheck(Duration::from_millis(20));
    let f = fixture_with(events.webhooks(edit(config)), HttpConfig::default()).await;
    Hooks { f, store, receiver }
}

pub async fn hooks() -> Hooks {
    hooks_with(|c| c).await
}

impl Hooks {
    /// `events/subscribe` params for `name` with `arguments`, delivered to the receiver.
    pub fn params(&self, name: &str, arguments: Value, secret: &WebhookSecret) -> Value {
        json!({ "name": name, "arguments": arguments,
                "delivery": { "mode": "webhook", "url": self.receiver.url, "secret": secret.to_text() } })
    }

    /// Subscribes as `who`; the answer.
    pub async fn subscribe(&self, who: Option<&str>, id: i64, params: Value) -> Resp {
        self.f.send_as(who, &ereq(id, "events/subscribe", params)).await
    }

    /// Starts a `job` task as `who`; its id.
    pub async fn start_job(&self, who: &str) -> String {
        let r = self.f.send_as(Some(who), &ereq(1, "tools/call", json!({ "name": "job" }))).await;
        r.assert_ok(&json!(1))["taskId"].as_str().expect("a task").to_owned()
    }

    /// Completes task `id`.
    pub async fn complete(&self, id: &str) {
        self.f.tasks.complete(id, CallToolResult::text("done"), None).await.expect("completed");
    }
}
