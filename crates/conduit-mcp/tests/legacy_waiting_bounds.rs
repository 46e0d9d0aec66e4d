//! Requests waiting on the client (issue 20, finding 7): capped per session and
//! per client, and a request whose client left (its stream dropped and not
//! resumed) stops waiting instead of holding its call for the whole input-round
//! timeout. Over a real socket.

mod common;
mod legacy_common;

use common::start_with;
use conduit_mcp::prelude::*;
use conduit_mcp::session::SessionConfig;
use legacy_common::*;
use serde_json::json;
use std::time::Duration;

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

/// Opens a call of `ask` and reads up to the server's question; returns the stream and the question.
async fn asked(c: &Legacy, id: u64) -> (Events, serde_json::Value) {
    let mut ev = c.open(id, "tools/call", json!({ "name": "ask" })).await;
    let (_, q) = ev.next_msg().await.expect("the server's question");
    assert_eq!(q["method"], "elicitation/create");
    (ev, q)
}

/// Waits (within the guard) until the node counts `n` requests waiting on clients.
async fn waiting_settles(server: &Server, n: usize) {
    guard("the waiting requests to settle", async {
        // The server gives up on abandoned requests on its own; nothing here lets time pass.
        while server.session_stats().waiting != n {
            tokio::task::yield_now().await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_requests_are_capped_and_abandoned_ones_give_up() {
    let sessions = SessionConfig::default().max_waiting(2, 3).abandon_after(Duration::from_millis(100));
    let server = Server::builder("waits", "1").tool(ask_tool()).sessions(sessions).build().expect("server");
    let h = start_with(server, HttpConfig::default().keep_alive(Duration::from_millis(20))).await;
    let mut a = Legacy::new(&h.url);
    a.initialize(json!({ "elicitation": {} })).await;
    let (e1, _) = asked(&a, 1).await;
    let (e2, _) = asked(&a, 2).await;
    let e = a.error(3, "tools/call", json!({ "name": "ask" })).await;
    assert_eq!(e["code"], -32000, "{e}");
    assert!(e["message"].as_str().unwrap_or_default().contains("of this session"), "{e}");
    // Another session of the same client: one more fits the client's cap of three.
    let mut b = Legacy::new(&h.url);
    b.initialize(json!({ "elicitation": {} })).await;
    let (mut e3, q3) = asked(&b, 4).await;
    let e = b.error(5, "tools/call", json!({ "name": "ask" })).await;
    assert!(e["message"].as_str().unwrap_or_default().contains("of this client"), "{e}");
    assert_eq!(h.server.session_stats().waiting, 3);
    // The first client leaves both calls without answering: they stop waiting.
    drop((e1, e2));
    waiting_settles(&h.server, 1).await;
    // The one still connected is unaffected, and its answer completes the call.
    let answer =
        json!({ "jsonrpc": "2.0", "id": q3["id"], "result": { "action": "accept", "content": { "name": "Ada" } } });
    assert_eq!(b.post(&answer).await.status(), reqwest::StatusCode::ACCEPTED);
    let msgs = e3.until_response(&json!(4)).await;
    assert_eq!(msgs.last().expect("answer")["result"]["content"][0]["text"], "Hello, Ada!");
    waiting_settles(&h.server, 0).await;
    // Room again in the first session.
    let (_e4, _) = asked(&a, 6).await;
}
