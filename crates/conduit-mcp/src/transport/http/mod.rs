//! Streamable HTTP: an axum [`Router`] you mount anywhere in your app.
//!
//! POST only (GET and DELETE get 405). Each POST carries one JSON-RPC
//! request or notification. The answer is plain JSON, or an SSE stream when
//! notifications (progress, log, listen traffic) precede it. A client that
//! disconnects cancels its request.
//!
//! ```no_run
//! use conduit_mcp::prelude::*;
//! use conduit_mcp::transport::http::{self, HttpConfig};
//!
//! # async fn run() -> std::io::Result<()> {
//! let server = Server::builder("demo", "1.0.0")
//!     .tool(Tool::new("ping", "Answers pong").handle(|_ctx, _args| async { Ok(CallToolResult::text("pong")) }))
//!     .build()
//!     .expect("valid server");
//! let app = axum::Router::new().nest("/mcp", http::router(server, HttpConfig::default()));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! axum::serve(listener, app).await
//! # }
//! ```

mod headers;

use crate::auth::{AuthError, Authenticate};
use crate::protocol::jsonrpc::{ErrorClass, Incoming, Message, RpcError, parse_incoming};
use crate::server::{RequestEnv, Server};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use futures_util::stream;
use headers::McpHeaders;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::unbounded_channel;
use tokio_util::sync::CancellationToken;

/// Which hosts may reach the endpoint (DNS-rebinding defence).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HostPolicy {
    /// Only `localhost`, `127.0.0.1` and `[::1]`, any port (the default).
    Localhost,
    /// These host names (without port), plus the localhost names.
    AllowList(Vec<String>),
    /// Any host (put your own guard in front).
    Any,
}

/// HTTP transport options.
#[derive(Clone)]
#[non_exhaustive]
pub struct HttpConfig {
    /// Host and Origin policy.
    pub hosts: HostPolicy,
    /// Largest accepted body in bytes (default 4 MiB); larger gets 413.
    pub body_limit: usize,
    /// How requests are authenticated (`None`: every principal is `None`).
    pub auth: Option<Arc<dyn Authenticate>>,
    /// The protected-resource metadata URL named in `WWW-Authenticate`.
    pub resource_metadata: Option<String>,
    /// Interval of SSE keep-alive comments on long streams.
    pub keep_alive: Duration,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            hosts: HostPolicy::Localhost,
            body_limit: 4 * 1024 * 1024,
            auth: None,
            resource_metadata: None,
            keep_alive: Duration::from_secs(15),
        }
    }
}

impl std::fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpConfig")
            .field("hosts", &self.hosts)
            .field("body_limit", &self.body_limit)
            .field("auth", &self.auth.is_some())
            .finish_non_exhaustive()
    }
}

impl HttpConfig {
    /// Sets the host policy.
    pub fn hosts(mut self, hosts: HostPolicy) -> Self {
        self.hosts = hosts;
        self
    }

    /// Sets the body limit.
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// Sets the authenticator.
    pub fn auth(mut self, auth: impl Authenticate) -> Self {
        self.auth = Some(Arc::new(auth));
        self
    }

    /// Sets the resource-metadata URL for `WWW-Authenticate` challenges.
    pub fn resource_metadata(mut self, url: impl Into<String>) -> Self {
        self.resource_metadata = Some(url.into());
        self
    }

    /// Sets the SSE keep-alive interval.
    pub fn keep_alive(mut self, every: Duration) -> Self {
        self.keep_alive = every;
        self
    }
}

struct AppState {
    server: Server,
    config: HttpConfig,
}

/// A router serving MCP at its root: mount it with `Router::nest("/mcp", ...)`.
pub fn router(server: Server, config: HttpConfig) -> Router {
    let state = Arc::new(AppState { server, config });
    Router::new().route("/", post(handle_post).fallback(method_not_allowed)).with_state(state)
}

async fn method_not_allowed() -> Response {
    (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "POST")]).into_response()
}

/// The HTTP status for a JSON-RPC error, decided in one place (brief §2.6).
pub fn status_for(error: &RpcError) -> StatusCode {
    match error.class {
        ErrorClass::MissingMeta => return StatusCode::BAD_REQUEST,
        ErrorClass::InsufficientScope => return StatusCode::FORBIDDEN,
        _ => {}
    }
    match error.code {
        -32700 | -32600 | -32020 | -32021 | -32022 => StatusCode::BAD_REQUEST,
        -32601 => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}

fn json_body(status: StatusCode, msg: &Message) -> Response {
    let mut r = Response::new(Body::from(msg.to_json_bytes()));
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

fn error_response(id: Option<crate::protocol::RequestId>, error: RpcError) -> Response {
    let status = status_for(&error);
    json_body(status, &Message::Error { id, error })
}

fn host_allowed(policy: &HostPolicy, host: &str) -> bool {
    // The host name without its port, borrowed from `host`: for `[v6]:port`, the
    // text inside the brackets, compared as `[v6]`.
    let (inner, bracketed) = match host.strip_prefix('[') {
        Some(rest) => (rest.split(']').next().unwrap_or(rest), true),
        None => (host.rsplit_once(':').map(|(h, _)| h).unwrap_or(host), false),
    };
    let is = |candidate: &str| {
        if bracketed {
            candidate.len() == inner.len() + 2
                && candidate.starts_with('[')
                && candidate.ends_with(']')
                && candidate[1..candidate.len() - 1].eq_ignore_ascii_case(inner)
        } else {
            candidate.eq_ignore_ascii_case(inner)
        }
    };
    let local = ["localhost", "127.0.0.1", "[::1]"].into_iter().any(is);
    match policy {
        HostPolicy::Any => true,
        HostPolicy::Localhost => local,
        HostPolicy::AllowList(list) => local || list.iter().any(|h| is(h)),
    }
}

fn origin_host(origin: &str) -> Option<&str> {
    let rest = origin.split_once("://").map(|(_, r)| r)?;
    Some(rest.split('/').next().unwrap_or(rest))
}

fn forbidden(msg: &str) -> Response {
    let e = RpcError::invalid_request(msg);
    json_body(StatusCode::FORBIDDEN, &Message::Error { id: None, error: e })
}

fn challenge(cfg: &HttpConfig, scheme: &str, extra: &str) -> HeaderValue {
    let mut v = scheme.to_owned();
    let mut parts = Vec::new();
    if let Some(m) = &cfg.resource_metadata {
        parts.push(format!("resource_metadata=\"{m}\""));
    }
    if !extra.is_empty() {
        parts.push(extra.to_owned());
    }
    if !parts.is_empty() {
        v.push(' ');
        v.push_str(&parts.join(", "));
    }
    HeaderValue::from_str(&v).unwrap_or_else(|_| HeaderValue::from_static("Bearer"))
}

async fn handle_post(State(st): State<Arc<AppState>>, request: axum::extract::Request) -> Response {
    // The request's own header map, not a copy (the `HeaderMap` extractor clones it).
    let (parts, body) = request.into_parts();
    let headers: HeaderMap = parts.headers;
    let cfg = &st.config;
    // Origin and Host first (DNS rebinding).
    if let Some(origin) = headers.get(header::ORIGIN) {
        let ok = origin.to_str().ok().and_then(origin_host).is_some_and(|h| host_allowed(&cfg.hosts, h));
        if !ok {
            return forbidden("Forbidden: Origin not allowed");
        }
    }
    let host_ok = headers.get(header::HOST).and_then(|h| h.to_str().ok()).is_none_or(|h| host_allowed(&cfg.hosts, h));
    if !host_ok {
        return forbidden("Forbidden: Host not allowed");
    }
    // Authentication.
    let principal = match &cfg.auth {
        None => None,
        Some(a) => match a.authenticate(&headers).await {
            Ok(p) => Some(p),
            Err(e) => {
                let extra = match &e {
                    AuthError::Missing => String::new(),
                    AuthError::Invalid(_) => "error=\"invalid_token\"".to_owned(),
                };
                tracing::debug!(error = %e, "authentication failed");
                let mut r = (StatusCode::UNAUTHORIZED, e.to_string()).into_response();
                r.headers_mut().insert(header::WWW_AUTHENTICATE, challenge(cfg, a.scheme(), &extra));
                return r;
            }
        },
    };
    // Content type.
    let is_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if !is_json {
        return error_response(None, RpcError::parse_error("Content-Type must be application/json"));
    }
    let bytes: Bytes = match axum::body::to_bytes(body, cfg.body_limit).await {
        Ok(b) => b,
        Err(_) => {
            return error_response(None, RpcError::invalid_request(format!("body exceeds {} bytes", cfg.body_limit)))
                .map_status(StatusCode::PAYLOAD_TOO_LARGE);
        }
    };
    let req = match parse_incoming(&bytes) {
        Ok(Incoming::Request(r)) => r,
        Ok(Incoming::Notification { .. }) => return StatusCode::ACCEPTED.into_response(),
        Err((id, e)) => return error_response(id, e),
    };
    let server = st.server.clone();
    let cancel = CancellationToken::new();
    let (tx, mut rx) = unbounded_channel::<Message>();
    let env =
        RequestEnv::new(principal, cancel.clone(), Some(tx)).with_headers(Box::new(McpHeaders::from_headers(&headers)));
    // Run the handler in this task: most requests answer without notifications,
    // and then no task is spawned. If a notification comes first, the handler
    // moves to its own task and the answer becomes an SSE stream. Dropping this
    // future (the client went away) drops the handler too.
    let mut handler = Box::pin(async move { server.handle_request(req, env).await });
    // Declared after the handler so that, if this future is dropped, the token
    // fires before the handler is dropped (locals drop in reverse order).
    let guard = cancel.clone().drop_guard();
    let first = tokio::select! {
        biased;
        msg = &mut handler => match rx.try_recv() {
            // Notifications were queued before the answer: stream them, then the answer.
            Ok(note) => {
                let (tx2, rx2) = unbounded_channel();
                let _ = tx2.send(note);
                while let Ok(m) = rx.try_recv() {
                    let _ = tx2.send(m);
                }
                let _ = tx2.send(msg);
                rx = rx2;
                rx.recv().await
            }
            Err(_) => Some(msg),
        },
        note = rx.recv() => {
            let (tx2, rx2) = unbounded_channel();
            if let Some(n) = note {
                let _ = tx2.send(n);
            }
            let mut rx_old = std::mem::replace(&mut rx, rx2);
            tokio::spawn(async move {
                // Forward what the handler sends until it answers, then the answer.
                // (Anything sent after the answer is dropped: nothing follows a response.)
                loop {
                    tokio::select! {
                        biased;
                        m = rx_old.recv() => match m {
                            Some(m) => {
                                if tx2.send(m).is_err() {
                                    return; // the client went away: drop the handler
                                }
                            }
                            None => {
                                let _ = tx2.send(handler.await);
                                return;
                            }
                        },
                        answer = &mut handler => {
                            while let Ok(m) = rx_old.try_recv() {
                                let _ = tx2.send(m);
                            }
                            let _ = tx2.send(answer);
                            return;
                        }
                    }
                }
            });
            rx.recv().await
        }
    };
    let Some(first) = first else {
        return error_response(None, RpcError::internal("request handler stopped"));
    };
    if first.is_response() {
        drop(guard);
        return match &first {
            Message::Error { error, .. } if error.class == ErrorClass::InsufficientScope => {
                let scopes = error
                    .data
                    .as_ref()
                    .and_then(|d| d.get("requiredScopes"))
                    .and_then(|s| s.as_array())
                    .map(|a| a.iter().filter_map(|v| v.as_str()).collect::<Vec<_>>().join(" "))
                    .unwrap_or_default();
                let mut r = json_body(StatusCode::FORBIDDEN, &first);
                let scheme = cfg.auth.as_ref().map(|a| a.scheme().to_owned()).unwrap_or_else(|| "Bearer".into());
                r.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    challenge(cfg, &scheme, &format!("error=\"insufficient_scope\", scope=\"{scopes}\"")),
                );
                r
            }
            Message::Error { error, .. } => json_body(status_for(error), &first),
            _ => json_body(StatusCode::OK, &first),
        };
    }
    // Notifications came first: stream them, then the response, then end.
    let events = stream::unfold((Some(first), rx, false, Some(guard)), |(pending, mut rx, done, guard)| async move {
        if done {
            drop(guard);
            return None;
        }
        let msg = match pending {
            Some(m) => m,
            None => rx.recv().await?,
        };
        let end = msg.is_response();
        Some((Ok::<_, Infallible>(Event::default().data(msg.to_json())), (None, rx, end, guard)))
    });
    let mut r = Sse::new(events).keep_alive(KeepAlive::new().interval(cfg.keep_alive)).into_response();
    r.headers_mut().insert("x-accel-buffering", HeaderValue::from_static("no"));
    r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

trait MapStatus {
    fn map_status(self, status: StatusCode) -> Self;
}

impl MapStatus for Response {
    fn map_status(mut self, status: StatusCode) -> Self {
        *self.status_mut() = status;
        self
    }
}

/// Binds `addr`, serves `router` at `/mcp`, prints `listening on http://ADDR/mcp`
/// to stderr once accepting, and runs until `shutdown` fires.
pub async fn serve(
    server: Server,
    config: HttpConfig,
    addr: std::net::SocketAddr,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    let app = Router::new().nest("/mcp", router(server.clone(), config));
    eprintln!("listening on http://{local}/mcp");
    let s2 = server.clone();
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            shutdown.await;
            s2.shutdown().await;
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_policy() {
        let p = HostPolicy::Localhost;
        for h in ["localhost", "localhost:8080", "127.0.0.1:1", "[::1]:3000", "[::1]", "LOCALHOST"] {
            assert!(host_allowed(&p, h), "{h}");
        }
        for h in ["evil.example.com", "evil.example.com:80", "127.0.0.2", "localhost.evil.com"] {
            assert!(!host_allowed(&p, h), "{h}");
        }
        assert!(host_allowed(&HostPolicy::AllowList(vec!["mcp.example.com".into()]), "mcp.example.com:443"));
        assert_eq!(origin_host("http://localhost:3000/x"), Some("localhost:3000"));
        let v6 = HostPolicy::AllowList(vec!["[2001:DB8::1]".into()]);
        assert!(host_allowed(&v6, "[2001:db8::1]:443"));
        assert!(host_allowed(&v6, "[2001:db8::1"));
        assert!(!host_allowed(&v6, "[2001:db8::2]:443"));
        assert!(!host_allowed(&v6, "2001:db8::1"));
    }
}
