//! A server on a loopback socket for the length of a test: what every
//! multi-node and restart test starts, and the modern-era requests with
//! alice's bearer token that the Events tests send.

use conduit_mcp::prelude::*;
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::sync::Notify;

/// A server listening on 127.0.0.1; it stops when this is dropped.
pub struct Served {
    /// Its MCP endpoint.
    pub url: String,
    stop: Arc<Notify>,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.stop.notify_one();
    }
}

/// Serves `server` with `http` on a fresh loopback port.
pub async fn serve(server: Server, http: HttpConfig) -> Served {
    let bound = conduit_mcp::transport::http::bind("127.0.0.1:0".parse().expect("addr")).await.expect("bind");
    let url = format!("http://{}/mcp", bound.local_addr());
    let stop = Arc::new(Notify::new());
    let stopped = stop.clone();
    tokio::spawn(async move { bound.serve(server, http, async move { stopped.notified().await }).await });
    Served { url, stop }
}

/// A `2026-07-28` request declaring the Tasks and Events extensions.
pub fn events_request(id: u64, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": { "extensions": {
            "io.modelcontextprotocol/tasks": {}, "io.modelcontextprotocol/events": {} } }
    });
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

/// `body` POSTed as alice (`alice-token`) with the headers of its era.
pub fn post_as_alice(url: &str, body: &Value) -> reqwest::RequestBuilder {
    let mut r = reqwest::Client::new()
        .post(url)
        .bearer_auth("alice-token")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", body["method"].as_str().expect("a method"));
    if let Some(name) = body["params"]["name"].as_str() {
        r = r.header("mcp-name", name);
    }
    r.body(body.to_string())
}

/// The `result` of `body` POSTed as alice (the test fails on an error).
pub async fn result_as_alice(url: &str, body: &Value) -> Value {
    let v: Value = post_as_alice(url, body).send().await.expect("sent").json().await.expect("JSON");
    assert!(v.get("result").is_some(), "{v}");
    v["result"].clone()
}
