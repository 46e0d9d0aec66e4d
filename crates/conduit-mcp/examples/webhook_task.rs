//! A task's completion delivered by webhook: a server offering
//! `task.status_changed` by webhook (an in-memory store, the egress allowing
//! one loopback origin), a receiver on loopback that answers the handshake
//! and checks each delivery's signature, and a client that subscribes,
//! starts a task, and is told of its end without watching it.
//!
//! ```text
//! cargo run -p conduit-mcp --features client,webhooks --example webhook_task
//! ```

use axum::http::{HeaderMap, StatusCode};
use conduit_mcp::auth::{BearerTokens, Principal};
use conduit_mcp::client::webhook_receiver::WebhookVerifier;
use conduit_mcp::client::{CallOutcome, ClientBuilder, EventQuery, WebhookSubscription};
use conduit_mcp::ext::events::webhook::egress::{Egress, EgressPolicy};
use conduit_mcp::ext::events::webhook::{MemoryWebhookStore, WebhookConfig};
use conduit_mcp::ext::events::{Events, EventsConfig};
use conduit_mcp::ext::tasks::{Tasks, TasksConfig};
use conduit_mcp::prelude::*;
use conduit_mcp::protocol::webhook_signature::WebhookSecret;
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::sync::mpsc;

/// The receiver: echoes the handshake's challenge; verifies every request
/// (signature, timestamp, a `webhook-id` seen once) before reading it.
async fn receiver(secret: WebhookSecret) -> Result<(String, mpsc::UnboundedReceiver<Value>), std::io::Error> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/hooks", listener.local_addr()?);
    let verifier = Arc::new(WebhookVerifier::new(vec![secret]));
    let (tx, rx) = mpsc::unbounded_channel();
    let hook = move |headers: HeaderMap, body: axum::body::Bytes| {
        let (verifier, tx) = (verifier.clone(), tx.clone());
        async move {
            let now_s = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
            if verifier.verify(&headers, &body, i64::try_from(now_s).unwrap_or(0)).is_err() {
                return (StatusCode::UNAUTHORIZED, String::new());
            }
            let v: Value = serde_json::from_slice(&body).unwrap_or_default();
            if v["type"] == "verification" {
                return (StatusCode::OK, json!({ "challenge": v["challenge"] }).to_string());
            }
            let _ = tx.send(v);
            (StatusCode::NO_CONTENT, String::new())
        }
    };
    let app = axum::Router::new().route("/hooks", axum::routing::post(hook));
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok((url, rx))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let secret = WebhookSecret::from_bytes(rand::random::<[u8; 32]>().to_vec())?;
    let (hook_url, mut deliveries) = receiver(secret.clone()).await?;
    let origin = hook_url.trim_end_matches("/hooks").to_owned();

    // The server: webhooks on, plain http to the receiver's origin only.
    let mut egress = EgressPolicy::new();
    egress.allow_origins.push(origin.clone());
    let webhooks =
        WebhookConfig::new(Arc::new(MemoryWebhookStore::new()), Arc::new(Egress::new(&egress)?)).allow_origin(origin);
    let tasks = Tasks::new(TasksConfig::enabled())?;
    let events = Events::new(EventsConfig::new().webhooks(webhooks))?;
    events.task_status(&tasks);
    let server = Server::builder("webhook-demo", "1.0.0")
        .extension(tasks.clone())
        .extension(events)
        .tool(Tool::new("job", "A job a worker finishes later").handle(|_c, _a| async { Ok(TaskSpec::new()) }))
        .build()?;
    let auth = BearerTokens::new().token("alice-token", Principal::new("alice"));
    let bound = conduit_mcp::transport::http::bind("127.0.0.1:0".parse()?).await?;
    let url = format!("http://{}/mcp", bound.local_addr());
    let config = conduit_mcp::transport::http::HttpConfig::default().auth(auth);
    tokio::spawn(async move { bound.serve(server, config, std::future::pending()).await });

    // The client subscribes (the server verifies the receiver first), then starts a task.
    let client = ClientBuilder::http(&url).token("alice-token").connect().await?;
    let sub = WebhookSubscription::new(EventQuery::new("task.status_changed"), &hook_url, secret.to_text());
    let lease = client.subscribe_webhook(&sub).await?;
    println!("subscribed: {} (refresh before {:?})", lease.id, lease.refresh_before);
    let CallOutcome::Task(task) = client.call_tool("job", json!({})).await? else {
        return Err("the server answered inline".into());
    };
    println!("task {} started; the client stops watching", task.id());

    // A worker finishes it; the receiver hears of it, signed.
    tasks.complete(task.id(), CallToolResult::text("done"), Some("Finished".into())).await?;
    let event = deliveries.recv().await.ok_or("the receiver stopped")?;
    println!("delivered: {} is {} ({})", event["data"]["taskId"], event["data"]["status"], event["eventId"]);
    client.unsubscribe_webhook(&sub).await?;
    Ok(())
}
