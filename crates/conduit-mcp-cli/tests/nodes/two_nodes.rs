//! Three server processes on one PostgreSQL: a task created on node A is at
//! once readable on node B, completed by a worker on node C, and its
//! notification reaches a listen stream held by node B. Foreign principals
//! are refused on every node.

use crate::common;

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
    assert_eq!(g["status"], "working", "{g}");
    assert_eq!(g["statusMessage"], "Queued: report");
    // Foreign principals: refused on every node, exactly like a missing task.
    for n in [&a, &b, &c] {
        let foreign = get_refused(n, bob, &id).await;
        let missing = get_refused(n, bob, &"x".repeat(43)).await;
        assert_eq!(foreign.code, -32602);
        assert_eq!(foreign, missing);
    }
    let mut bob_stream = Events::listen(&b, bob, std::slice::from_ref(&id)).await;
    assert_eq!(bob_stream.ack(Duration::from_secs(10)).await, Vec::<String>::new());

    let mut stream = Events::listen(&b, alice, std::slice::from_ref(&id)).await;
    assert_eq!(stream.ack(Duration::from_secs(10)).await, std::slice::from_ref(&id));

    // A worker on node C completes it.
    let done = call(&c, alice, "complete_job", json!({ "taskId": id, "text": "42 rows" })).await;
    assert_eq!(first_text(&done), "completed", "{done:?}");

    let (method, n) = stream.notification(Duration::from_secs(10)).await;
    assert_eq!(method, "notifications/tasks");
    assert_eq!(n["_meta"]["io.modelcontextprotocol/subscriptionId"], stream.subscription_id());
    assert_eq!(n["status"], "completed");
    assert_eq!(n["result"]["content"][0]["text"], "42 rows");
    let g = get(&b, alice, &id).await;
    let mut expected = g.as_object().unwrap().clone();
    expected.remove("resultType");
    expected.remove("_meta");
    let mut got = n.as_object().unwrap().clone();
    got.remove("_meta");
    assert_eq!(got, expected, "the notification equals tasks/get on node B");
    drop((a, b, c));
    schema.drop_now().await;
}
