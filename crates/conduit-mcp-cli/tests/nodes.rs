//! Three server processes on one PostgreSQL: a task created on node A is at
//! once readable on node B, completed by a worker on node C, and its
//! notification reaches a listen stream held by node B. Foreign principals
//! are refused on every node.

mod common;

use common::*;
use serde_json::json;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_share_tasks_and_notifications() {
    let Some(url) = database_url() else { return };
    let schema = Schema::new(&url);
    let store = format!("postgres:{url}");
    let node = |id: &'static str| {
        let (store, schema) = (store.clone(), schema.name.clone());
        async move {
            Node::start(&[
                "--store",
                &store,
                "--pg-schema",
                &schema,
                "--node-id",
                id,
                "--token",
                "alice-token=alice",
                "--token",
                "bob-token=bob",
            ])
            .await
        }
    };
    let (a, b, c) = (node("a").await, node("b").await, node("c").await);
    let alice = Some("alice-token");
    let bob = Some("bob-token");

    let id = create(&a, alice, "job", json!({ "name": "report" })).await;
    // At once on node B.
    let g = get(&b, alice, &id).await;
    assert_eq!(g["result"]["status"], "working", "{g}");
    assert_eq!(g["result"]["statusMessage"], "Queued: report");
    // Foreign principals: refused on every node, exactly like a missing task.
    for n in [&a, &b, &c] {
        let foreign = get(n, bob, &id).await;
        let missing = get(n, bob, &"x".repeat(43)).await;
        assert_eq!(foreign["error"]["code"], -32602);
        assert_eq!(foreign, missing);
    }
    let mut bob_stream = Events::listen(&b, bob, "bob-listen", std::slice::from_ref(&id)).await;
    let ack = bob_stream.next(Duration::from_secs(10)).await;
    assert_eq!(ack["params"]["notifications"]["taskIds"], json!([]));

    let mut stream = Events::listen(&b, alice, "alice-listen", std::slice::from_ref(&id)).await;
    let ack = stream.next(Duration::from_secs(10)).await;
    assert_eq!(ack["params"]["notifications"]["taskIds"], json!([id]));

    // A worker on node C completes it.
    let done = c
        .send(
            alice,
            &treq(3, "tools/call", json!({ "name": "complete_job", "arguments": { "taskId": id, "text": "42 rows" } })),
        )
        .await;
    assert_eq!(done["result"]["content"][0]["text"], "completed", "{done}");

    let n = stream.next(Duration::from_secs(10)).await;
    assert_eq!(n["method"], "notifications/tasks");
    assert_eq!(n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "alice-listen");
    assert_eq!(n["params"]["status"], "completed");
    assert_eq!(n["params"]["result"]["content"][0]["text"], "42 rows");
    let g = get(&b, alice, &id).await;
    let mut expected = g["result"].as_object().unwrap().clone();
    expected.remove("resultType");
    expected.remove("_meta");
    let mut got = n["params"].as_object().unwrap().clone();
    got.remove("_meta");
    assert_eq!(got, expected, "the notification equals tasks/get on node B");
    drop((a, b, c));
    schema.drop_now().await;
}
