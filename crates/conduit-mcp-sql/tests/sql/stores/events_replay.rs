//! `task.status_changed` over an SQLite file: a cursor taken before a restart
//! resumes after it (the change log is in the file and the cursor key is the
//! operator's), and the change a task made while the server was down is
//! delivered; by poll and on a push stream.

use crate::support::TempDb;
use conduit_mcp::auth::{BearerTokens, Principal};
use conduit_mcp::ext::events::{Events, EventsConfig};
use conduit_mcp::prelude::*;
use conduit_mcp_sql::Stores;
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::sync::Notify;

const KEY: [u8; 32] = [42; 32];

/// A server on the file, with tokens for alice; stops when dropped.
struct Node {
    url: String,
    tasks: Tasks,
    stop: Arc<Notify>,
}

impl Drop for Node {
    fn drop(&mut self) {
        self.stop.notify_one();
    }
}

async fn serve(stores: &Stores) -> Node {
    let tasks = stores.tasks(TasksConfig::enabled()).expect("tasks");
    let events = Events::new(EventsConfig::new().cursor_key(KEY)).expect("events");
    events.task_status(&tasks);
    let server = Server::builder("replay", "1")
        .extension(tasks.clone())
        .extension(events)
        .tool(Tool::new("job", "A task a worker finishes").handle(|_c, _a| async { Ok(TaskSpec::new()) }))
        .build()
        .expect("server");
    let bound = conduit_mcp::transport::http::bind("127.0.0.1:0".parse().expect("addr")).await.expect("bind");
    let url = format!("http://{}/mcp", bound.local_addr());
    let stop = Arc::new(Notify::new());
    let stopped = stop.clone();
    let http = HttpConfig::default().auth(BearerTokens::new().token("alice-token", Principal::new("alice")));
    tokio::spawn(async move { bound.serve(server, http, async move { stopped.notified().await }).await });
    Node { url, tasks, stop }
}

fn request(id: u64, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": { "extensions": {
            "io.modelcontextprotocol/tasks": {}, "io.modelcontextprotocol/events": {} } }
    });
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

fn post(url: &str, body: &Value) -> reqwest::RequestBuilder {
    let mut r = reqwest::Client::new()
        .post(url)
        .bearer_auth("alice-token")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", body["method"].as_str().expect("a method"));
    if let Some(name) = body["params"]["name"].as_str() {
        r = r.header("mcp-name", name);
    }
    r.body(body.to_string())
}

async fn result(url: &str, body: &Value) -> Value {
    let v: Value = post(url, body).send().await.expect("sent").json().await.expect("JSON");
    assert!(v.get("result").is_some(), "{v}");
    v["result"].clone()
}

#[tokio::test]
async fn a_cursor_resumes_across_a_restart_by_poll_and_by_push() {
    let db = TempDb::new("events-replay");
    let url = format!("sqlite:{}", db.path());
    let stores = Stores::open(&url).await.expect("open");
    let node = serve(&stores).await;
    let poll = |cursor: Value| request(2, "events/poll", json!({ "name": "task.status_changed", "cursor": cursor }));
    let start = result(&node.url, &poll(Value::Null)).await["cursor"].clone();
    let created = result(&node.url, &request(1, "tools/call", json!({ "name": "job" }))).await;
    let id = created["taskId"].as_str().expect("a task").to_owned();
    drop(node);
    drop(stores);

    // Restarted on the same file: the task completes before anyone polls.
    let stores = Stores::open(&url).await.expect("reopen");
    let node = serve(&stores).await;
    let mut s =
        post(&node.url, &request(3, "events/stream", json!({ "name": "task.status_changed", "cursor": start })))
            .send()
            .await
            .expect("stream");
    node.tasks.complete(&id, CallToolResult::text("done"), None).await.expect("complete after the restart");
    let got = result(&node.url, &poll(start.clone())).await;
    assert_eq!(got["truncated"], false, "{got}");
    let events = got["events"].as_array().expect("events");
    assert_eq!(events.len(), 1, "{got}");
    assert_eq!(events[0]["data"]["taskId"], json!(id));
    assert_eq!(events[0]["data"]["status"], "completed");

    // The push stream from the same cursor: active, then the same occurrence.
    let mut seen = String::new();
    let pushed = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        loop {
            let chunk = s.chunk().await.expect("read").expect("the stream is open");
            seen.push_str(&String::from_utf8_lossy(&chunk));
            let found = seen
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
                .find(|m| m["method"] == "notifications/events/event");
            if let Some(m) = found {
                return m;
            }
        }
    })
    .await
    .expect("the event is pushed");
    assert_eq!(pushed["params"]["eventId"], events[0]["eventId"], "one id in both modes, after a restart");
    assert!(seen.contains("notifications/events/active"));
}
