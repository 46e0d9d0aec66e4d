//! `Mcp-Name` on `tasks/*` (issue 20, the interop decision), over a real socket:
//! a client that sends none (fastmcp-tasks) is served, because the body's
//! `taskId` names the task; a header that names another task is refused as
//! before; `HttpConfig::require_task_name` makes the header required again.

use crate::common;

use common::*;
use conduit_mcp::ext::tasks::{Tasks, TasksConfig};
use conduit_mcp::prelude::*;
use serde_json::{Value, json};

const TASKS: &str = "io.modelcontextprotocol/tasks";

fn treq(id: i64, method: &str, params: Value) -> Value {
    let mut p = params;
    p["_meta"] = meta_with(json!({ "extensions": { TASKS: {} } }));
    req(id, method, p)
}

async fn harness(config: HttpConfig) -> Harness {
    let tasks = Tasks::new(TasksConfig::enabled()).expect("tasks");
    let server = Server::builder("names", "1")
        .extension(tasks)
        .tool(Tool::new("job", "a task").handle(|_c, _a| async { Ok(TaskSpec::new()) }))
        .build()
        .expect("server");
    start_with(server, config).await
}

async fn new_task(h: &Harness) -> String {
    let created = h.send(&treq(1, "tools/call", json!({ "name": "job" }))).await.assert_ok(&json!(1));
    created["taskId"].as_str().expect("a task id").to_owned()
}

fn without_name(hd: &mut reqwest::header::HeaderMap) {
    hd.remove("mcp-name");
}

/// The three task methods on one task; `tasks/cancel` last, as it ends the task.
fn task_requests(id: &str) -> Vec<Value> {
    vec![
        treq(2, "tasks/get", json!({ "taskId": id })),
        treq(3, "tasks/update", json!({ "taskId": id, "inputResponses": {} })),
        treq(4, "tasks/cancel", json!({ "taskId": id })),
    ]
}

#[tokio::test]
async fn task_methods_without_mcp_name_are_served_by_default() {
    let h = harness(HttpConfig::default()).await;
    let id = new_task(&h).await;
    for body in task_requests(&id) {
        let r = h.send_with(&body, without_name).await;
        let result = r.assert_ok(&body["id"]);
        if body["method"] == "tasks/get" {
            assert_eq!(result["taskId"], id.as_str(), "{result}");
        }
    }
    let after = h.send_with(&treq(5, "tasks/get", json!({ "taskId": id })), without_name).await.assert_ok(&json!(5));
    assert_eq!(after["status"], "cancelled", "the header-less cancel acted on the task: {after}");
}

#[tokio::test]
async fn a_mcp_name_naming_another_task_is_still_refused() {
    let h = harness(HttpConfig::default()).await;
    let (id, other) = (new_task(&h).await, new_task(&h).await);
    for body in task_requests(&id) {
        let r = h.send_with(&body, |hd| set(hd, "mcp-name", &other)).await;
        r.assert_error(400, -32020, &body["id"]);
        assert!(!r.text.contains(&id) && !r.text.contains(&other), "no task id is echoed: {}", r.text);
    }
    let still = h.send(&treq(5, "tasks/get", json!({ "taskId": id }))).await.assert_ok(&json!(5));
    assert_eq!(still["status"], "working", "the refused cancel did nothing: {still}");
}

#[tokio::test]
async fn other_named_methods_still_need_mcp_name() {
    let h = harness(HttpConfig::default()).await;
    let body = treq(6, "tools/call", json!({ "name": "job" }));
    h.send_with(&body, without_name).await.assert_error(400, -32020, &json!(6));
}

#[tokio::test]
async fn require_task_name_refuses_a_missing_header() {
    let h = harness(HttpConfig::default().require_task_name(true)).await;
    let id = new_task(&h).await;
    for body in task_requests(&id) {
        let r = h.send_with(&body, without_name).await;
        r.assert_error(400, -32020, &body["id"]);
        assert!(r.text.contains("missing Mcp-Name"), "{}", r.text);
    }
    // With the header, all is as before.
    h.send(&treq(7, "tasks/get", json!({ "taskId": id }))).await.assert_ok(&json!(7));
}
