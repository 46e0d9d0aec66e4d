//! Request-scoped notifications over a real socket: progress and log messages
//! streamed as SSE before the result, only when asked for.

use crate::common;
use crate::features_server;

use common::*;
use features_server::server;
use serde_json::json;

#[tokio::test]
async fn progress_streams_over_sse_before_the_result() {
    let h = start(server()).await;
    let body = req(
        "p1",
        "tools/call",
        json!({ "name": "progress", "arguments": { "steps": 3 }, "_meta": { PV: V, CC: {}, "progressToken": "tok-1" } }),
    );
    let r = h.send(&body).await;
    assert_eq!(r.status.as_u16(), 200);
    assert_eq!(r.content_type(), "text/event-stream");
    assert_eq!(r.headers.get("x-accel-buffering").and_then(|v| v.to_str().ok()), Some("no"));
    let msgs = r.messages();
    assert_eq!(msgs.len(), 4, "three progress notifications, then the response: {msgs:?}");
    for (i, m) in msgs[..3].iter().enumerate() {
        assert_eq!(m["method"], "notifications/progress");
        assert!(m.get("id").is_none(), "a notification has no id");
        assert_eq!(m["params"]["progressToken"], "tok-1");
        assert_eq!(m["params"]["progress"].as_f64(), Some((i + 1) as f64));
        assert_eq!(m["params"]["total"].as_f64(), Some(3.0));
    }
    assert_eq!(msgs[3]["id"], "p1");
    assert_eq!(first_text(&msgs[3]["result"]), "done");

    // An integer token keeps its type.
    let body = req(
        2,
        "tools/call",
        json!({ "name": "progress", "arguments": { "steps": 1 }, "_meta": { PV: V, CC: {}, "progressToken": 99 } }),
    );
    let msgs = h.send(&body).await.messages();
    assert_eq!(msgs[0]["params"]["progressToken"], 99);

    // No token, no notifications: plain JSON.
    let r = h.send(&call(3, "progress", json!({ "steps": 3 }))).await;
    assert_eq!(r.content_type(), "application/json");
    assert_eq!(first_text(&r.assert_ok(&json!(3))), "done");
}

#[tokio::test]
async fn log_messages_only_when_a_log_level_is_set() {
    let h = start(server()).await;
    let chatty = |id: i64, level: Option<&str>| {
        let mut m = meta();
        if let Some(l) = level {
            m["io.modelcontextprotocol/logLevel"] = json!(l);
        }
        req(id, "tools/call", json!({ "name": "chatty", "_meta": m }))
    };

    let r = h.send(&chatty(1, None)).await;
    assert_eq!(r.content_type(), "application/json");
    assert_eq!(first_text(&r.assert_ok(&json!(1))), "false");

    let r = h.send(&chatty(2, Some("debug"))).await;
    assert_eq!(r.content_type(), "text/event-stream");
    let msgs = r.messages();
    assert_eq!(msgs.len(), 2, "{msgs:?}");
    assert_eq!(msgs[0]["method"], "notifications/message");
    assert_eq!(msgs[0]["params"], json!({ "level": "info", "data": "hello from chatty" }));
    assert_eq!(first_text(&msgs[1]["result"]), "true");

    // Below the requested level: nothing sent.
    let r = h.send(&chatty(3, Some("error"))).await;
    assert_eq!(r.content_type(), "application/json");
    assert_eq!(first_text(&r.assert_ok(&json!(3))), "false");
}
