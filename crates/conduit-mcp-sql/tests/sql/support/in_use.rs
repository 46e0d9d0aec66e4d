//! A node over a SQL session store keeps a session in use (its GET stream
//! open, nothing sent on it) when another client's `initialize` needs room at
//! the cap, and a client's share of the cap is a quarter of it: the node and
//! the store's `create` together, over a real socket (issue 34, finding 9).

use conduit_mcp::auth::{BearerTokens, Principal};
use conduit_mcp::clock::ManualClock;
use conduit_mcp::prelude::*;
use conduit_mcp::session::{SessionConfig, SessionStore};
use futures_util::StreamExt;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

const LEGACY: &str = "2025-11-25";

/// A request of `token` (inside `session` when given).
fn post(url: &str, token: &str, session: Option<&str>, body: &Value) -> reqwest::RequestBuilder {
    let mut r = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("authorization", format!("Bearer {token}"));
    if let Some(s) = session {
        r = r.header("mcp-session-id", s).header("mcp-protocol-version", LEGACY);
    }
    r.body(body.to_string())
}

/// `initialize` of `token`: the session id, or the JSON-RPC error.
async fn initialize(url: &str, token: &str) -> Result<String, Value> {
    let body = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": { "name": token, "version": "1" } } });
    let r = post(url, token, None, &body).send().await.expect("sent");
    let session = r.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let m: Value = r.json().await.expect("JSON");
    session.ok_or_else(|| m["error"].clone())
}

/// The HTTP status of a `ping` in `session`.
async fn ping(url: &str, token: &str, session: &str) -> u16 {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "ping", "params": {} });
    post(url, token, Some(session), &body).send().await.expect("sent").status().as_u16()
}

/// Runs the check against a server whose sessions live in `store` (empty).
pub async fn an_open_stream_keeps_its_session(store: impl SessionStore) {
    let clock = ManualClock::new(1_800_000_000_000);
    let sessions = SessionConfig::default().store(store).max_sessions(2).evict_idle_after(Duration::from_secs(60));
    let server =
        Server::builder("in-use", "1").clock(Arc::new(clock.clone())).sessions(sessions).build().expect("server");
    let mut tokens = BearerTokens::new();
    for p in ["alice", "bob", "carol"] {
        tokens = tokens.token(p, Principal::new(p));
    }
    let bound = conduit_mcp::transport::http::bind("127.0.0.1:0".parse().expect("addr")).await.expect("bind");
    let url = format!("http://{}/mcp", bound.local_addr());
    let served = tokio::spawn(bound.serve(server, HttpConfig::default().auth(tokens), std::future::pending()));

    let alice = initialize(&url, "alice").await.expect("alice's session");
    let e = initialize(&url, "alice").await.expect_err("her share of two is one");
    assert!(e["message"].as_str().unwrap_or_default().contains("for this client"), "{e}");
    let get = reqwest::Client::new()
        .get(&url)
        .header("accept", "text/event-stream")
        .header("authorization", "Bearer alice")
        .header("mcp-session-id", &alice)
        .header("mcp-protocol-version", LEGACY)
        .send()
        .await
        .expect("GET");
    assert_eq!(get.status(), 200);
    let mut events = get.bytes_stream();
    let priming = tokio::time::timeout(Duration::from_secs(10), events.next()).await.expect("the priming event");
    assert!(priming.is_some_and(|c| c.is_ok()), "the stream opened");
    clock.advance(1_000);
    let bob = initialize(&url, "bob").await.expect("bob's session");
    // Both idle past the eviction window; alice's stream is open and silent.
    clock.advance(120_000);
    initialize(&url, "carol").await.expect("room made by evicting the idle session");
    assert_eq!(ping(&url, "alice", &alice).await, 200, "the session with an open stream is kept");
    assert_eq!(ping(&url, "bob", &bob).await, 404, "the idle one was evicted");
    served.abort();
}
