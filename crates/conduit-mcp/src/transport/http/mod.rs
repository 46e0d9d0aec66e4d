//! Streamable HTTP: an axum [`Router`] you mount anywhere in your app.
//!
//! Both eras on one endpoint. Modern (2026-07-28): POST only (GET and DELETE
//! outside a legacy session get 405); each POST carries one JSON-RPC request
//! or notification; the answer is plain JSON, or an SSE stream when
//! notifications (progress, log, listen traffic) precede it; a client that
//! disconnects cancels its request. Legacy (2025-11-25): `initialize` mints
//! `Mcp-Session-Id`; inside the session POST, GET (its SSE stream, resumable
//! with `Last-Event-ID`) and DELETE (ends it) are served; see `legacy_lane.rs`.
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
//! // Inside your own axum app:
//! let app: axum::Router = axum::Router::new().nest("/mcp", http::router(server.clone(), HttpConfig::default()));
//! # let _ = app;
//! // Or on its own, learning the address first:
//! let bound = http::bind("127.0.0.1:0".parse().expect("address")).await?;
//! eprintln!("listening on http://{}/mcp", bound.local_addr());
//! bound.serve(server, HttpConfig::default(), async { let _ = tokio::signal::ctrl_c().await; }).await
//! # }
//! ```

mod admit;
mod body;
pub(crate) mod config_toml;
mod conn;
mod conn_auth;
mod guard;
mod headers;
mod legacy_lane;
mod legacy_stream;
mod peer;
mod post;
mod route;
mod serve;
mod status;
mod stream_auth;
mod stream_cap;
mod throttle;
#[cfg(feature = "tls")]
mod tls;
#[cfg(feature = "oauth")]
mod well_known;

pub use guard::HostPolicy;
pub use serve::{Bound, bind, serve};
pub use status::status_for;
#[cfg(feature = "tls")]
pub use tls::TlsConfig;
#[cfg(feature = "oauth")]
pub use well_known::well_known_router;

use crate::auth::Authenticate;
use crate::server::Server;
use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;

use std::sync::Arc;
use std::time::Duration;

/// HTTP transport options.
#[derive(Clone)]
#[non_exhaustive]
#[must_use]
pub struct HttpConfig {
    /// Host and Origin policy.
    pub hosts: HostPolicy,
    /// Largest accepted body in bytes (default 4 MiB); larger gets 413.
    pub body_limit: usize,
    /// How requests are authenticated (`None`: every principal is `None`).
    pub auth: Option<Arc<dyn Authenticate>>,
    /// The protected-resource metadata URL named in `WWW-Authenticate`.
    pub resource_metadata: Option<String>,
    /// The Protected Resource Metadata served at its well-known paths, and the
    /// scopes named in challenges (set by [`HttpConfig::oauth`]).
    #[cfg(feature = "oauth")]
    pub protected_resource: Option<Arc<crate::auth::oauth::ProtectedResource>>,
    /// Interval of SSE keep-alive comments on long streams (default 15 s). A listen
    /// or GET stream also checks its credentials at each one once their clock says
    /// they lapsed (see [`Principal::valid_until_ms`](crate::auth::Principal::valid_until_ms)).
    pub keep_alive: Duration,
    /// How long a connection may take to send a request head, from the
    /// accept or from its first byte after idling (default 10 s). Applied by
    /// [`Bound::serve`], like the four below.
    pub header_timeout: Duration,
    /// How long a request body may take to arrive after its head (default
    /// 30 s); later gets 408.
    pub body_timeout: Duration,
    /// How long a kept-alive connection may wait for its next request
    /// (default 60 s). A request in flight (a listen stream) never idles.
    pub idle_timeout: Duration,
    /// Connections served at once (default 512); more wait in the listen
    /// backlog. Keep it below the process's file-descriptor limit.
    pub max_connections: usize,
    /// Long-lived streams open at once on this endpoint (default 256):
    /// `subscriptions/listen` streams and 2025-11-25 GET streams together, kept
    /// below [`max_connections`](Self::max_connections) whatever is set here; one
    /// more is refused with `-32000` (HTTP 429 with `Retry-After`).
    pub max_listen_streams: usize,
    /// Long-lived streams (listen and GET streams together) one client holds at
    /// once (default 16): a client is its principal, or without authentication its
    /// address (IPv6 by its /64). One more is refused with `-32000` (HTTP 429 with
    /// `Retry-After`).
    pub max_listen_streams_per_client: usize,
    /// How long a listen or GET stream may carry nothing (keep-alive comments do
    /// not count) before the server ends it (default 10 min): a listen stream with
    /// its closing result; the client opens a new one if it still wants one.
    pub listen_idle_timeout: Duration,
    /// How many JSON-RPC requests one client (its principal; without
    /// authentication its address) may POST, per node, of either era (default
    /// `None`: no rate). One past it is answered `-32000` with
    /// `data.retryAfterMs`, HTTP 429 with `Retry-After`.
    pub request_rate: Option<crate::quota::RateLimit>,
    /// How many failed authentications one address may make, per node, with an
    /// authenticator configured (default 30 a minute, a burst of 20; `None`: no
    /// budget). Checked before the credentials are (an address past it gets
    /// `-32000`, HTTP 429 with `Retry-After`, and its credentials are never looked
    /// at, so made-up tokens cannot make the server ask an authorization server),
    /// and charged with each 400 or 401. Counts by address (IPv6 by its /64); a
    /// router mounted without connection info has none and no budget.
    pub auth_failure_rate: Option<crate::quota::RateLimit>,
    /// How long requests in flight may take to finish after shutdown begins
    /// (default 10 s); then their connections are dropped.
    pub shutdown_timeout: Duration,
    /// Whether `tasks/get`, `tasks/update` and `tasks/cancel` must carry `Mcp-Name`
    /// (default `false`: a missing header is accepted, since the body's `taskId`
    /// names the task; a header that does not match it is refused either way
    /// with `-32020`). Set it when a gateway in front routes by the header.
    pub require_task_name: bool,
    /// HTTPS: [`Bound::serve`] speaks TLS with this certificate (feature `tls`);
    /// the handshake must finish within [`header_timeout`](Self::header_timeout).
    #[cfg(feature = "tls")]
    pub tls: Option<TlsConfig>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            hosts: HostPolicy::Localhost,
            body_limit: 4 * 1024 * 1024,
            auth: None,
            resource_metadata: None,
            #[cfg(feature = "oauth")]
            protected_resource: None,
            keep_alive: Duration::from_secs(15),
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            max_connections: 512,
            max_listen_streams: 256,
            max_listen_streams_per_client: 16,
            listen_idle_timeout: Duration::from_secs(600),
            request_rate: None,
            auth_failure_rate: crate::quota::RateLimit::per_minute(30).map(|r| r.burst(20)),
            shutdown_timeout: Duration::from_secs(10),
            require_task_name: false,
            #[cfg(feature = "tls")]
            tls: None,
        }
    }
}

impl std::fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpConfig")
            .field("hosts", &self.hosts)
            .field("body_limit", &self.body_limit)
            .field("auth", &self.auth.is_some())
            .field("header_timeout", &self.header_timeout)
            .field("body_timeout", &self.body_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("max_connections", &self.max_connections)
            .field("max_listen_streams", &self.max_listen_streams)
            .field("max_listen_streams_per_client", &self.max_listen_streams_per_client)
            .field("listen_idle_timeout", &self.listen_idle_timeout)
            .field("request_rate", &self.request_rate)
            .field("auth_failure_rate", &self.auth_failure_rate)
            .field("shutdown_timeout", &self.shutdown_timeout)
            .field("require_task_name", &self.require_task_name)
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

    /// Makes the endpoint an OAuth 2.1 resource server: `oauth` authenticates
    /// every request, its Protected Resource Metadata is served (by
    /// [`Bound::serve`] at its well-known paths; with [`router`], merge
    /// [`well_known_router`] at your app's root), and every challenge names it.
    #[cfg(feature = "oauth")]
    pub fn oauth(mut self, oauth: crate::auth::oauth::OAuth) -> Self {
        let pr = oauth.protected_resource().clone();
        self.resource_metadata = Some(pr.metadata_url().to_owned());
        self.protected_resource = Some(Arc::new(pr));
        self.auth = Some(Arc::new(oauth));
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

    /// Sets the request-head timeout.
    pub fn header_timeout(mut self, limit: Duration) -> Self {
        self.header_timeout = limit;
        self
    }

    /// Sets the request-body timeout.
    pub fn body_timeout(mut self, limit: Duration) -> Self {
        self.body_timeout = limit;
        self
    }

    /// Sets the idle keep-alive timeout.
    pub fn idle_timeout(mut self, limit: Duration) -> Self {
        self.idle_timeout = limit;
        self
    }

    /// Sets the connection limit.
    pub fn max_connections(mut self, n: usize) -> Self {
        self.max_connections = n;
        self
    }

    /// Sets the cap on all listen streams (see [`max_listen_streams`](Self::max_listen_streams)).
    pub fn max_listen_streams(mut self, n: usize) -> Self {
        self.max_listen_streams = n;
        self
    }

    /// Sets the cap on one client's listen streams.
    pub fn max_listen_streams_per_client(mut self, n: usize) -> Self {
        self.max_listen_streams_per_client = n;
        self
    }

    /// Sets how long a listen stream may carry nothing before it is ended.
    pub fn listen_idle_timeout(mut self, limit: Duration) -> Self {
        self.listen_idle_timeout = limit;
        self
    }

    /// Sets the request rate per client (see [`request_rate`](Self::request_rate)).
    pub fn request_rate(mut self, rate: Option<crate::quota::RateLimit>) -> Self {
        self.request_rate = rate;
        self
    }

    /// Sets the budget of failed authentications per address (see
    /// [`auth_failure_rate`](Self::auth_failure_rate)); `None` removes it.
    pub fn auth_failure_rate(mut self, rate: Option<crate::quota::RateLimit>) -> Self {
        self.auth_failure_rate = rate;
        self
    }

    /// Serves HTTPS with this certificate (see [`TlsConfig`]).
    #[cfg(feature = "tls")]
    pub fn tls(mut self, tls: TlsConfig) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Requires `Mcp-Name` on `tasks/get`, `tasks/update` and `tasks/cancel`
    /// (see [`require_task_name`](Self::require_task_name)).
    pub fn require_task_name(mut self, required: bool) -> Self {
        self.require_task_name = required;
        self
    }

    /// Sets the shutdown deadline.
    pub fn shutdown_timeout(mut self, limit: Duration) -> Self {
        self.shutdown_timeout = limit;
        self
    }
}

/// The scopes every request needs, for challenges (`None` without OAuth).
pub(super) fn base_scopes(cfg: &HttpConfig) -> Option<Vec<String>> {
    #[cfg(feature = "oauth")]
    if let Some(pr) = &cfg.protected_resource {
        return pr.scope().map(|s| s.split(' ').map(str::to_owned).collect());
    }
    let _ = cfg;
    None
}

pub(super) struct AppState {
    pub(super) server: Server,
    pub(super) config: HttpConfig,
    /// The long-lived streams (listen and GET) each client holds (`stream_cap`).
    pub(super) streams: crate::quota::Counts<crate::quota::ClientKey>,
    /// Each client's request rate (`throttle`), when one is configured.
    pub(super) request_rates: Option<crate::quota::Rates>,
    /// Each address's failed authentications (`admit`), with an authenticator and a budget.
    pub(super) auth_failures: Option<crate::quota::Rates>,
}

/// A router serving MCP at its root: mount it with `Router::nest("/mcp", ...)`.
///
/// Starts the server's extensions (see [`Server::start`]).
pub fn router(server: Server, config: HttpConfig) -> Router {
    let state = started(server, config);
    Router::new()
        .route(
            "/",
            post(post::handle_post)
                .get(legacy_lane::handle_get)
                .delete(legacy_lane::handle_delete)
                .fallback(method_not_allowed),
        )
        .with_state(state)
}

/// Starts the server's extensions and wraps it for the handlers.
fn started(server: Server, config: HttpConfig) -> Arc<AppState> {
    server.start();
    let request_rates = config.request_rate.map(crate::quota::Rates::new);
    let auth_failures = config.auth_failure_rate.filter(|_| config.auth.is_some()).map(crate::quota::Rates::new);
    Arc::new(AppState { server, config, streams: Default::default(), request_rates, auth_failures })
}

async fn method_not_allowed() -> Response {
    (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "POST")]).into_response()
}
