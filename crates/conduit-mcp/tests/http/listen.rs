//! `subscriptions/listen` over a real socket: the acknowledgment, filters,
//! deliveries, independent streams, and the closing result at shutdown.

use crate::common;
use crate::features_server;

use common::*;
use features_server::server;
use serde_json::{Value, json};

fn listen(id: impl Into<Value>, filter: Value) -> Value {
    req(id, "subscriptions/listen", json!({ "notifications": filter }))
}

#[tokio::test]
async fn listen_acknowledges_filters_delivers_and_closes_on_shutdown() {
    let h = start(server()).await;
    let mut s =
        h.open(&listen(7, json!({ "toolsListChanged": true, "promptsListChanged": false, "bogusFilter": true }))).await;
    assert_eq!(s.status.as_u16(), 200);
    assert_eq!(s.headers.get("content-type").and_then(|v| v.to_str().ok()), Some("text/event-stream"));

    let ack = s.next().await.expect("the acknowledgment");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(ack["params"]["_meta"][SUB_ID], json!(7), "an integer id stays an integer");
    assert_eq!(
        ack["params"]["notifications"],
        json!({ "toolsListChanged": true }),
        "unknown and false fields are left out"
    );
    assert_eq!(h.server.open_subscriptions(), 1);

    // Not asked for: not delivered. Asked for: delivered, tagged.
    assert_eq!(h.server.notify_prompts_list_changed(), 0);
    assert_eq!(h.server.notify_resources_list_changed(), 0);
    assert_eq!(h.server.notify_tools_list_changed(), 1);
    let n = s.next().await.expect("tools list_changed");
    assert_eq!(n["method"], "notifications/tools/list_changed", "the first delivery is the one asked for: {n}");
    assert_eq!(n["params"]["_meta"][SUB_ID], json!(7));

    // Shutdown ends the stream with a successful response, then closes it.
    h.server.shutdown().await;
    let end = s.next().await.expect("the closing result");
    assert_eq!(end["id"], 7);
    assert_eq!(end["result"]["resultType"], "complete");
    assert_eq!(end["result"]["_meta"][SUB_ID], json!(7));
    assert!(s.next().await.is_none(), "the stream ends after the result");
}

#[tokio::test]
async fn several_listen_streams_are_independent() {
    let h = start(server()).await;
    let mut tools = h.open(&listen("listen-a", json!({ "toolsListChanged": true }))).await;
    let mut res = h
        .open(&listen("listen-b", json!({ "promptsListChanged": true, "resourceSubscriptions": ["test://static"] })))
        .await;
    let a = tools.next().await.expect("ack a");
    assert_eq!(a["params"]["_meta"][SUB_ID], "listen-a", "a string id stays a string");
    let b = res.next().await.expect("ack b");
    assert_eq!(b["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(b["params"]["_meta"][SUB_ID], "listen-b");
    assert_eq!(
        b["params"]["notifications"],
        json!({ "promptsListChanged": true, "resourceSubscriptions": ["test://static"] })
    );

    assert_eq!(h.server.notify_tools_list_changed(), 1);
    assert_eq!(h.server.notify_resource_updated("test://other"), 0);
    assert_eq!(h.server.notify_resource_updated("test://static"), 1);
    assert_eq!(h.server.notify_prompts_list_changed(), 1);

    let n = tools.next().await.expect("a delivery");
    assert_eq!(
        (n["method"].as_str(), &n["params"]["_meta"][SUB_ID]),
        (Some("notifications/tools/list_changed"), &json!("listen-a"))
    );
    let n = res.next().await.expect("a delivery");
    assert_eq!(n["method"], "notifications/resources/updated", "{n}");
    assert_eq!(n["params"]["uri"], "test://static");
    assert_eq!(n["params"]["_meta"][SUB_ID], "listen-b");
    let n = res.next().await.expect("a delivery");
    assert_eq!(n["method"], "notifications/prompts/list_changed", "{n}");

    h.server.shutdown().await;
    assert_eq!(tools.next().await.expect("closing result")["id"], "listen-a");
    assert_eq!(res.next().await.expect("closing result")["id"], "listen-b");
    assert!(tools.next().await.is_none() && res.next().await.is_none());
}
