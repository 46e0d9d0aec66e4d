//! Streamable HTTP: one POST per message. The answer is one JSON body or an
//! SSE stream (notifications, then the response); `subscriptions/listen`
//! keeps its stream open. The routing headers come from
//! [`protocol::routing`](crate::protocol::routing), the rules the server checks.

use super::error::ClientError;
use super::sse::SseReader;
use super::wire::{Outgoing, Replies, Wire};
use crate::protocol::jsonrpc::{Incoming, parse_incoming};
use crate::protocol::routing::{
    METHOD_HEADER, NAME_HEADER, PROTOCOL_VERSION_HEADER, SESSION_HEADER, encode_value, mirrored_name,
};
use futures_util::StreamExt;
use serde_json::Value;
use std::sync::Mutex;
use tokio::sync::mpsc;

/// The HTTP side of a connection.
#[derive(Debug)]
pub(crate) struct HttpWire {
    http: reqwest::Client,
    url: String,
    token: Option<String>,
    headers: Vec<(String, String)>,
    session: Mutex<Option<String>>,
}

impl HttpWire {
    pub(crate) fn new(url: String, token: Option<String>, headers: Vec<(String, String)>) -> Result<Self, ClientError> {
        let http =
            reqwest::Client::builder().tcp_nodelay(true).build().map_err(|e| ClientError::Transport(e.to_string()))?;
        Ok(Self { http, url, token, headers, session: Mutex::new(None) })
    }

    fn request(&self, version: &str) -> reqwest::RequestBuilder {
        let mut rb = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header(PROTOCOL_VERSION_HEADER, version);
        for (k, v) in &self.headers {
            rb = rb.header(k.as_str(), v.as_str());
        }
        if let Some(t) = &self.token {
            rb = rb.bearer_auth(t);
        }
        if let Some(s) = self.session.lock().unwrap_or_else(|p| p.into_inner()).as_deref() {
            rb = rb.header(SESSION_HEADER, s);
        }
        rb
    }

    fn remember_session(&self, resp: &reqwest::Response) {
        if let Some(s) = resp.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()) {
            *self.session.lock().unwrap_or_else(|p| p.into_inner()) = Some(s.to_owned());
        }
    }
}

fn transport(e: reqwest::Error) -> ClientError {
    ClientError::Transport(if e.is_connect() { format!("cannot connect: {e}") } else { e.to_string() })
}

fn parse(bytes: &[u8]) -> Result<Incoming, ClientError> {
    parse_incoming(bytes).map_err(|(_, e)| ClientError::Protocol(format!("unreadable message: {}", e.message)))
}

#[async_trait::async_trait]
impl Wire for HttpWire {
    async fn send(&self, req: Outgoing) -> Result<Replies, ClientError> {
        let mut rb = self.request(&req.version).header(METHOD_HEADER, req.method.as_str());
        if let Some(name) = mirrored_name(&req.method, &req.params) {
            rb = rb.header(NAME_HEADER, encode_value(name).as_ref());
        }
        for (k, v) in &req.headers {
            rb = rb.header(k.as_str(), v.as_str());
        }
        let resp = rb.body(req.to_value().to_string()).send().await.map_err(transport)?;
        self.remember_session(&resp);
        let status = resp.status().as_u16();
        let sse = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|c| c.trim_start().starts_with("text/event-stream"));
        let (tx, rx) = mpsc::unbounded_channel();
        if sse && resp.status().is_success() {
            tokio::spawn(read_stream(resp, tx));
            return Ok(rx);
        }
        let body = resp.bytes().await.map_err(transport)?;
        // A JSON-RPC error in the body counts whatever the status (400 for
        // header, meta and version errors, 404 for unknown methods).
        match parse(&body) {
            Ok(msg) => {
                let _ = tx.send(msg);
                Ok(rx)
            }
            Err(_) if status == 401 || status == 403 => Err(ClientError::Unauthorized { status }),
            Err(e) if (200..300).contains(&status) => Err(e),
            Err(_) => Err(ClientError::Transport(format!("HTTP {status} without a JSON-RPC body"))),
        }
    }

    async fn post(&self, message: Value, version: &str) -> Result<(), ClientError> {
        let mut rb = self.request(version);
        if let Some(m) = message.get("method").and_then(Value::as_str) {
            rb = rb.header(METHOD_HEADER, m);
        }
        let resp = rb.body(message.to_string()).send().await.map_err(transport)?;
        match resp.status().as_u16() {
            s if (200..300).contains(&s) => Ok(()),
            s @ (401 | 403) => Err(ClientError::Unauthorized { status: s }),
            s => Err(ClientError::Transport(format!("HTTP {s} for a notification"))),
        }
    }

    fn reset_session(&self) {
        *self.session.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
}

/// Reads an SSE response into `tx` until the stream ends or nobody listens.
async fn read_stream(resp: reqwest::Response, tx: mpsc::UnboundedSender<Incoming>) {
    let mut body = resp.bytes_stream();
    let mut reader = SseReader::default();
    loop {
        let chunk = tokio::select! {
            c = body.next() => c,
            () = tx.closed() => return,
        };
        let Some(Ok(chunk)) = chunk else { return };
        for data in reader.feed(&chunk) {
            if data.trim().is_empty() {
                continue;
            }
            let Ok(msg) = parse(data.as_bytes()) else {
                tracing::debug!("skipping an unreadable SSE event");
                continue;
            };
            let done = matches!(msg, Incoming::Response(_));
            if tx.send(msg).is_err() || done {
                return;
            }
        }
    }
}
