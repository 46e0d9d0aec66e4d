//! The demo's `complete_job` keeps the product's rules: a principal completes
//! only its own queued jobs, and another's task reads exactly like a missing
//! one (before, bob could complete alice's task, and the messages told
//! whether an id existed).

use crate::common;

use common::*;
use conduit_mcp::protocol::tools::CallToolResult;
use serde_json::json;

async fn complete_job(node: &Node, token: &str, id: &str) -> CallToolResult {
    call(node, Some(token), "complete_job", json!({ "taskId": id, "text": "out" })).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn complete_job_is_owner_scoped() {
    let node = Node::start(&["--token", "alice-token=alice", "--token", "bob-token=bob"]).await;
    let job = create(&node, Some("alice-token"), "job", json!({ "name": "report" })).await;
    let sleeper = create(&node, Some("alice-token"), "sleep", json!({ "seconds": 3600 })).await;

    let foreign = complete_job(&node, "bob-token", &job).await;
    let missing = complete_job(&node, "bob-token", &"x".repeat(43)).await;
    assert_eq!(foreign.is_error, Some(true), "{foreign:?}");
    assert_eq!(foreign, missing, "another's task reads like a missing one");
    // Not a job: the same answer, even for its owner.
    let not_a_job = complete_job(&node, "alice-token", &sleeper).await;
    assert_eq!(not_a_job.content, missing.content, "{not_a_job:?}");
    let g = get(&node, Some("alice-token"), &job).await;
    assert_eq!(g["status"], "working", "bob did not complete it: {g}");

    let mine = complete_job(&node, "alice-token", &job).await;
    assert_eq!(first_text(&mine), "completed", "{mine:?}");
    let g = get(&node, Some("alice-token"), &job).await;
    assert_eq!(g["status"], "completed");
    assert_eq!(g["result"]["content"][0]["text"], "out");
    let again = complete_job(&node, "alice-token", &job).await;
    assert_eq!(again.is_error, Some(true), "{again:?}");
}

/// `build` repeats its `ref` in every step and in its answer, which a task keeps as its
/// result and a legacy session keeps for replay: a 3 MiB ref is repeated as a bounded
/// label (issue 20, finding 4).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn build_repeats_a_bounded_label_of_its_ref() {
    let node = Node::start(&[]).await;
    let reference = "r".repeat(3 * 1024 * 1024);
    let client = node.client(None).await;
    let task = match client.call_tool("build", json!({ "ref": reference, "steps": 1 })).await {
        Ok(conduit_mcp::client::CallOutcome::Task(t)) => t,
        other => panic!("build: no task: {other:?}"),
    };
    let text = match task.wait().await.expect("the task ends") {
        conduit_mcp::client::ToolOutcome::Completed(r) => first_text(&r),
        other => panic!("build did not complete: {other:?}"),
    };
    assert!(text.starts_with("built rrr") && text.len() < 1024, "an answer of {} bytes", text.len());
    let g = get(&node, None, task.id()).await;
    assert!(g.to_string().len() < 4096, "the stored task holds {} bytes", g.to_string().len());
}
