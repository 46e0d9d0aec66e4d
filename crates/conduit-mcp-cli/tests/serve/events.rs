//! `serve` offers `task.status_changed` by poll and push with no
//! configuration: the owner of a task learns it finished without watching it.

use crate::common::*;
use serde_json::{Value, json};

const EVENTS: &str = "io.modelcontextprotocol/events";

fn ereq(id: i64, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": { "extensions": { EVENTS: {} } }
    });
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

async fn send(node: &Node, token: &str, body: &Value) -> Value {
    let resp = reqwest::Client::new()
        .post(&node.url)
        .bearer_auth(token)
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", body["method"].as_str().unwrap())
        .json(body)
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status(), 200);
    resp.json().await.expect("JSON")
}

#[tokio::test]
async fn serve_offers_task_status_changed_to_the_tasks_owner() {
    let node = Node::start(&["--token", "alice-token=alice", "--token", "bob-token=bob"]).await;
    let listed = send(&node, "alice-token", &ereq(1, "events/list", json!({}))).await;
    let names: Vec<&Value> =
        listed["result"]["events"].as_array().expect("events").iter().map(|e| &e["name"]).collect();
    assert_eq!(names, [&json!("task.status_changed")], "{listed}");
    assert_eq!(listed["result"]["events"][0]["delivery"], json!(["poll", "push"]));
    let poll = |cursor: Value| ereq(2, "events/poll", json!({ "name": "task.status_changed", "cursor": cursor }));
    let alice0 = send(&node, "alice-token", &poll(Value::Null)).await["result"]["cursor"].clone();
    let bob0 = send(&node, "bob-token", &poll(Value::Null)).await["result"]["cursor"].clone();
    let id = create(&node, Some("alice-token"), "job", json!({ "name": "report" })).await;
    let done = call(&node, Some("alice-token"), "complete_job", json!({ "taskId": id, "text": "ok" })).await;
    assert_eq!(first_text(&done), "completed");
    let got = send(&node, "alice-token", &poll(alice0)).await;
    let events = got["result"]["events"].as_array().expect("events");
    assert_eq!(events.len(), 1, "{got}");
    assert_eq!(events[0]["data"]["taskId"], json!(id));
    assert_eq!(events[0]["data"]["status"], "completed");
    let bob = send(&node, "bob-token", &poll(bob0)).await;
    assert_eq!(bob["result"]["events"], json!([]), "another principal's task: {bob}");
}

/// A receiver on loopback: echoes the handshake's challenge, hands each other request on.
async fn receiver() -> (String, tokio::sync::mpsc::UnboundedReceiver<(axum::http::HeaderMap, Vec<u8>)>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let origin = format!("http://{}", listener.local_addr().expect("addr"));
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let hook = move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
        let tx = tx.clone();
        async move {
            let v: Value = serde_json::from_slice(&body).unwrap_or_default();
            if v["type"] == "verification" {
                return json!({ "challenge": v["challenge"] }).to_string();
            }
            let _ = tx.send((headers, body.to_vec()));
            String::new()
        }
    };
    let app = axum::Router::new().route("/h", axum::routing::post(hook));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (origin, rx)
}

#[tokio::test]
async fn serve_delivers_task_status_changed_by_webhook_when_the_operator_allows_an_origin() {
    // The memory store, then SQLite's (the outbox in the database).
    for store in ["memory", "sqlite::memory:"] {
        delivers_by_webhook(&["--store", store]).await;
    }
}

// The subscription, the verification and the outbox in PostgreSQL.
#[tokio::test]
async fn serve_delivers_by_webhook_on_postgres() {
    let Some(url) = database_url() else { return };
    let schema = Schema::new(&url);
    let store = format!("postgres:{url}");
    delivers_by_webhook(&["--store", &store, "--pg-schema", &schema.name]).await;
    schema.drop_now().await;
}

/// Subscribes, completes a task, and checks the signed delivery, on a server started with `store_args`.
async fn delivers_by_webhook(store_args: &[&str]) {
    use conduit_mcp::protocol::webhook_signature::WebhookSecret;
    let (origin, mut deliveries) = receiver().await;
    let mut args = vec!["--token", "alice-token=alice", "--webhook-allow-origin", &origin];
    args.extend_from_slice(store_args);
    let store = store_args.get(1).map_or("memory", |s| s.split(':').next().unwrap_or_default());
    let node = Node::start(&args).await;
    let listed = send(&node, "alice-token", &ereq(1, "events/list", json!({}))).await;
    assert_eq!(listed["result"]["events"][0]["delivery"], json!(["poll", "push", "webhook"]));
    let secret = WebhookSecret::from_bytes(vec![9; 32]).expect("a secret");
    let sub = json!({ "name": "task.status_changed",
                      "delivery": { "mode": "webhook", "url": format!("{origin}/h"), "secret": secret.to_text() } });
    let r = send(&node, "alice-token", &ereq(2, "events/subscribe", sub)).await;
    let id = r["result"]["id"].as_str().unwrap_or_else(|| panic!("subscribed: {r}")).to_owned();
    let task = create(&node, Some("alice-token"), "job", json!({ "name": "report" })).await;
    call(&node, Some("alice-token"), "complete_job", json!({ "taskId": task, "text": "ok" })).await;
    let (headers, body) = tokio::time::timeout(std::time::Duration::from_secs(10), deliveries.recv())
        .await
        .unwrap_or_else(|_| panic!("a delivery in time ({store})"))
        .expect("the receiver runs");
    let text = |n: &str| headers.get(n).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let event: Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(event["data"]["taskId"], json!(task));
    assert_eq!(text("x-mcp-subscription-id"), id);
    let ts: i64 = text("webhook-timestamp").parse().expect("a timestamp");
    assert!(secret.verify(&text("webhook-id"), ts, &body, &text("webhook-signature")));
}

#[tokio::test]
async fn without_webhook_rules_serve_refuses_webhook_subscriptions() {
    let node = Node::start(&["--token", "alice-token=alice"]).await;
    let sub = json!({ "name": "task.status_changed",
                      "delivery": { "mode": "webhook", "url": "https://hooks.example/h",
                                    "secret": format!("whsec_{}", "QUJDREVGR0hJSktMTU5PUFFSU1RVVldY") } });
    let r = send(&node, "alice-token", &ereq(1, "events/subscribe", sub)).await;
    assert_eq!(r["error"]["code"], -32014, "{r}");
    assert_eq!(r["error"]["data"], json!({ "feature": "deliveryMode", "value": "webhook" }));
}
