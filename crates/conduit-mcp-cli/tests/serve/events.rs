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
