//! Two `serve` processes on one PostgreSQL seal Events cursors with the
//! database's key (migration 0037): a `task.status_changed` cursor node A
//! gave out resumes on node B, and node B's poll from it sees the change a
//! worker on node B made.

use crate::common;

use common::*;
use serde_json::{Value, json};

/// `events/poll` of `task.status_changed` as alice on `node`, raw: the JSON-RPC answer.
async fn poll(node: &Node, cursor: &Value) -> Value {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "events/poll",
        "params": {
            "name": "task.status_changed", "cursor": cursor,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {
                    "extensions": { "io.modelcontextprotocol/events": {}, TASKS: {} }
                }
            }
        }
    });
    let r = reqwest::Client::new()
        .post(&node.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "events/poll")
        .header("authorization", "Bearer alice-token")
        .json(&body)
        .send()
        .await
        .expect("sent");
    r.json().await.expect("a JSON answer")
}

// cursor-opaque (a cursor names one position on every node), poll-response-cursor, poll-events-array
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cursor_from_one_node_resumes_on_another() {
    let Some(url) = database_url() else { return };
    let schema = Schema::new(&url);
    let store = format!("postgres:{url}");
    let node = |id: &'static str| {
        let (store, schema) = (store.clone(), schema.name.clone());
        async move {
            Node::start(&["--store", &store, "--pg-schema", &schema, "--node-id", id, "--token", "alice-token=alice"])
                .await
        }
    };
    let (a, b) = (node("a").await, node("b").await);
    let alice = Some("alice-token");
    let start = poll(&a, &Value::Null).await;
    let cursor = start["result"]["cursor"].clone();
    assert!(cursor.is_string(), "{start}");
    let id = create(&a, alice, "job", json!({ "name": "report" })).await;
    let done = call(&b, alice, "complete_job", json!({ "taskId": id, "text": "42 rows" })).await;
    assert_eq!(first_text(&done), "completed", "{done:?}");
    // Node B accepts node A's cursor and serves the change from the shared log.
    let page = poll(&b, &cursor).await;
    let events = page["result"]["events"].as_array().unwrap_or_else(|| panic!("node B refused A's cursor: {page}"));
    let done: Vec<&Value> = events.iter().filter(|e| e["data"]["taskId"] == id.as_str()).collect();
    assert_eq!(done.len(), 1, "{page}");
    assert_eq!(done[0]["data"]["status"], "completed");
    // And node A accepts node B's cursor after it: nothing new.
    let after = poll(&a, &page["result"]["cursor"]).await;
    assert_eq!(after["result"]["events"], json!([]), "{after}");
    drop((a, b));
    schema.drop_now().await;
}
