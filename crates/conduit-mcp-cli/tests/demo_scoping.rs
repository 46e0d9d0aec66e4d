//! The demo's `complete_job` keeps the product's rules: a principal completes
//! only its own queued jobs, and another's task reads exactly like a missing
//! one (before, bob could complete alice's task, and the messages told
//! whether an id existed).

mod common;

use common::*;
use serde_json::json;

async fn complete_job(node: &Node, token: &str, id: &str) -> serde_json::Value {
    let body = treq(9, "tools/call", json!({ "name": "complete_job", "arguments": { "taskId": id, "text": "out" } }));
    node.send(Some(token), &body).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn complete_job_is_owner_scoped() {
    let node = Node::start(&["--token", "alice-token=alice", "--token", "bob-token=bob"]).await;
    let job = create(&node, Some("alice-token"), "job", json!({ "name": "report" })).await;
    let sleeper = create(&node, Some("alice-token"), "sleep", json!({ "seconds": 3600 })).await;

    let foreign = complete_job(&node, "bob-token", &job).await;
    let missing = complete_job(&node, "bob-token", &"x".repeat(43)).await;
    assert_eq!(foreign["result"]["isError"], true, "{foreign}");
    assert_eq!(foreign, missing, "another's task reads like a missing one");
    // Not a job: the same answer, even for its owner.
    let not_a_job = complete_job(&node, "alice-token", &sleeper).await;
    assert_eq!(not_a_job["result"]["content"], missing["result"]["content"], "{not_a_job}");
    let g = get(&node, Some("alice-token"), &job).await;
    assert_eq!(g["result"]["status"], "working", "bob did not complete it: {g}");

    let mine = complete_job(&node, "alice-token", &job).await;
    assert_eq!(mine["result"]["content"][0]["text"], "completed", "{mine}");
    let g = get(&node, Some("alice-token"), &job).await;
    assert_eq!(g["result"]["status"], "completed");
    assert_eq!(g["result"]["result"]["content"][0]["text"], "out");
    let again = complete_job(&node, "alice-token", &job).await;
    assert_eq!(again["result"]["isError"], true, "{again}");
}
