//! [`ClientBuilder`]: where to connect, how to authenticate, which era, who
//! answers input; `connect` decides the era (probing with `server/discover`
//! unless pinned).

use super::client::{Client, FollowSettings, Inner, NotificationFn, ServerInfo};
use super::error::ClientError;
use super::http::HttpWire;
use super::input::{InputHandler, NoInput};
use super::legacy;
use super::stdio::StdioWire;
use super::wire::Wire;
use crate::protocol::methods::DISCOVER;
use crate::protocol::version::{LEGACY_VERSIONS, MODERN_VERSIONS};
use crate::protocol::{Era, ErrorCode, Implementation, LATEST_PROTOCOL_VERSION};
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc;

#[derive(Debug, Clone)]
enum Target {
    Http(String),
    Stdio(String, Vec<String>),
}

/// Builds a [`Client`].
///
/// ```no_run
/// # async fn demo() -> Result<(), conduit_mcp::client::ClientError> {
/// use conduit_mcp::client::{ClientBuilder, ToolOutcome};
/// let client = ClientBuilder::http("http://127.0.0.1:8080/mcp").token("secret").connect().await?;
/// match client.call_tool_to_end("build", serde_json::json!({ "ref": "main" })).await? {
///     ToolOutcome::Completed(r) => println!("{:?}", r.content),
///     other => println!("ended: {other:?}"),
/// }
/// # Ok(()) }
/// ```
#[must_use]
pub struct ClientBuilder {
    target: Target,
    token: Option<String>,
    headers: Vec<(String, String)>,
    era: Option<Era>,
    handler: Arc<dyn InputHandler>,
    info: Implementation,
    on_notification: Option<NotificationFn>,
    follow: FollowSettings,
}

impl std::fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBuilder").field("target", &self.target).field("era", &self.era).finish_non_exhaustive()
    }
}

fn system_now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl ClientBuilder {
    fn new(target: Target) -> Self {
        Self {
            target,
            token: None,
            headers: Vec::new(),
            era: None,
            handler: Arc::new(NoInput),
            info: Implementation::new("conduit-mcp-client", env!("CARGO_PKG_VERSION")),
            on_notification: None,
            follow: FollowSettings {
                default_poll: Duration::from_secs(1),
                max_poll: Duration::from_secs(30),
                stuck_polls: 60,
                push: true,
                now_ms: Arc::new(system_now_ms),
            },
        }
    }

    /// A Streamable HTTP endpoint (`http://host:port/mcp`).
    pub fn http(url: impl Into<String>) -> Self {
        Self::new(Target::Http(url.into()))
    }

    /// A server started as a child process speaking stdio.
    pub fn stdio(program: impl Into<String>, args: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self::new(Target::Stdio(program.into(), args.into_iter().map(Into::into).collect()))
    }

    /// `Authorization: Bearer TOKEN` on every HTTP request.
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// An extra header on every HTTP request.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Pins the era (default: probe with `server/discover`, fall back to `initialize`).
    pub fn era(mut self, era: Era) -> Self {
        self.era = Some(era);
        self
    }

    /// Who answers the server's questions (default: [`NoInput`], which declares nothing).
    pub fn input_handler(mut self, handler: impl InputHandler + 'static) -> Self {
        self.handler = Arc::new(handler);
        self
    }

    /// The `clientInfo` sent to the server.
    pub fn client_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.info = Implementation::new(name, version);
        self
    }

    /// Called for request-scoped notifications (progress, log messages);
    /// requests then carry a `progressToken`.
    pub fn on_notification(mut self, f: impl Fn(&str, &Value) + Send + Sync + 'static) -> Self {
        self.on_notification = Some(Arc::new(f));
        self
    }

    /// The poll interval when the server suggests none (default 1 s).
    pub fn poll_interval(mut self, d: Duration) -> Self {
        self.follow.default_poll = d;
        self
    }

    /// The cap of the poll back-off (default 30 s; never below the server's `pollIntervalMs`).
    pub fn max_poll_interval(mut self, d: Duration) -> Self {
        self.follow.max_poll = d;
        self
    }

    /// After how many observations of `input_required` with no new key the
    /// follower gives up with [`ClientError::Stuck`] (default 60).
    pub fn stuck_after(mut self, observations: u32) -> Self {
        self.follow.stuck_polls = observations;
        self
    }

    /// Whether to follow tasks by push over `subscriptions/listen` (default on; polling otherwise).
    pub fn push(mut self, on: bool) -> Self {
        self.follow.push = on;
        self
    }

    /// The wall clock (ms since the epoch) the TTL deadline is checked against.
    pub fn wall_clock(mut self, now_ms: impl Fn() -> i64 + Send + Sync + 'static) -> Self {
        self.follow.now_ms = Arc::new(now_ms);
        self
    }

    /// Connects: starts the transport and settles the era.
    pub async fn connect(self) -> Result<Client, ClientError> {
        let (req_tx, req_rx) = mpsc::unbounded_channel();
        let wire: Arc<dyn Wire> = match &self.target {
            Target::Http(url) => Arc::new(HttpWire::new(url.clone(), self.token.clone(), self.headers.clone())?),
            Target::Stdio(p, args) => Arc::new(StdioWire::spawn(p, args, req_tx)?),
        };
        let server = match self.era {
            Some(Era::Legacy) => self.legacy(&wire).await?,
            Some(_) => self.modern(&wire, LATEST_PROTOCOL_VERSION, true).await?,
            None => match self.modern(&wire, LATEST_PROTOCOL_VERSION, false).await {
                Ok(s) => s,
                Err(ClientError::Rpc(_) | ClientError::Protocol(_)) => self.legacy(&wire).await?,
                Err(ClientError::Transport(m)) if m.starts_with("HTTP ") => self.legacy(&wire).await?,
                Err(e) => return Err(e),
            },
        };
        let inner = Arc::new(Inner::new(wire, server, self.info, self.handler, self.on_notification, self.follow));
        tokio::spawn(drain_server_requests(Arc::downgrade(&inner), req_rx));
        Ok(Client { inner })
    }

    fn provisional(&self, wire: &Arc<dyn Wire>, era: Era, version: &str) -> Inner {
        let server = ServerInfo { era: Some(era), version: version.into(), ..ServerInfo::default() };
        Inner::new(wire.clone(), server, self.info.clone(), self.handler.clone(), None, self.follow.clone())
    }

    /// `server/discover`; on `-32022` retries once with a modern version the server lists.
    async fn modern(&self, wire: &Arc<dyn Wire>, version: &str, pinned: bool) -> Result<ServerInfo, ClientError> {
        let mut version = version.to_owned();
        for attempt in 0..2 {
            let probe = self.provisional(wire, Era::Modern, &version);
            match probe.request(DISCOVER, Map::new(), Vec::new()).await {
                Ok(r) => return Ok(server_info(Era::Modern, version, &r)),
                Err(ClientError::Rpc(e)) if e.error_code() == ErrorCode::UnsupportedProtocolVersion && attempt == 0 => {
                    let supported: Vec<String> = e
                        .data
                        .as_ref()
                        .and_then(|d| d.get("supported"))
                        .and_then(Value::as_array)
                        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                        .unwrap_or_default();
                    match supported.iter().find(|v| MODERN_VERSIONS.contains(&v.as_str())) {
                        Some(v) => version = v.clone(),
                        None if pinned => return Err(ClientError::Rpc(e)),
                        None if supported.iter().any(|v| LEGACY_VERSIONS.contains(&v.as_str())) => {
                            return Err(ClientError::Rpc(e));
                        }
                        None => return Err(ClientError::Protocol("no protocol version in common".into())),
                    }
                }
                Err(e) if pinned => {
                    // A pinned modern client works without discover (it is optional for clients).
                    if matches!(e, ClientError::Rpc(_)) {
                        return Ok(ServerInfo { era: Some(Era::Modern), version, ..ServerInfo::default() });
                    }
                    return Err(e);
                }
                Err(e) => return Err(e),
            }
        }
        Err(ClientError::Protocol("the server rejected every protocol version offered".into()))
    }

    async fn legacy(&self, wire: &Arc<dyn Wire>) -> Result<ServerInfo, ClientError> {
        let probe = self.provisional(wire, Era::Legacy, LEGACY_VERSIONS[0]);
        let (version, result) = legacy::initialize(&probe).await?;
        let mut info = server_info(Era::Legacy, version, &result);
        info.implementation = result.get("serverInfo").cloned();
        Ok(info)
    }
}

fn server_info(era: Era, version: String, r: &Value) -> ServerInfo {
    ServerInfo {
        era: Some(era),
        version,
        capabilities: r.get("capabilities").cloned().unwrap_or(Value::Null),
        instructions: r.get("instructions").and_then(Value::as_str).map(str::to_owned),
        implementation: r
            .pointer("/_meta/io.modelcontextprotocol~1serverInfo")
            .or_else(|| r.get("serverInfo"))
            .cloned(),
    }
}

/// Answers requests a stdio server sends outside any request of ours.
async fn drain_server_requests(
    inner: std::sync::Weak<Inner>,
    mut rx: mpsc::UnboundedReceiver<crate::protocol::jsonrpc::Request>,
) {
    while let Some(req) = rx.recv().await {
        let Some(inner) = inner.upgrade() else { return };
        tokio::spawn(async move {
            if let Err(e) = legacy::answer_server_request(&inner, req).await {
                tracing::debug!("could not answer a server request: {e}");
            }
        });
    }
}
