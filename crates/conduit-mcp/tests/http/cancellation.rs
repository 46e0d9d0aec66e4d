//! Cancellation by disconnect over a real socket: a client that drops its
//! request, before the first byte or mid-stream, cancels the tool.

use crate::common;

use common::*;
use conduit_mcp::prelude::*;
use serde_json::json;
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};
use tokio_util::sync::CancellationToken;

/// Reports, when dropped, whether the request's cancellation token had fired.
struct ReportOnDrop {
    token: CancellationToken,
    tx: UnboundedSender<bool>,
}

impl Drop for ReportOnDrop {
    fn drop(&mut self) {
        let _ = self.tx.send(self.token.is_cancelled());
    }
}

#[tokio::test]
async fn a_dropped_client_cancels_the_in_flight_request() {
    let (started_tx, mut started) = unbounded_channel::<()>();
    let (done_tx, mut done) = unbounded_channel::<bool>();
    let hang = Tool::new("hang", "Waits until cancelled").handle(move |ctx, _args| {
        let (started_tx, done_tx) = (started_tx.clone(), done_tx.clone());
        async move {
            let _report = ReportOnDrop { token: ctx.cancellation().clone(), tx: done_tx };
            // With a progress token this opens an SSE stream first.
            ctx.progress(0.0, None, Some("waiting"));
            let _ = started_tx.send(());
            ctx.cancellation().cancelled().await;
            Ok(CallToolResult::text("cancelled"))
        }
    });
    let server = Server::builder("cancel", "1").tool(hang).build().expect("valid server");
    let h = start(server).await;

    // Plain JSON: the client gives up before any byte of the response.
    let pending = tokio::spawn(h.post_with(&call(1, "hang", json!({})), |_| {}).send());
    guard("the tool to start", started.recv()).await.expect("started");
    pending.abort();
    assert!(pending.await.expect_err("aborted").is_cancelled());
    let cancelled = guard("the tool to see the cancellation", done.recv()).await.expect("a report");
    assert!(cancelled, "the tool stopped because its request was cancelled");

    // SSE: the client reads the first event, then drops the stream.
    let body = req(2, "tools/call", json!({ "name": "hang", "_meta": { PV: V, CC: {}, "progressToken": "t" } }));
    let mut s = h.open(&body).await;
    guard("the tool to start", started.recv()).await.expect("started");
    assert_eq!(s.next().await.expect("progress")["method"], "notifications/progress");
    drop(s);
    let cancelled = guard("the tool to see the cancellation", done.recv()).await.expect("a report");
    assert!(cancelled, "the tool stopped because its request was cancelled");

    h.assert_alive().await;
}
