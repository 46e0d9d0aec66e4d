//! What one client can make a node hold through its legacy sessions (issue 20):
//! what a session keeps of `initialize`, evicted sessions leaving the node,
//! and the per-client cap. Over a real socket.

mod common;
mod legacy_common;

use common::start;
use conduit_mcp::bounds::{MAX_CLIENT_INFO_BYTES, json_len};
use conduit_mcp::clock::{Clock, SystemClock};
use conduit_mcp::prelude::*;
use conduit_mcp::session::{MemorySessionStore, SessionConfig, SessionStore};
use legacy_common::*;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::sync::Arc;

fn ask_tool() -> Tool {
    Tool::new("ask", "Asks the user's name").handle(|ctx, _args| async move {
        if let Some(a) = ctx.input_response("name") {
            let name = a["content"]["name"].as_str().unwrap_or("?");
            return Ok(CallToolResult::text(format!("Hello, {name}!")).into());
        }
        let schema = json!({ "type": "object", "properties": { "name": { "type": "string" } } });
        Ok(ToolOutput::from(InputRequired::new().request("name", mrtr::elicit("Your name?", schema))))
    })
}

/// Finding 1: 3 MiB of padding in `capabilities` and `clientInfo` is not kept; the
/// declarations the server reads still work.
#[tokio::test]
async fn a_session_keeps_only_what_the_server_reads_of_a_padded_initialize() {
    let store = Arc::new(MemorySessionStore::new());
    let mut sessions = SessionConfig::default();
    sessions.store = store.clone();
    let server = Server::builder("bounds", "1").tool(ask_tool()).sessions(sessions).build().expect("server");
    let h = start(server).await;
    let pad = "x".repeat(3 * 1024 * 1024 / 2);
    let init = rpc(
        0,
        "initialize",
        json!({ "protocolVersion": LV,
            "capabilities": { "elicitation": {}, "experimental": { "pad": pad } },
            "clientInfo": { "name": "padded", "version": "1.0.0", "pad": pad } }),
    );
    let mut c = Legacy::new(&h.url);
    let r = c.post(&init).await;
    assert_eq!(r.status(), StatusCode::OK);
    let sid = r.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).expect("a session").to_owned();
    c.session = Some(sid.clone());

    let kept = store.touch(&sid, None, SystemClock.now_ms(), 60_000).await.expect("stored");
    let caps_len = json_len(&Value::Object(kept.client_capabilities.clone()));
    let keys: Vec<&String> = kept.client_capabilities.keys().collect();
    assert!(caps_len < 100, "the stored capabilities hold {caps_len} bytes (keys {keys:?})");
    assert!(kept.client_info.len() <= MAX_CLIENT_INFO_BYTES, "clientInfo kept {} bytes", kept.client_info.len());
    let info: Value = serde_json::from_str(&kept.client_info).expect("JSON text");
    assert_eq!(info["name"], "padded", "the identity is kept");

    // The declaration the server reads survived the cut: the question is asked.
    let mut ev = c.open(1, "tools/call", json!({ "name": "ask" })).await;
    let (_, ask) = ev.next_msg().await.expect("the server's request");
    assert_eq!(ask["method"], "elicitation/create");
    let answer =
        json!({ "jsonrpc": "2.0", "id": ask["id"], "result": { "action": "accept", "content": { "name": "Ada" } } });
    assert_eq!(c.post(&answer).await.status(), StatusCode::ACCEPTED);
    let msgs = ev.until_response(&json!(1)).await;
    assert_eq!(msgs.last().expect("answer")["result"]["content"][0]["text"], "Hello, Ada!");
}
