//! Streamable HTTP: one POST per message. The answer is one JSON body or an
//! SSE stream (notifications, then the response); `subscriptions/listen`
//! keeps its stream open. The routing headers come from
//! [`protocol::routing`](crate::protocol::routing), the rules the server checks.
//!
//! Legacy sessions add the server's event stream (GET), which carries
//! server requests; a POST stream that closed early after naming an event id
//! is resumed with `Last-Event-ID` for the response it owed ([`stream`]).

mod stream;

use super::credential::Credential;
use super::error::{ClientError, ProtocolError, TransportError};
use super::http_options::{self, HttpOptions, redirect_refused};
use super::oauth::retry::Retry;
use super::sse::SseReader;
use super::wire::{Outgoing, Replies, WeakReplyTx, Wire, replies};
use crate::protocol::RequestId;
use crate::protocol::jsonrpc::{Incoming, Request, parse_incoming};
use crate::protocol::legacy_session::SESSION_ID_HEADER;
use crate::protocol::routing::{METHOD_HEADER, NAME_HEADER, PROTOCOL_VERSION_HEADER, encode_value, mirrored_name};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// Requests that wait for their answer at once on one client; more wait for a
/// turn, so a program following a thousand tasks holds a few dozen
/// connections, not one per task. An answer streamed as SSE frees its turn
/// once its headers arrive (it may wait long on the server, for a legacy
/// `tasks/result` or a server-to-client request).
const MAX_IN_FLIGHT: usize = 32;

/// The HTTP side of a connection.
#[derive(Debug)]
pub(crate) struct HttpWire {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    http: reqwest::Client,
    url: String,
    opts: HttpOptions,
    credential: Credential,
    headers: Vec<(String, String)>,
    session: Mutex<Option<String>>,
    /// Legacy sessions: requests whose response may come on another stream.
    /// Weak handles: only the task reading a request's stream keeps its
    /// reply channel open, so a stream that ends ends the wait.
    legacy: AtomicBool,
    pending: Mutex<HashMap<RequestId, WeakReplyTx>>,
    server_requests: mpsc::UnboundedSender<Request>,
    /// HTTP requests sent.
    sent: AtomicU64,
    /// Turns for requests awaiting their answer ([`MAX_IN_FLIGHT`]).
    turns: tokio::sync::Semaphore,
}

impl HttpWire {
    pub(crate) fn new(
        url: String,
        opts: HttpOptions,
        credential: Credential,
        headers: Vec<(String, String)>,
        server_requests: mpsc::UnboundedSender<Request>,
    ) -> Result<Self, ClientError> {
        let parsed = http_options::parse_url("the server URL", &url)?;
        if !matches!(credential, Credential::None) {
            opts.check_credentials_to(&parsed, "a token")?;
        }
        let http = opts.client(true)?;
        let shared = Shared {
            http,
            url,
            opts,
            credential,
            headers,
            session: Mutex::new(None),
            legacy: AtomicBool::new(false),
            pending: Mutex::default(),
            server_requests,
            sent: AtomicU64::new(0),
            turns: tokio::sync::Semaphore::new(MAX_IN_FLIGHT),
        };
        Ok(Self { shared: Arc::new(shared) })
    }
}

impl Shared {
    fn request(&self, method: reqwest::Method, version: &str) -> reqwest::RequestBuilder {
        // Counted when built: every request built here is sent at once.
        self.sent.fetch_add(1, Ordering::Relaxed);
        let mut rb = self
            .http
            .request(method, &self.url)
            .header("accept", "application/json, text/event-stream")
            .header(PROTOCOL_VERSION_HEADER, version);
        for (k, v) in &self.headers {
            rb = rb.header(k.as_str(), v.as_str());
        }
        if let Some(s) = self.session.lock().unwrap_or_else(|p| p.into_inner()).as_deref() {
            rb = rb.header(SESSION_ID_HEADER, s);
        }
        rb
    }

    fn post(&self, version: &str) -> reqwest::RequestBuilder {
        self.request(reqwest::Method::POST, version).header("content-type", "application/json")
    }

    /// Sends a request built by `build` with the current credential; on a
    /// 401 or an `insufficient_scope` 403 the credential is renewed (refresh,
    /// authorization, step-up) and the request sent again, a bounded number
    /// of times. Redirects to another origin are refused.
    async fn send_authorized(
        &self,
        build: impl Fn() -> reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, ClientError> {
        let mut retry = Retry::default();
        loop {
            let (rb, used) = self.credential.authorize(build()).await?;
            let resp = http_options::send(rb, self.opts.timeout).await?;
            self.credential.observe(&resp);
            let status = resp.status().as_u16();
            if resp.status().is_redirection() {
                return Err(redirect_refused(&resp));
            }
            if status != 401 && status != 403 {
                return Ok(resp);
            }
            if !self.credential.renew(&resp, used.as_deref(), &mut retry).await? {
                return Ok(resp);
            }
        }
    }

    fn remember_session(&self, resp: &reqwest::Response) {
        if let Some(s) = resp.headers().get(SESSION_ID_HEADER).and_then(|v| v.to_str().ok()) {
            *self.session.lock().unwrap_or_else(|p| p.into_inner()) = Some(s.to_owned());
        }
    }

    /// Delivers a message from a stream that is not its request's own.
    fn route(&self, msg: Incoming) {
        match msg {
            Incoming::Response(r) => {
                let tx = r.id.as_ref().and_then(|id| self.pending.lock().unwrap_or_else(|p| p.into_inner()).remove(id));
                if let Some(tx) = tx {
                    let _ = tx.send(Incoming::Response(r));
                }
            }
            Incoming::Request(req) => {
                let _ = self.server_requests.send(req);
            }
            Incoming::Notification { .. } => {}
        }
    }
}

fn parse(bytes: &[u8]) -> Result<Incoming, ClientError> {
    parse_incoming(bytes).map_err(|(_, e)| {
        ClientError::Protocol(ProtocolError::new(format!("unreadable message: {}", e.message)).caused_by(e))
    })
}

fn is_sse(resp: &reqwest::Response) -> bool {
    resp.headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.trim_start().starts_with("text/event-stream"))
}

#[async_trait::async_trait]
impl Wire for HttpWire {
    async fn send(&self, req: Outgoing) -> Result<Replies, ClientError> {
        let sh = &self.shared;
        let name = mirrored_name(&req.method, &req.params).map(|n| encode_value(n).into_owned());
        let body = req.to_value().to_string();
        let build = || {
            let mut rb = sh.post(&req.version).header(METHOD_HEADER, req.method.as_str());
            if let Some(name) = &name {
                rb = rb.header(NAME_HEADER, name.as_str());
            }
            for (k, v) in &req.headers {
                rb = rb.header(k.as_str(), v.as_str());
            }
            rb.body(body.clone())
        };
        let turn = sh
            .turns
            .acquire()
            .await
            .map_err(|e| ClientError::Transport(TransportError::new("the client is closed").caused_by(e)))?;
        let resp = sh.send_authorized(build).await?;
        sh.remember_session(&resp);
        let status = resp.status().as_u16();
        let (tx, rx) = replies();
        if is_sse(&resp) && resp.status().is_success() {
            let legacy = sh.legacy.load(Ordering::Relaxed);
            if legacy {
                sh.pending.lock().unwrap_or_else(|p| p.into_inner()).insert(req.id.clone(), tx.downgrade());
            }
            let resume = legacy.then(|| stream::Resume::new(sh, &req.version, req.id.clone()));
            drop(turn);
            let reader = SseReader::new(sh.opts.max_line, sh.opts.max_message);
            tokio::spawn(stream::read_request_stream(resp, tx, reader, req.id.clone(), resume));
            return Ok(rx);
        }
        let body = http_options::read_body(resp, sh.opts.max_message, sh.opts.timeout).await?;
        drop(turn);
        // A JSON-RPC error in the body counts whatever the status (400 for
        // header, meta and version errors, 404 for unknown methods).
        match parse(&body) {
            Ok(msg) => {
                let _ = tx.send(msg);
                Ok(rx)
            }
            Err(_) if status == 401 || status == 403 => Err(sh.credential.refused(status)),
            Err(e) if (200..300).contains(&status) => Err(e),
            Err(e) => Err(ClientError::Transport(
                TransportError::http(status, format!("HTTP {status} without a JSON-RPC body")).caused_by(e),
            )),
        }
    }

    async fn post(&self, message: Value, version: &str) -> Result<(), ClientError> {
        let sh = &self.shared;
        let method = message.get("method").and_then(Value::as_str);
        let body = message.to_string();
        let build = || {
            let mut rb = sh.post(version);
            if let Some(m) = method {
                rb = rb.header(METHOD_HEADER, m);
            }
            rb.body(body.clone())
        };
        let resp = sh.send_authorized(build).await?;
        match resp.status().as_u16() {
            s if (200..300).contains(&s) => Ok(()),
            s @ (401 | 403) => Err(sh.credential.refused(s)),
            s => Err(ClientError::Transport(TransportError::http(s, format!("HTTP {s} for a notification")))),
        }
    }

    fn sent(&self) -> u64 {
        self.shared.sent.load(Ordering::Relaxed)
    }

    fn reset_session(&self) {
        *self.shared.session.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    async fn open_events(&self, version: &str) {
        self.shared.legacy.store(true, Ordering::Relaxed);
        // Wait until the stream is open: a server request may follow the next call at once.
        match stream::open_get(&self.shared, version, None).await {
            Ok(resp) => {
                let reader = SseReader::new(self.shared.opts.max_line, self.shared.opts.max_message);
                tokio::spawn(stream::events(Arc::downgrade(&self.shared), resp, reader, version.to_owned()));
            }
            Err(e) => tracing::debug!("no event stream for the session: {e}"),
        }
    }
}
