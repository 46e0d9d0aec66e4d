//! A small 2025-11-25 client for the legacy-era tests: `initialize`, requests
//! inside the session, SSE events with their ids, and validation of every
//! message the server sends against the official 2025-11-25 JSON Schema.
//!
//! It stays raw on purpose: these tests check the legacy wire itself —
//! `Mcp-Session-Id` handling, SSE event ids and `retry`, resumption with
//! `Last-Event-ID`, HTTP statuses, and every message validated against the
//! official schema — which the library client (`conduit_mcp::client`, whose
//! legacy side the conformance suite's client leg runs) hides.

use futures_util::{Stream, StreamExt};
use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};
use std::pin::Pin;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// The legacy revision under test.
pub const LV: &str = "2025-11-25";

const GUARD: Duration = Duration::from_secs(10);

/// Fails the test if `fut` takes longer than [`GUARD`].
pub async fn guard<F: std::future::Future>(what: &str, fut: F) -> F::Output {
    match tokio::time::timeout(GUARD, fut).await {
        Ok(v) => v,
        Err(_) => panic!("timed out waiting for {what}"),
    }
}

fn schema_root() -> &'static Value {
    static ROOT: OnceLock<Value> = OnceLock::new();
    ROOT.get_or_init(|| {
        let text = include_str!("../../schema/mcp-2025-11-25.schema.json");
        serde_json::from_str(text).expect("the schema is JSON")
    })
}

/// Asserts that `value` is valid against the 2025-11-25 definition `def`.
#[track_caller]
pub fn assert_schema(def: &str, value: &Value) {
    static CACHE: OnceLock<Mutex<HashMap<String, std::sync::Arc<jsonschema::Validator>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Mutex::default);
    let v = {
        let mut c = cache.lock().expect("cache");
        c.entry(def.to_owned())
            .or_insert_with(|| {
                let mut root = schema_root().clone();
                root["$ref"] = json!(format!("#/$defs/{def}"));
                std::sync::Arc::new(jsonschema::validator_for(&root).expect("the schema compiles"))
            })
            .clone()
    };
    let errors: Vec<String> = v.iter_errors(value).map(|e| format!("{e} at {}", e.instance_path())).collect();
    assert!(errors.is_empty(), "not a valid {def}: {errors:?}\n{value}");
}

/// Asserts that a message the server sent is a valid 2025-11-25 JSON-RPC message.
#[track_caller]
pub fn assert_message(m: &Value) {
    assert_schema("JSONRPCMessage", m);
}

/// One SSE event: its id and its message (`None`: a priming event).
#[derive(Debug, Clone)]
pub struct Ev {
    /// The event's `id:`.
    pub id: Option<String>,
    /// The event's `retry:` (milliseconds).
    pub retry: Option<u64>,
    /// The JSON-RPC message in its `data:`.
    pub msg: Option<Value>,
}

type ByteStream = Pin<Box<dyn Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>;

/// Reads SSE events (with ids) from a live response; every message is schema-checked.
/// A plain JSON response (a request answered at once) reads as one event without an id.
pub struct Events {
    /// The HTTP status.
    pub status: StatusCode,
    /// The response headers.
    pub headers: HeaderMap,
    /// The response is `application/json`, not a stream.
    pub json: bool,
    stream: ByteStream,
    buf: String,
    ready: VecDeque<Ev>,
}

impl Events {
    /// Reads `resp`'s events as they arrive.
    pub fn new(resp: reqwest::Response) -> Self {
        let json = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"));
        Self {
            status: resp.status(),
            headers: resp.headers().clone(),
            json,
            stream: Box::pin(resp.bytes_stream()),
            buf: String::new(),
            ready: VecDeque::new(),
        }
    }

    /// The next event, or `None` when the server closed the stream.
    pub async fn next(&mut self) -> Option<Ev> {
        if self.json {
            return self.whole_json().await;
        }
        loop {
            if let Some(e) = self.ready.pop_front() {
                return Some(e);
            }
            match guard("the next SSE event", self.stream.next()).await {
                Some(Ok(chunk)) => {
                    self.buf.push_str(&String::from_utf8_lossy(&chunk));
                    while let Some(end) = self.buf.find("\n\n") {
                        let block: String = self.buf[..end].to_owned();
                        self.buf.drain(..end + 2);
                        let mut ev = Ev { id: None, retry: None, msg: None };
                        let mut data = Vec::new();
                        let mut any = false;
                        for line in block.lines() {
                            if let Some(v) = line.strip_prefix("id:") {
                                ev.id = Some(v.trim().to_owned());
                                any = true;
                            } else if let Some(v) = line.strip_prefix("retry:") {
                                ev.retry = v.trim().parse().ok();
                            } else if let Some(v) = line.strip_prefix("data:") {
                                data.push(v.strip_prefix(' ').unwrap_or(v).to_owned());
                                any = true;
                            }
                        }
                        if !any {
                            continue; // a keep-alive comment
                        }
                        let joined = data.join("\n");
                        if !joined.is_empty() {
                            let m: Value = serde_json::from_str(&joined).expect("SSE data is JSON");
                            assert_message(&m);
                            ev.msg = Some(m);
                        }
                        self.ready.push_back(ev);
                    }
                }
                Some(Err(e)) => panic!("SSE stream failed: {e}"),
                None => return None,
            }
        }
    }

    /// A JSON response's one message, once.
    async fn whole_json(&mut self) -> Option<Ev> {
        let mut body = Vec::new();
        while let Some(chunk) = guard("the JSON body", self.stream.next()).await {
            body.extend_from_slice(&chunk.expect("body read"));
        }
        if body.is_empty() {
            return None;
        }
        let m: Value = serde_json::from_slice(&body).expect("the body is JSON");
        assert_message(&m);
        Some(Ev { id: None, retry: None, msg: Some(m) })
    }

    /// The next event carrying a message.
    pub async fn next_msg(&mut self) -> Option<(Option<String>, Value)> {
        loop {
            let ev = self.next().await?;
            if let Some(m) = ev.msg {
                return Some((ev.id, m));
            }
        }
    }

    /// Messages until (and with) the response to `id`.
    pub async fn until_response(&mut self, id: &Value) -> Vec<Value> {
        let mut out = Vec::new();
        while let Some((_, m)) = self.next_msg().await {
            let done = &m["id"] == id && m.get("method").is_none();
            out.push(m);
            if done {
                return out;
            }
        }
        panic!("the stream ended before the response to {id}: {out:?}");
    }
}

/// A legacy client bound to one endpoint and (after `initialize`) one session.
#[derive(Clone)]
pub struct Legacy {
    /// The MCP endpoint.
    pub url: String,
    /// The HTTP client it sends with.
    pub client: reqwest::Client,
    /// The `Mcp-Session-Id` the server gave, once initialized.
    pub session: Option<String>,
    /// The protocol version it sends (`MCP-Protocol-Version`).
    pub version: String,
    /// `Authorization: Bearer <token>` on every request, when set.
    pub token: Option<String>,
}

/// A JSON-RPC request.
pub fn rpc(id: impl Into<Value>, method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id.into(), "method": method, "params": params })
}

/// A JSON-RPC notification.
pub fn note(method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "method": method, "params": params })
}

impl Legacy {
    /// A client of `url` with no session yet, speaking `LV`.
    pub fn new(url: &str) -> Self {
        Self { url: url.to_owned(), client: reqwest::Client::new(), session: None, version: LV.into(), token: None }
    }

    /// Sends `token` as a bearer token on every request.
    pub fn with_token(mut self, token: &str) -> Self {
        self.token = Some(token.to_owned());
        self
    }

    /// The headers of its next request: content type, accept, version, session and token.
    pub fn headers(&self) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("content-type", HeaderValue::from_static("application/json"));
        h.insert("accept", HeaderValue::from_static("application/json, text/event-stream"));
        if let Some(s) = &self.session {
            h.insert("mcp-session-id", HeaderValue::from_str(s).expect("ascii"));
            h.insert("mcp-protocol-version", HeaderValue::from_str(&self.version).expect("ascii"));
        }
        if let Some(t) = &self.token {
            h.insert("authorization", HeaderValue::from_str(&format!("Bearer {t}")).expect("ascii"));
        }
        h
    }

    /// POSTs `body` and returns the live response.
    pub async fn post(&self, body: &Value) -> reqwest::Response {
        let rb = self.client.post(&self.url).headers(self.headers()).body(body.to_string());
        guard("the response headers", rb.send()).await.expect("request sent")
    }

    /// `initialize` asking for `version` with `caps`; keeps the session; returns the result.
    pub async fn initialize_as(&mut self, version: &str, caps: Value) -> Value {
        let body = rpc(
            0,
            "initialize",
            json!({ "protocolVersion": version, "capabilities": caps,
            "clientInfo": { "name": "legacy-test", "version": "1.0.0" } }),
        );
        let r = self.post(&body).await;
        assert_eq!(r.status(), StatusCode::OK);
        let sid = r.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(String::from);
        let text = guard("the initialize body", r.text()).await.expect("body");
        let m: Value = serde_json::from_str(&text).expect("JSON");
        assert_message(&m);
        assert_schema("InitializeResult", &m["result"]);
        self.session = Some(sid.expect("initialize mints Mcp-Session-Id"));
        self.version = m["result"]["protocolVersion"].as_str().expect("a version").to_owned();
        let r = self.post(&note("notifications/initialized", json!({}))).await;
        assert_eq!(r.status(), StatusCode::ACCEPTED, "notifications/initialized is accepted");
        m["result"].clone()
    }

    /// `initialize` for 2025-11-25 declaring `caps`.
    pub async fn initialize(&mut self, caps: Value) -> Value {
        self.initialize_as(LV, caps).await
    }

    /// Sends a request and reads its stream to the response; returns (everything before, the response).
    pub async fn request(&self, id: impl Into<Value>, method: &str, params: Value) -> (Vec<Value>, Value) {
        let id = id.into();
        let r = self.post(&rpc(id.clone(), method, params)).await;
        assert_eq!(r.status(), StatusCode::OK, "a request inside the session is 200");
        let mut ev = Events::new(r);
        let mut msgs = ev.until_response(&id).await;
        let last = msgs.pop().expect("the response");
        (msgs, last)
    }

    /// A request's result (asserting it is one).
    pub async fn result(&self, id: impl Into<Value>, method: &str, params: Value) -> Value {
        let (_, r) = self.request(id, method, params).await;
        assert!(r.get("result").is_some(), "{method} answered with a result: {r}");
        r["result"].clone()
    }

    /// A request's error (asserting it is one).
    pub async fn error(&self, id: impl Into<Value>, method: &str, params: Value) -> Value {
        let (_, r) = self.request(id, method, params).await;
        assert!(r.get("error").is_some(), "{method} answered with an error: {r}");
        r["error"].clone()
    }

    /// Opens a request's SSE stream.
    pub async fn open(&self, id: impl Into<Value>, method: &str, params: Value) -> Events {
        let r = self.post(&rpc(id, method, params)).await;
        assert_eq!(r.status(), StatusCode::OK);
        Events::new(r)
    }

    /// GET: the session's stream (or, with `last_event_id`, the rest of an earlier one).
    pub async fn get(&self, last_event_id: Option<&str>) -> reqwest::Response {
        let mut h = self.headers();
        h.insert("accept", HeaderValue::from_static("text/event-stream"));
        if let Some(id) = last_event_id {
            h.insert("last-event-id", HeaderValue::from_str(id).expect("ascii"));
        }
        guard("the GET response", self.client.get(&self.url).headers(h).send()).await.expect("sent")
    }

    /// GET: the session's stand-alone stream, opened (200) and past its priming event.
    pub async fn get_stream(&self) -> Events {
        let r = self.get(None).await;
        assert_eq!(r.status(), StatusCode::OK);
        let mut get = Events::new(r);
        assert!(get.next().await.expect("priming").msg.is_none(), "the stream opens with its priming event");
        get
    }

    /// DELETE: ends the session.
    pub async fn delete(&self) -> reqwest::Response {
        guard("the DELETE response", self.client.delete(&self.url).headers(self.headers()).send()).await.expect("sent")
    }
}
