//! Shared helpers for the integration tests: a real server on `127.0.0.1:0`,
//! request builders that set the standard MCP headers, an SSE reader and a
//! raw-socket client for the cases reqwest normalises away.
//!
//! This harness is raw on purpose. The tests that use it check the server's
//! own wire: exact bodies and bytes (a foreign task answers byte for byte
//! like a missing one), headers, HTTP statuses, bad input, limits and
//! timeouts, and raw output against the JSON Schema — things a client
//! library hides or normalises. Tests that only need to speak MCP (create a
//! task, listen to it, read it) use the library client through
//! `client_support` (`connect`, `create_task`, `listen_tasks`).

use bytes::Bytes;
use conduit_mcp::Server;
use conduit_mcp::prelude::*;
use conduit_mcp::transport::http::{self, HttpConfig};
use futures_util::{Stream, StreamExt};
use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value, json};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::pin::Pin;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The protocol revision under test.
pub const V: &str = "2026-07-28";
/// Every version a dual-era server lists in `server/discover`, newest first.
pub const SERVED: [&str; 3] = [V, "2025-11-25", "2025-06-18"];
/// `_meta` key of the protocol version.
pub const PV: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key of the client capabilities.
pub const CC: &str = "io.modelcontextprotocol/clientCapabilities";
/// Result `_meta` key of the server identity.
pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// Notification `_meta` key of the listen subscription.
pub const SUB_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// How long any single wait may take before the test fails (a failure guard, never a delay).
pub const GUARD: Duration = Duration::from_secs(10);

/// Awaits `fut`, failing the test if it takes longer than [`GUARD`].
pub async fn guard<F: std::future::Future>(what: &str, fut: F) -> F::Output {
    match tokio::time::timeout(GUARD, fut).await {
        Ok(v) => v,
        Err(_) => panic!("timed out waiting for {what}"),
    }
}

/// A `_meta` object with the version and these client capabilities.
pub fn meta_with(caps: Value) -> Value {
    json!({ PV: V, CC: caps })
}

/// A `_meta` object with the version and no optional capabilities.
pub fn meta() -> Value {
    meta_with(json!({}))
}

/// A request body. `params` gets a default `_meta` unless it already has one.
pub fn req(id: impl Into<Value>, method: &str, params: Value) -> Value {
    let mut params = match params {
        Value::Object(m) => m,
        Value::Null => Map::new(),
        other => panic!("params must be an object in req(): {other}"),
    };
    params.entry("_meta").or_insert_with(meta);
    json!({ "jsonrpc": "2.0", "id": id.into(), "method": method, "params": params })
}

/// A `tools/call` request body.
pub fn call(id: impl Into<Value>, tool: &str, args: Value) -> Value {
    req(id, "tools/call", json!({ "name": tool, "arguments": args }))
}

/// The headers a well-behaved client sends for `body`: content type, accept,
/// `MCP-Protocol-Version`, `Mcp-Method` and (when the method has one) `Mcp-Name`.
pub fn std_headers(body: &Value) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert("content-type", HeaderValue::from_static("application/json"));
    h.insert("accept", HeaderValue::from_static("application/json, text/event-stream"));
    let version = body["params"]["_meta"][PV].as_str().unwrap_or(V);
    h.insert("mcp-protocol-version", HeaderValue::from_str(version).expect("ascii version"));
    if let Some(m) = body["method"].as_str() {
        h.insert("mcp-method", HeaderValue::from_str(m).expect("ascii method"));
        let name = match m {
            "tools/call" | "prompts/get" => body["params"]["name"].as_str(),
            "resources/read" => body["params"]["uri"].as_str(),
            "tasks/get" | "tasks/update" | "tasks/cancel" => body["params"]["taskId"].as_str(),
            _ => None,
        };
        if let Some(n) = name {
            let v = if n.bytes().all(|b| (0x21..0x7f).contains(&b)) { n.to_owned() } else { b64_sentinel(n) };
            h.insert("mcp-name", HeaderValue::from_str(&v).expect("header-safe name"));
        }
    }
    h
}

/// `=?base64?…?=` of the UTF-8 of `s`.
pub fn b64_sentinel(s: &str) -> String {
    use base64::Engine;
    format!("=?base64?{}?=", base64::engine::general_purpose::STANDARD.encode(s.as_bytes()))
}

/// Sets a header (panics on an invalid name or value, which is a test bug).
pub fn set(h: &mut HeaderMap, name: &str, value: &str) {
    h.insert(
        HeaderName::from_bytes(name.as_bytes()).expect("header name"),
        HeaderValue::from_str(value).expect("header value"),
    );
}

/// A response read to the end.
#[derive(Debug)]
pub struct Resp {
    /// The HTTP status.
    pub status: StatusCode,
    /// The response headers.
    pub headers: HeaderMap,
    /// The body as text.
    pub text: String,
    /// The body as JSON (`Null` when empty or not JSON).
    pub body: Value,
}

impl Resp {
    /// The `Content-Type` without parameters.
    pub fn content_type(&self) -> String {
        self.headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(';').next().unwrap_or("").trim().to_owned())
            .unwrap_or_default()
    }

    /// The JSON-RPC error code, if the body is an error.
    pub fn code(&self) -> Option<i64> {
        self.body["error"]["code"].as_i64()
    }

    /// The events of an SSE body (or the one JSON body as a single event).
    pub fn messages(&self) -> Vec<Value> {
        if self.content_type() == "text/event-stream" {
            parse_sse(self.text.as_bytes()).0
        } else {
            vec![self.body.clone()]
        }
    }

    /// The final message: the response.
    pub fn response(&self) -> Value {
        self.messages().pop().expect("a response")
    }

    /// The `WWW-Authenticate` header.
    pub fn www_authenticate(&self) -> String {
        self.headers.get("www-authenticate").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned()
    }

    /// Asserts a JSON-RPC error with this HTTP status and code that echoes `id`.
    #[track_caller]
    pub fn assert_error(&self, status: u16, code: i64, id: &Value) {
        assert_eq!(self.status.as_u16(), status, "status; body {}", self.text);
        assert_eq!(self.code(), Some(code), "code; body {}", self.text);
        assert_eq!(&self.body["id"], id, "id echoed; body {}", self.text);
        assert_eq!(self.body["jsonrpc"], "2.0");
        assert!(self.body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "message; body {}", self.text);
    }

    /// Asserts a 200 JSON result that echoes `id`, and returns the result.
    #[track_caller]
    pub fn assert_ok(&self, id: &Value) -> Value {
        assert_eq!(self.status, StatusCode::OK, "status; body {}", self.text);
        let r = self.response();
        assert_eq!(&r["id"], id, "id echoed; body {}", self.text);
        assert!(r.get("result").is_some(), "a result; body {}", self.text);
        r["result"].clone()
    }
}

/// Splits an SSE byte buffer into complete `data:` events; returns them and the unconsumed rest.
pub fn parse_sse(buf: &[u8]) -> (Vec<Value>, Vec<u8>) {
    let text = String::from_utf8_lossy(buf).replace("\r\n", "\n");
    let mut events = Vec::new();
    let mut rest = text.as_str();
    while let Some(end) = rest.find("\n\n") {
        let block = &rest[..end];
        rest = &rest[end + 2..];
        let data: Vec<&str> =
            block.lines().filter_map(|l| l.strip_prefix("data:")).map(|d| d.strip_prefix(' ').unwrap_or(d)).collect();
        // An event with empty data (an SSE priming event) carries no message.
        if !data.is_empty() && !data.iter().all(|d| d.is_empty()) {
            let joined = data.join("\n");
            events
                .push(serde_json::from_str(&joined).unwrap_or_else(|e| panic!("SSE data is not JSON ({e}): {joined}")));
        }
    }
    (events, rest.as_bytes().to_vec())
}

type ByteStream = Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>;

/// Reads SSE events from a live response, one at a time.
pub struct SseStream {
    /// The HTTP status.
    pub status: StatusCode,
    /// The response headers.
    pub headers: HeaderMap,
    stream: ByteStream,
    buf: Vec<u8>,
    ready: VecDeque<Value>,
}

impl SseStream {
    /// Wraps a response (any status; check `status`).
    pub fn new(resp: reqwest::Response) -> Self {
        Self {
            status: resp.status(),
            headers: resp.headers().clone(),
            stream: Box::pin(resp.bytes_stream()),
            buf: Vec::new(),
            ready: VecDeque::new(),
        }
    }

    /// The next event, or `None` once the server ended the stream. Fails the test after [`GUARD`].
    pub async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(v) = self.ready.pop_front() {
                return Some(v);
            }
            match guard("the next SSE event", self.stream.next()).await {
                Some(Ok(chunk)) => {
                    self.buf.extend_from_slice(&chunk);
                    let (events, rest) = parse_sse(&self.buf);
                    self.buf = rest;
                    self.ready.extend(events);
                }
                Some(Err(e)) => panic!("SSE stream failed: {e}"),
                None => return None,
            }
        }
    }
}

/// A server bound to `127.0.0.1:0`, mounted at `/mcp`.
pub struct Harness {
    /// The address it listens on.
    pub addr: SocketAddr,
    /// Its MCP endpoint (`http://127.0.0.1:PORT/mcp`).
    pub url: String,
    /// The server it serves.
    pub server: Server,
    /// An HTTP client for the tests' requests.
    pub client: reqwest::Client,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Harness {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts `server` with the default HTTP config.
pub async fn start(server: Server) -> Harness {
    start_with(server, HttpConfig::default()).await
}

/// Starts `server` with `config`.
pub async fn start_with(server: Server, config: HttpConfig) -> Harness {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("local addr");
    let app = axum::Router::new().nest("/mcp", http::router(server.clone(), config));
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.expect("axum::serve");
    });
    Harness { addr, url: format!("http://{addr}/mcp"), server, client: reqwest::Client::new(), task }
}

/// Starts `server` with `config` on the library's own [`http::Bound::serve`] (which knows
/// each client's address, for the limits that count per address without authentication).
pub async fn serve_with(server: Server, config: HttpConfig) -> Harness {
    let bound = http::bind("127.0.0.1:0".parse().expect("address")).await.expect("bind 127.0.0.1:0");
    let addr = bound.local_addr();
    let s = server.clone();
    let task = tokio::spawn(async move {
        bound.serve(s, config, std::future::pending()).await.expect("serve");
    });
    Harness { addr, url: format!("http://{addr}/mcp"), server, client: reqwest::Client::new(), task }
}

impl Harness {
    /// The same server through another HTTP client (one bound to another loopback address is
    /// another client for the per-address limits). Dropping it leaves the server running.
    pub fn clone_with(&self, client: reqwest::Client) -> Harness {
        let task = tokio::spawn(async {});
        Harness { addr: self.addr, url: self.url.clone(), server: self.server.clone(), client, task }
    }

    /// A POST of `body` with the standard headers, edited by `edit`, not yet sent.
    pub fn post_with(&self, body: &Value, edit: impl FnOnce(&mut HeaderMap)) -> reqwest::RequestBuilder {
        let mut h = std_headers(body);
        edit(&mut h);
        self.client.post(&self.url).headers(h).body(body.to_string())
    }

    /// Sends `body` with the standard headers and reads the whole response.
    pub async fn send(&self, body: &Value) -> Resp {
        self.send_with(body, |_| {}).await
    }

    /// Sends `body` with the standard headers edited by `edit`.
    pub async fn send_with(&self, body: &Value, edit: impl FnOnce(&mut HeaderMap)) -> Resp {
        read(self.post_with(body, edit)).await
    }

    /// Sends raw bytes with exactly these headers.
    pub async fn send_raw(&self, bytes: Vec<u8>, headers: HeaderMap) -> Resp {
        read(self.client.post(&self.url).headers(headers).body(bytes)).await
    }

    /// Sends `body` and returns the live response as an SSE reader.
    pub async fn open(&self, body: &Value) -> SseStream {
        let resp = guard("response headers", self.post_with(body, |_| {}).send()).await.expect("request sent");
        SseStream::new(resp)
    }

    /// Sends `server/discover` and asserts it succeeds (the server is still serving).
    pub async fn assert_alive(&self) {
        let body = req("alive", "server/discover", json!({}));
        let r = self.send(&body).await;
        let result = r.assert_ok(&json!("alive"));
        assert_eq!(result["supportedVersions"], json!(SERVED));
    }

    /// Sends a raw HTTP/1.1 request text (head and body) over a fresh TCP connection.
    pub async fn raw_http(&self, head: &[u8], body: &[u8]) -> RawResp {
        raw_http(self.addr, head, body).await
    }
}

/// Sends a built request and reads the whole response.
pub async fn read(rb: reqwest::RequestBuilder) -> Resp {
    let resp = guard("a response", rb.send()).await.expect("request sent");
    let status = resp.status();
    let headers = resp.headers().clone();
    let text = guard("the response body", resp.text()).await.expect("body read");
    let body = serde_json::from_str(&text).unwrap_or(Value::Null);
    Resp { status, headers, text, body }
}

/// A response read off a raw socket.
#[derive(Debug)]
pub struct RawResp {
    /// The status code.
    pub status: u16,
    /// The status line and headers, as sent.
    pub head: String,
    /// The body as JSON.
    pub body: Value,
}

/// Writes `head` (which must end with the blank line) and `body` to a new connection and reads
/// the response until the server closes it (send `Connection: close`).
pub async fn raw_http(addr: SocketAddr, head: &[u8], body: &[u8]) -> RawResp {
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    s.write_all(head).await.expect("write head");
    s.write_all(body).await.expect("write body");
    let mut buf = Vec::new();
    guard("a raw response", s.read_to_end(&mut buf)).await.expect("read");
    let split = buf.windows(4).position(|w| w == b"\r\n\r\n").expect("a response head");
    let head = String::from_utf8_lossy(&buf[..split]).into_owned();
    let mut payload = buf[split + 4..].to_vec();
    if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        payload = dechunk(&payload);
    }
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).expect("a status code");
    RawResp { status, head, body: serde_json::from_slice(&payload).unwrap_or(Value::Null) }
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = b.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(std::str::from_utf8(&b[..eol]).unwrap_or("0").trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        out.extend_from_slice(&b[eol + 2..eol + 2 + size]);
        b = &b[eol + 2 + size + 2..];
    }
    out
}

/// A raw request head for `body` with the standard MCP headers written in the case given by `names`.
pub fn raw_head(addr: SocketAddr, extra: &[(&str, &str)], body_len: usize) -> Vec<u8> {
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {body_len}\r\nConnection: close\r\n"
    )
    .into_bytes();
    for (k, v) in extra {
        head.extend_from_slice(k.as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(v.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(b"\r\n");
    head
}

/// `echo`: returns its `text` argument.
pub fn echo_tool() -> Tool {
    Tool::new("echo", "Echoes the text back").param("text", Param::string("What to echo").required()).handle(
        |_ctx, args| async move { Ok(CallToolResult::text(args["text"].as_str().unwrap_or_default().to_owned())) },
    )
}

/// The text of the first content block of a tool result.
pub fn first_text(result: &Value) -> String {
    result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text content in {result}")).to_owned()
}
