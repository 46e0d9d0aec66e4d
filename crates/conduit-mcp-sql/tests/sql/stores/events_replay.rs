//! `task.status_changed` over an SQLite file: a cursor taken before a restart
//! resumes after it (the change log is in the file and the cursor key is the
//! operator's), and the change a task made while the server was down is
//! delivered; by poll and on a push stream.

use crate::support::TempDb;
use crate::support::served::{
    self, Served, events_request as request, post_as_alice as post, result_as_alice as result,
};
use conduit_mcp::auth::{BearerTokens, Principal};
use conduit_mcp::ext::events::{Events, EventsConfig};
use conduit_mcp::prelude::*;
use conduit_mcp_sql::Stores;
use serde_json::{Value, json};

const KEY: [u8; 32] = [42; 32];

/// A server on the file, with tokens for alice; stops when dropped.
struct Node {
    served: Served,
    tasks: Tasks,
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
    let http = HttpConfig::default().auth(BearerTokens::new().token("alice-token", Principal::new("alice")));
    Node { served: served::serve(server, http).await, tasks }
}

#[tokio::test]
async fn a_cursor_resumes_across_a_restart_by_poll_and_by_push() {
    let db = TempDb::new("events-replay");
    let url = format!("sqlite:{}", db.path());
    let stores = Stores::open(&url).await.expect("open");
    let node = serve(&stores).await;
    let poll = |cursor: Value| request(2, "events/poll", json!({ "name": "task.status_changed", "cursor": cursor }));
    let start = result(&node.served.url, &poll(Value::Null)).await["cursor"].clone();
    let created = result(&node.served.url, &request(1, "tools/call", json!({ "name": "job" }))).await;
    let id = created["taskId"].as_str().expect("a task").to_owned();
    drop(node);
    drop(stores);

    // Restarted on the same file: the task completes before anyone polls.
    let stores = Stores::open(&url).await.expect("reopen");
    let node = serve(&stores).await;
    let mut s =
        post(&node.served.url, &request(3, "events/stream", json!({ "name": "task.status_changed", "cursor": start })))
            .send()
            .await
            .expect("stream");
    node.tasks.complete(&id, CallToolResult::text("done"), None).await.expect("complete after the restart");
    let got = result(&node.served.url, &poll(start.clone())).await;
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
