//! The client over Streamable HTTP against our own server on a real socket:
//! the era probe, tools/list, inline results, tool errors, the routing
//! headers (a wrong or missing one is a -32020 from the server), MRTR rounds.

use crate::client_support;
use crate::common;

use client_support::*;
use common::{guard, start};
use conduit_mcp::client::{CallOutcome, ClientBuilder, ClientError, ToolOutcome};
use conduit_mcp::protocol::Era;
use conduit_mcp::protocol::content::Content;
use serde_json::json;

fn text(outcome: &CallOutcome) -> String {
    match outcome {
        CallOutcome::Complete(r) => match r.content.first() {
            Some(Content::Text { text, .. }) => text.clone(),
            other => panic!("no text: {other:?}"),
        },
        CallOutcome::Task(_) => panic!("expected a complete result"),
        _ => panic!("unknown outcome"),
    }
}

#[tokio::test]
async fn auto_era_discovers_a_modern_server_and_lists_its_tools() {
    let tasks = tasks();
    let h = start(server(&tasks)).await;
    let c = guard("connect", client(&h.url, Recorder::new("ada")).connect()).await.expect("connect");
    assert_eq!(c.server().era, Some(Era::Modern));
    assert_eq!(c.server().version, "2026-07-28");
    assert!(c.server().offers_tasks());
    let tools = guard("tools/list", c.list_tools()).await.expect("tools");
    let names: Vec<_> = tools.iter().map(|t| t.name.as_str()).collect();
    for n in ["echo", "region", "login", "job"] {
        assert!(names.contains(&n), "{n} missing from {names:?}");
    }
}

#[tokio::test]
async fn inline_result_and_tool_error_are_values() {
    let tasks = tasks();
    let h = start(server(&tasks)).await;
    let c = client(&h.url, Recorder::new("ada")).connect().await.unwrap();
    let out = guard("echo", c.call_tool("echo", json!({ "text": "héllo wörld" }))).await.unwrap();
    assert_eq!(text(&out), "héllo wörld");
    match guard("refuse", c.call_tool_to_end("refuse", json!({}))).await.unwrap() {
        ToolOutcome::Completed(r) => assert_eq!(r.is_error, Some(true)),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn param_headers_come_from_the_input_schema() {
    let tasks = tasks();
    let h = start(server(&tasks)).await;
    let c = client(&h.url, Recorder::new("ada")).connect().await.unwrap();
    // The server answers -32020 when Mcp-Param-Region / Mcp-Param-N is missing
    // or differs, so a result proves the headers (plain and Base64-wrapped).
    let out = guard("region", c.call_tool("region", json!({ "region": " us west ", "n": 3 }))).await.unwrap();
    assert_eq!(text(&out), " us west  x3");
    let out = guard("region", c.call_tool("region", json!({ "region": "東京" }))).await.unwrap();
    assert_eq!(text(&out), "東京 xnull");
}

#[tokio::test]
async fn mrtr_rounds_are_answered_with_state_echoed() {
    let tasks = tasks();
    let h = start(server(&tasks)).await;
    let rec = Recorder::new("ada");
    let c = client(&h.url, rec.clone()).connect().await.unwrap();
    let out = guard("login", c.call_tool("login", json!({}))).await.unwrap();
    assert_eq!(text(&out), "ada then ada");
    assert_eq!(rec.asked(), vec!["first", "second"], "each key asked once");
}

#[tokio::test]
async fn a_server_error_is_an_rpc_error() {
    let tasks = tasks();
    let h = start(server(&tasks)).await;
    let c = client(&h.url, Recorder::new("ada")).connect().await.unwrap();
    match guard("unknown", c.call_tool("no_such_tool", json!({}))).await {
        Err(ClientError::Rpc(e)) => assert_eq!(e.code, -32602),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn no_server_is_a_transport_error() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", l.local_addr().unwrap());
    drop(l);
    match guard("connect", ClientBuilder::http(url).connect()).await {
        Err(ClientError::Transport(e)) => {
            assert!(e.to_string().contains("cannot connect"), "{e}");
            // The I/O error underneath is kept, not flattened into the message alone.
            let source = std::error::Error::source(&e).expect("the reqwest error as the source");
            assert!(source.is::<reqwest::Error>(), "{source:?}");
        }
        other => panic!("{other:?}"),
    }
}

/// The legacy era's "SSE polling" against our own server: the tool closes
/// its stream before answering, and the client resumes it with
/// `Last-Event-ID` (after the server's `retry`) for the answer (issue 34).
#[tokio::test]
async fn a_legacy_stream_closed_before_the_answer_is_resumed() {
    use conduit_mcp::prelude::*;
    let server = Server::builder("reconnect", "1.0.0")
        .tool(Tool::new("reconnect", "Closes its stream, then answers").handle(|ctx, _args| async move {
            assert!(ctx.close_stream(), "a legacy HTTP request can close its stream");
            Ok(CallToolResult::text("after the reconnection"))
        }))
        .build()
        .unwrap();
    let h = start(server).await;
    let c = guard("connect", ClientBuilder::http(&h.url).era(Era::Legacy).connect()).await.expect("connect");
    assert_eq!(c.server().era, Some(Era::Legacy));
    let out = guard("reconnect", c.call_tool("reconnect", json!({}))).await.expect("the resumed answer");
    assert_eq!(text(&out), "after the reconnection");
}
