//! Whose a legacy (2025-11-25) task is, over a real socket (issue 20,
//! finding 8): without authentication a task belongs to the session that
//! created it, so another session neither lists nor reads, waits on or
//! cancels it; with authentication, to the principal, across its sessions.

use crate::common;
use crate::legacy_common;

use common::{start, start_with};
use conduit_mcp::auth::{BearerTokens, Principal};
use conduit_mcp::ext::tasks::legacy_store::LegacyTasks;
use conduit_mcp::ext::tasks::{Tasks, TasksConfig};
use conduit_mcp::prelude::*;
use legacy_common::*;
use serde_json::{Value, json};

fn server() -> Server {
    let legacy = LegacyTasks::new(TasksConfig::enabled()).expect("valid config");
    let tasks = Tasks::new(TasksConfig::enabled()).expect("valid config");
    tasks.drive_legacy(&legacy);
    Server::builder("owners", "1.0.0")
        .extension(tasks)
        .tool(Tool::new("build", "Builds a ref").task_support(TaskSupport::Optional).handle(|_c, args| async move {
            let r = args["ref"].as_str().unwrap_or("main").to_owned();
            Ok(ToolOutput::Task(TaskSpec::new().spawn(move |_t| async move { Ok(CallToolResult::text(r)) })))
        }))
        .tool(
            Tool::new("wait", "A task that waits")
                .task_support(TaskSupport::Optional)
                .handle(|_c, _a| async { Ok(ToolOutput::Task(TaskSpec::new().spawn(|_t| std::future::pending()))) }),
        )
        .build()
        .expect("valid server")
}

fn task_id(created: &Value) -> String {
    created["task"]["taskId"].as_str().expect("a task id").to_owned()
}

/// Asserts that `c` can see nothing of task `id`: not listed, and `-32602` for every by-id method.
async fn sees_nothing_of(c: &Legacy, id: &str) {
    let listed = c.result(100, "tasks/list", json!({})).await;
    assert_eq!(listed["tasks"], json!([]), "listed to another session: {listed}");
    for (n, m) in ["tasks/get", "tasks/result", "tasks/cancel"].into_iter().enumerate() {
        let e = c.error(101 + n as u64, m, json!({ "taskId": id })).await;
        assert_eq!(e["code"], -32602, "{m}: {e}");
    }
}

#[tokio::test]
async fn without_authentication_a_task_is_its_sessions() {
    let h = start(server()).await;
    let mut alice = Legacy::new(&h.url);
    alice.initialize(json!({})).await;
    let secret = task_id(
        &alice
            .result(1, "tools/call", json!({ "name": "build", "arguments": { "ref": "alice-secret" }, "task": {} }))
            .await,
    );
    let waiting = task_id(&alice.result(2, "tools/call", json!({ "name": "wait", "task": {} })).await);
    let mut bob = Legacy::new(&h.url);
    bob.initialize(json!({})).await;
    sees_nothing_of(&bob, &secret).await;
    sees_nothing_of(&bob, &waiting).await;
    // Alice's session still has both, and reads the result; bob's cancel changed nothing.
    let listed = alice.result(3, "tasks/list", json!({})).await;
    let ids: Vec<&str> =
        listed["tasks"].as_array().expect("tasks").iter().filter_map(|t| t["taskId"].as_str()).collect();
    assert_eq!(ids.len(), 2, "{listed}");
    assert!(ids.contains(&secret.as_str()) && ids.contains(&waiting.as_str()));
    assert_eq!(
        alice.result(4, "tasks/result", json!({ "taskId": secret })).await["content"][0]["text"],
        "alice-secret"
    );
    assert_eq!(alice.result(5, "tasks/get", json!({ "taskId": waiting })).await["status"], "working");
    assert_eq!(alice.result(6, "tasks/cancel", json!({ "taskId": waiting })).await["status"], "cancelled");
}

#[tokio::test]
async fn with_authentication_a_task_is_its_principals_in_every_session() {
    let tokens = BearerTokens::new().token("alice", Principal::new("alice")).token("bob", Principal::new("bob"));
    let h = start_with(server(), HttpConfig::default().auth(tokens)).await;
    let mut first = Legacy::new(&h.url).with_token("alice");
    first.initialize(json!({})).await;
    let id = task_id(&first.result(1, "tools/call", json!({ "name": "wait", "task": {} })).await);
    let mut second = Legacy::new(&h.url).with_token("alice");
    second.initialize(json!({})).await;
    assert_eq!(second.result(2, "tasks/get", json!({ "taskId": id })).await["status"], "working");
    let mut bob = Legacy::new(&h.url).with_token("bob");
    bob.initialize(json!({})).await;
    sees_nothing_of(&bob, &id).await;
}
