//! Tasks belong to the principal that created them: another principal's
//! task is byte-for-byte a missing one, on every route and in listen acks.

use crate::common;

use common::*;
use conduit_mcp::auth::{BearerTokens, Principal};
use conduit_mcp::ext::tasks::{Tasks, TasksConfig};
use conduit_mcp::prelude::*;
use serde_json::{Value, json};

const TASKS: &str = "io.modelcontextprotocol/tasks";

fn treq(id: i64, method: &str, params: Value) -> Value {
    let mut p = params;
    p["_meta"] = meta_with(json!({ "extensions": { TASKS: {} } }));
    req(id, method, p)
}

async fn harness() -> (Harness, Tasks) {
    let tasks = Tasks::new(TasksConfig::enabled()).unwrap();
    let server = Server::builder("owners", "1")
        .extension(tasks.clone())
        .tool(Tool::new("job", "a task").handle(|_c, _a| async { Ok(TaskSpec::new()) }))
        .build()
        .unwrap();
    let auth =
        BearerTokens::new().token("alice-token", Principal::new("alice")).token("bob-token", Principal::new("bob"));
    (start_with(server, HttpConfig::default().auth(auth)).await, tasks)
}

async fn as_user(h: &Harness, token: &str, body: &Value) -> Resp {
    let t = format!("Bearer {token}");
    h.send_with(body, |hd| set(hd, "authorization", &t)).await
}

#[tokio::test]
async fn a_foreign_task_is_indistinguishable_from_a_missing_one() {
    let (h, tasks) = harness().await;
    let c = as_user(&h, "alice-token", &treq(1, "tools/call", json!({ "name": "job" }))).await.assert_ok(&json!(1));
    let id = c["taskId"].as_str().unwrap().to_owned();
    assert_eq!(tasks.status(&id).await.unwrap().owner.as_deref(), Some("alice"));
    let missing = "m".repeat(43);
    for (method, extra) in [
        ("tasks/get", json!({})),
        ("tasks/update", json!({ "inputResponses": { "k": { "action": "accept" } } })),
        ("tasks/cancel", json!({})),
    ] {
        let mut p = extra.clone();
        p["taskId"] = json!(id);
        let foreign = as_user(&h, "bob-token", &treq(9, method, p)).await;
        let mut p = extra;
        p["taskId"] = json!(missing);
        let absent = as_user(&h, "bob-token", &treq(9, method, p)).await;
        foreign.assert_error(200, -32602, &json!(9));
        assert_eq!(foreign.status, absent.status, "{method}");
        assert_eq!(foreign.text, absent.text, "{method}: same bytes as a missing task");
        assert!(!foreign.text.contains(&id), "{method}: the id is never echoed");
    }
    // Bob's cancel did nothing; Alice still sees her live task.
    let g = as_user(&h, "alice-token", &treq(2, "tasks/get", json!({ "taskId": id }))).await.assert_ok(&json!(2));
    assert_eq!(g["status"], "working");
    // A listen ack drops foreign and unknown ids alike.
    let body = treq(3, "subscriptions/listen", json!({ "notifications": { "taskIds": [id, missing] } }));
    let resp = h.post_with(&body, |hd| set(hd, "authorization", "Bearer bob-token")).send().await.unwrap();
    let mut s = SseStream::new(resp);
    let ack = s.next().await.unwrap();
    assert_eq!(ack["params"]["notifications"]["taskIds"], json!([]));
}

#[tokio::test]
async fn unauthenticated_tasks_are_reachable_only_without_authentication() {
    let tasks = Tasks::new(TasksConfig::enabled()).unwrap();
    let server = Server::builder("anon", "1")
        .extension(tasks.clone())
        .tool(Tool::new("job", "a task").handle(|_c, _a| async { Ok(TaskSpec::new()) }))
        .build()
        .unwrap();
    let open = start(server.clone()).await;
    let c = open.send(&treq(1, "tools/call", json!({ "name": "job" }))).await.assert_ok(&json!(1));
    let id = c["taskId"].as_str().unwrap().to_owned();
    assert_eq!(tasks.status(&id).await.unwrap().owner, None);
    open.send(&treq(2, "tasks/get", json!({ "taskId": id }))).await.assert_ok(&json!(2));
    // The same server behind authentication: an authenticated principal can't reach it.
    let authed =
        start_with(server, HttpConfig::default().auth(BearerTokens::new().token("t", Principal::new("carol")))).await;
    let r = as_user(&authed, "t", &treq(3, "tasks/get", json!({ "taskId": id }))).await;
    r.assert_error(200, -32602, &json!(3));
}
