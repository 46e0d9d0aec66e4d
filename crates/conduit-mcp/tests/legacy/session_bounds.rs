//! What one client can make a node hold through its legacy sessions (issue 20):
//! what a session keeps of `initialize`, evicted sessions leaving the node,
//! and the per-client cap. Over a real socket.

use crate::common;
use crate::legacy_common;

use common::{serve_with, start, start_with};
use conduit_mcp::auth::{BearerTokens, Principal};
use conduit_mcp::bounds::{MAX_CLIENT_INFO_BYTES, json_len};
use conduit_mcp::clock::{Clock, ManualClock, SystemClock};
use conduit_mcp::prelude::*;
use conduit_mcp::session::{MemorySessionStore, SessionConfig, SessionStore};
use legacy_common::*;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::net::IpAddr;
use std::sync::Arc;
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

const T0: u64 = 1_800_000_000_000;

fn server_on(clock: &ManualClock, sessions: SessionConfig) -> Server {
    Server::builder("bounds", "1")
        .clock(Arc::new(clock.clone()))
        .tool(ask_tool())
        .tool(Tool::new("chatty", "Logs and reports progress").handle(|ctx, _args| async move {
            for n in 0..8 {
                ctx.progress(f64::from(n), None, Some("working"));
            }
            Ok(CallToolResult::text("done"))
        }))
        .sessions(sessions)
        .build()
        .expect("server")
}

fn init_body() -> Value {
    rpc(
        0,
        "initialize",
        json!({ "protocolVersion": LV, "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }),
    )
}

/// The JSON-RPC error of an `initialize` that opened no session.
async fn refused_initialize(c: &Legacy) -> Value {
    let r = c.post(&init_body()).await;
    assert!(r.headers().get("mcp-session-id").is_none(), "no session was opened");
    let m: Value = r.json().await.expect("JSON");
    assert_message(&m);
    m["error"].clone()
}

/// Finding 2: at the cap, the session `initialize` evicts leaves the node's memory at
/// once (its record, streams and buffers), not 30 minutes later.
#[tokio::test]
async fn an_evicted_session_leaves_the_node_at_once() {
    let clock = ManualClock::new(T0);
    let sessions = SessionConfig::default().max_sessions(2).evict_idle_after(Duration::from_secs(60));
    let mut tokens = BearerTokens::new();
    for p in ["first", "second", "third"] {
        tokens = tokens.token(p, Principal::new(p));
    }
    let h = start_with(server_on(&clock, sessions), HttpConfig::default().auth(tokens)).await;
    let mut first = Legacy::new(&h.url).with_token("first");
    first.initialize(json!({})).await;
    // Something in its replay buffer.
    let (before, _) =
        first.request(1, "tools/call", json!({ "name": "chatty", "_meta": { "progressToken": 1 } })).await;
    assert_eq!(before.len(), 8, "the progress went on the request's stream");
    clock.advance(1_000);
    let mut second = Legacy::new(&h.url).with_token("second");
    second.initialize(json!({})).await;
    assert_eq!(h.server.session_stats().held, 2);
    clock.advance(120_000);
    assert_eq!(second.result(2, "ping", json!({})).await, json!({}));
    let mut third = Legacy::new(&h.url).with_token("third");
    third.initialize(json!({})).await;
    // Before the evicted session's client comes back (which would also drop it here).
    assert_eq!(h.server.session_stats().held, 2, "the evicted session is no longer held by the node");
    assert_eq!(first.post(&rpc(3, "ping", json!({}))).await.status(), StatusCode::NOT_FOUND, "evicted");
}

/// Finding 5: one principal cannot take every session: a cap per principal (per
/// address without authentication) refuses it clearly while others still get in.
#[tokio::test]
async fn one_client_cannot_take_every_session() {
    let clock = ManualClock::new(T0);
    let sessions = SessionConfig::default().max_sessions(8).max_sessions_per_client(2);
    let tokens = BearerTokens::new().token("alice", Principal::new("alice")).token("bob", Principal::new("bob"));
    let h = start_with(server_on(&clock, sessions), HttpConfig::default().auth(tokens)).await;
    for _ in 0..2 {
        Legacy::new(&h.url).with_token("alice").initialize(json!({})).await;
    }
    let e = refused_initialize(&Legacy::new(&h.url).with_token("alice")).await;
    assert_eq!(e["code"], -32000);
    assert!(e["message"].as_str().unwrap_or_default().contains("for this client"), "{e}");
    let mut bob = Legacy::new(&h.url).with_token("bob");
    bob.initialize(json!({})).await;
    assert_eq!(bob.result(1, "ping", json!({})).await, json!({}), "another principal still gets a session");
    // An idle session of alice's makes room for her next one, not anyone else's.
    clock.advance(120_000);
    Legacy::new(&h.url).with_token("alice").initialize(json!({})).await;
    assert_eq!(bob.result(2, "ping", json!({})).await, json!({}), "bob's idle session was not taken");
}

/// Finding 5, without authentication: the cap counts per client address.
#[tokio::test]
async fn without_authentication_the_cap_counts_per_address() {
    let clock = ManualClock::new(T0);
    let sessions = SessionConfig::default().max_sessions_per_client(2);
    let h = serve_with(server_on(&clock, sessions), HttpConfig::default()).await;
    for _ in 0..2 {
        Legacy::new(&h.url).initialize(json!({})).await;
    }
    let e = refused_initialize(&Legacy::new(&h.url)).await;
    assert!(e["message"].as_str().unwrap_or_default().contains("for this client"), "{e}");
    // Another address on the loopback network is another client.
    let other: IpAddr = "127.0.0.2".parse().expect("ip");
    let mut c = Legacy::new(&h.url);
    c.client = reqwest::Client::builder().local_address(other).build().expect("client");
    c.initialize(json!({})).await;
    assert_eq!(c.result(1, "ping", json!({})).await, json!({}));
}

/// Finding 5: a session whose GET stream is open is in use, however long since its
/// last request: eviction at the cap passes it over.
#[tokio::test]
async fn an_open_stream_keeps_its_session_from_eviction() {
    let clock = ManualClock::new(T0);
    let sessions = SessionConfig::default().max_sessions(3).evict_idle_after(Duration::from_secs(60));
    // Four principals, one session each (a quarter of three, at least one).
    let mut tokens = BearerTokens::new();
    for p in ["listener", "a", "b", "c"] {
        tokens = tokens.token(p, Principal::new(p));
    }
    let h = start_with(server_on(&clock, sessions), HttpConfig::default().auth(tokens)).await;
    let mut listener = Legacy::new(&h.url).with_token("listener");
    listener.initialize(json!({})).await;
    let mut get = listener.get_stream().await;
    clock.advance(1_000);
    for p in ["a", "b"] {
        Legacy::new(&h.url).with_token(p).initialize(json!({})).await;
    }
    // Every session is idle past the eviction window; the listener's stream is open. Whatever
    // the stream carries after that (here a list change) marks the session as used before it
    // goes out.
    clock.advance(120_000);
    h.server.notify_tools_list_changed();
    let (_, m) = get.next_msg().await.expect("the list change");
    assert_eq!(m["method"], "notifications/tools/list_changed");
    Legacy::new(&h.url).with_token("c").initialize(json!({})).await;
    assert_eq!(listener.result(1, "ping", json!({})).await, json!({}), "the session with an open stream is kept");
}

/// Finding 9 of issue 34: the per-client cap is at most a quarter of `max_sessions`,
/// whatever `max_sessions_per_client` says (its default is 64): with eight sessions in
/// all, one principal gets two and the others still get in.
#[tokio::test]
async fn the_per_client_cap_stays_a_quarter_of_the_total() {
    let clock = ManualClock::new(T0);
    let sessions = SessionConfig::default().max_sessions(8);
    let mut tokens = BearerTokens::new();
    for p in ["alice", "bob", "carol", "dave"] {
        tokens = tokens.token(p, Principal::new(p));
    }
    let h = start_with(server_on(&clock, sessions), HttpConfig::default().auth(tokens)).await;
    for _ in 0..2 {
        Legacy::new(&h.url).with_token("alice").initialize(json!({})).await;
    }
    let e = refused_initialize(&Legacy::new(&h.url).with_token("alice")).await;
    assert_eq!(e["code"], -32000, "{e}");
    assert!(e["message"].as_str().unwrap_or_default().contains("for this client"), "{e}");
    for p in ["bob", "carol", "dave"] {
        for _ in 0..2 {
            let mut c = Legacy::new(&h.url).with_token(p);
            c.initialize(json!({})).await;
            assert_eq!(c.result(1, "ping", json!({})).await, json!({}), "{p} gets its share");
        }
    }
}

/// Finding 9 of issue 34: a session whose GET stream is open is in use even when nothing
/// crossed the stream since its last request: another client's `initialize` at the cap
/// evicts an idle session, never that one; with every session in use it is refused. A
/// session that ends (DELETE) ends its open stream.
#[tokio::test]
async fn another_clients_initialize_never_evicts_a_session_with_an_open_stream() {
    let clock = ManualClock::new(T0);
    let sessions = SessionConfig::default().max_sessions(2).evict_idle_after(Duration::from_secs(60));
    let tokens = BearerTokens::new()
        .token("alice", Principal::new("alice"))
        .token("bob", Principal::new("bob"))
        .token("carol", Principal::new("carol"));
    let h = start_with(server_on(&clock, sessions), HttpConfig::default().auth(tokens)).await;
    let mut alice = Legacy::new(&h.url).with_token("alice");
    alice.initialize(json!({})).await;
    let mut alice_get = alice.get_stream().await;
    clock.advance(1_000);
    let mut bob = Legacy::new(&h.url).with_token("bob");
    bob.initialize(json!({})).await;
    // Both idle past the eviction window; only alice's stream is open, and silent.
    clock.advance(120_000);
    let mut carol = Legacy::new(&h.url).with_token("carol");
    carol.initialize(json!({})).await;
    assert_eq!(alice.result(1, "ping", json!({})).await, json!({}), "the session with an open stream is kept");
    assert_eq!(bob.post(&rpc(1, "ping", json!({}))).await.status(), StatusCode::NOT_FOUND, "the idle one went");
    // Carol's stream is open too: nothing is idle, so the next initialize is refused.
    let _carol_get = carol.get_stream().await;
    clock.advance(120_000);
    let e = refused_initialize(&Legacy::new(&h.url).with_token("bob")).await;
    assert_eq!(e["code"], -32000, "{e}");
    assert_eq!(alice.result(2, "ping", json!({})).await, json!({}));
    // Its stream still carries what the session is sent, and ends with the session.
    h.server.notify_tools_list_changed();
    assert_eq!(alice_get.next_msg().await.expect("carried").1["method"], "notifications/tools/list_changed");
    assert_eq!(alice.delete().await.status(), StatusCode::NO_CONTENT);
    assert!(guard("the stream to end", alice_get.next()).await.is_none(), "the ended session's stream ends");
}
