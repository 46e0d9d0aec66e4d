//! Requests waiting on the client (issue 20, finding 7): capped per session and
//! per client, and a request whose client left (its stream dropped and not
//! resumed) stops waiting instead of holding its call for the whole input-round
//! timeout. Over a real socket.

use crate::common;
use crate::legacy_common;

use common::start_with;
use conduit_mcp::config_file::ConfigFile;
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

/// `ask` with `pad` bytes of `_meta`: what the waiting call keeps to resume.
fn padded_ask(pad: usize) -> serde_json::Value {
    json!({ "name": "ask", "_meta": { "pad": "p".repeat(pad) } })
}

/// Finding 7 in bytes: a waiting request keeps its params and `_meta` to resume, so the
/// bytes kept count against a budget per session and per client, not only the number.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bytes_waiting_requests_keep_are_capped_per_session_and_per_client() {
    let kib = 1024;
    let sessions = SessionConfig::default().max_waiting_bytes(64 * kib, 100 * kib);
    let server = Server::builder("waits", "1").tool(ask_tool()).sessions(sessions).build().expect("server");
    let h = start_with(server, HttpConfig::default()).await;
    let mut a = Legacy::new(&h.url);
    a.initialize(json!({ "elicitation": {} })).await;
    let mut e1 = a.open(1, "tools/call", padded_ask(40 * kib)).await;
    assert_eq!(e1.next_msg().await.expect("the question").1["method"], "elicitation/create");
    let held = h.server.session_stats().waiting_bytes;
    assert!((40 * kib..44 * kib).contains(&held), "the call keeps its request: {held} bytes");
    // A second one in the session would keep 80 KiB: past the session's 64.
    let e = a.error(2, "tools/call", padded_ask(40 * kib)).await;
    assert_eq!(e["code"], -32000, "{e}");
    assert!(e["message"].as_str().unwrap_or_default().contains("of this session waiting"), "{e}");
    // Small ones still fit beside it.
    let (_e3, _) = asked(&a, 3).await;
    // Another session of the same client: 40 more fit (about 80 of its 100 KiB), then not.
    let mut b = Legacy::new(&h.url);
    b.initialize(json!({ "elicitation": {} })).await;
    let mut e4 = b.open(4, "tools/call", padded_ask(40 * kib)).await;
    assert_eq!(e4.next_msg().await.expect("the question").1["method"], "elicitation/create");
    let mut c = Legacy::new(&h.url);
    c.initialize(json!({ "elicitation": {} })).await;
    let e = c.error(5, "tools/call", padded_ask(40 * kib)).await;
    assert!(e["message"].as_str().unwrap_or_default().contains("of this client waiting"), "{e}");
    // Leaving gives the bytes back.
    drop((e1, e4));
    a.post(&note("notifications/cancelled", json!({ "requestId": 1 }))).await;
    b.post(&note("notifications/cancelled", json!({ "requestId": 4 }))).await;
    waiting_settles(&h.server, 1).await;
    assert!(h.server.session_stats().waiting_bytes < 4 * kib);
    let mut e6 = c.open(6, "tools/call", padded_ask(40 * kib)).await;
    assert_eq!(e6.next_msg().await.expect("the question").1["method"], "elicitation/create");
}

/// The defaults: one session's waiting requests keep at most 4 MiB (one body at the
/// default body limit), however few they are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_default_a_session_s_waiting_requests_keep_at_most_4_mib() {
    let server = Server::builder("waits", "1").tool(ask_tool()).build().expect("server");
    let h = start_with(server, HttpConfig::default()).await;
    let mut a = Legacy::new(&h.url);
    a.initialize(json!({ "elicitation": {} })).await;
    let pad = 1536 * 1024;
    let mut e1 = a.open(1, "tools/call", padded_ask(pad)).await;
    assert_eq!(e1.next_msg().await.expect("the question").1["method"], "elicitation/create");
    let mut e2 = a.open(2, "tools/call", padded_ask(pad)).await;
    assert_eq!(e2.next_msg().await.expect("the question").1["method"], "elicitation/create");
    let e = a.error(3, "tools/call", padded_ask(pad)).await;
    assert!(e["message"].as_str().unwrap_or_default().contains("keep too many bytes"), "{e}");
    assert_eq!(h.server.session_stats().waiting, 2);
}

/// A waiting call cancelled by the client (`notifications/cancelled`) leaves the session's
/// waiting requests at once: its place is free for the next one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_waiting_call_frees_its_place_in_the_session() {
    let sessions = SessionConfig::default().max_waiting(1, 10);
    let server = Server::builder("waits", "1").tool(ask_tool()).sessions(sessions).build().expect("server");
    let h = start_with(server, HttpConfig::default()).await;
    let mut a = Legacy::new(&h.url);
    a.initialize(json!({ "elicitation": {} })).await;
    let (_e1, _) = asked(&a, 1).await;
    assert_eq!(a.post(&note("notifications/cancelled", json!({ "requestId": 1 }))).await.status(), 202);
    waiting_settles(&h.server, 0).await;
    let (_e2, _) = asked(&a, 2).await;
}

/// Finding 10 of issue 34: requests waiting on clients count against the node's ceiling
/// on what all sessions retain, each with its call's share (64 KiB): past it one more is
/// refused with `-32000`, whoever asks, and an answered one makes room again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_requests_count_against_the_nodes_byte_ceiling() {
    let kib = 1024;
    let doc = format!("[sessions]\nreplay_bytes = {}\nmax_retained_bytes = {}\n", 16 * kib, 4 * 64 * kib + 32 * kib);
    let sessions = ConfigFile::parse(&doc).expect("a valid [sessions] table").sessions;
    let server = Server::builder("waits", "1").tool(ask_tool()).sessions(sessions).build().expect("server");
    let h = start_with(server, HttpConfig::default()).await;
    let mut a = Legacy::new(&h.url);
    a.initialize(json!({ "elicitation": {} })).await;
    let mut waiting = Vec::new();
    for id in 1..=4 {
        waiting.push(asked(&a, id).await);
    }
    let e = a.error(5, "tools/call", json!({ "name": "ask" })).await;
    assert_eq!(e["code"], -32000, "{e}");
    assert!(e["message"].as_str().unwrap_or_default().contains("retain all the bytes"), "{e}");
    assert!(h.server.session_stats().retained_bytes <= 4 * 64 * kib + 32 * kib);
    // One answered: its place in the node's account is free for the next.
    let (mut ev, q) = waiting.remove(0);
    let answer =
        json!({ "jsonrpc": "2.0", "id": q["id"], "result": { "action": "accept", "content": { "name": "Ada" } } });
    assert_eq!(a.post(&answer).await.status(), reqwest::StatusCode::ACCEPTED);
    ev.until_response(&json!(1)).await;
    waiting_settles(&h.server, 3).await;
    let (_again, _) = asked(&a, 6).await;
}
