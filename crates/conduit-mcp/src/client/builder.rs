//! [`ClientBuilder`]: where to connect, how to authenticate, which era, who
//! answers input; `connect` starts the transport and has the era seam
//! settle the era (probing with `server/discover` unless pinned).

use super::client::Client;
use super::connection::{self, Connection, NotificationFn};
use super::credential::Credential;
use super::era;
use super::error::ClientError;
use super::http::HttpWire;
use super::http_options::{self, HttpOptions};
use super::input::{InputHandler, NoInput};
use super::ledger::{self, MemoryLedger, TaskLedger};
use super::oauth::{self, OAuth, StoredTokens};
use super::recorder::Recorder;
use super::stdio::StdioWire;
use super::tracker::FollowSettings;
use super::wire::Wire;
use crate::protocol::{Era, Implementation};
use serde_json::Value;
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
    oauth: Option<OAuth>,
    http: HttpOptions,
    headers: Vec<(String, String)>,
    era: Option<Era>,
    handler: Arc<dyn InputHandler>,
    info: Implementation,
    on_notification: Option<NotificationFn>,
    follow: FollowSettings,
    ledger: Option<Arc<dyn TaskLedger>>,
    calls_in_flight: bool,
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
            oauth: None,
            http: HttpOptions::default(),
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
                events: true,
                now_ms: Arc::new(system_now_ms),
            },
            ledger: Some(Arc::new(MemoryLedger::new())),
            calls_in_flight: false,
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

    /// OAuth 2.1: discover the authorization server from the server's 401,
    /// get a token and keep it fresh (see [`oauth`](super::oauth)). Replaces [`token`](Self::token).
    pub fn oauth(mut self, oauth: OAuth) -> Self {
        self.oauth = Some(oauth);
        self
    }

    /// How long to wait for a connection (TCP and TLS; default 10 s).
    pub fn connect_timeout(mut self, d: Duration) -> Self {
        self.http.connect_timeout = d;
        self
    }

    /// How long a server has to start answering a request, and to send a
    /// whole JSON body (default 30 s). An SSE stream, once started, may stay
    /// open as long as the server keeps it (a task's wait, a listen stream).
    pub fn timeout(mut self, d: Duration) -> Self {
        self.http.timeout = d;
        self
    }

    /// The largest message read: a JSON body, the data of one SSE event, or
    /// one line from a stdio server (default 16 MiB). A stdio server that
    /// writes a longer line is stopped, and the connection ends with an error.
    pub fn max_message_bytes(mut self, n: usize) -> Self {
        self.http.max_message = n;
        self
    }

    /// The longest line of an SSE stream (default 16 MiB).
    pub fn max_line_bytes(mut self, n: usize) -> Self {
        self.http.max_line = n;
        self
    }

    /// Trusts the certificates in this PEM data too (a private CA), besides the webpki roots.
    pub fn ca_certificate_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.http.ca_pem.push(pem.into());
        self
    }

    /// Sends tokens over plain `http://` to hosts that are not loopback.
    /// Off by default: anyone on the path could read and replay them.
    pub fn allow_insecure_http(mut self, allow: bool) -> Self {
        self.http.allow_insecure_http = allow;
        self
    }

    /// Whether a credential sent to this server would cross the network in
    /// clear text: a plain `http://` URL whose host is not this machine (what
    /// [`allow_insecure_http`](Self::allow_insecure_http) lets through). The
    /// host is judged by its parsed address (`127.0.0.0/8`, `::1`) or the name
    /// `localhost`, never by how its name begins. `false` for stdio.
    pub fn credentials_in_clear_text(&self) -> bool {
        match &self.target {
            Target::Http(url) => {
                http_options::parse_url("the server URL", url).is_ok_and(|u| !http_options::private_to(&u))
            }
            Target::Stdio(..) => false,
        }
    }

    /// Logs out of this server (HTTP only): revokes the stored OAuth tokens
    /// where the authorization server can, and forgets them. `Ok(false)`
    /// when none were stored.
    pub async fn logout(self) -> Result<bool, ClientError> {
        let (Target::Http(url), Some(o)) = (&self.target, &self.oauth) else { return Ok(false) };
        oauth::logout(o, url, self.http.clone()).await
    }

    /// Logs in to this server (HTTP, with [`oauth`](Self::oauth)) without
    /// opening an MCP session: protected resource metadata, authorization
    /// server metadata, registration, authorization through the
    /// [`Authorizer`](oauth::Authorizer) (or the client credentials grant),
    /// token; the tokens are stored in the [`OAuth`]'s store and returned.
    /// A server that answers some requests without a token can be logged
    /// into as well: no refusal is needed to start. Tokens already stored
    /// are not used (a login gets new ones).
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), conduit_mcp::client::ClientError> {
    /// use conduit_mcp::client::ClientBuilder;
    /// use conduit_mcp::client::oauth::{LoopbackBrowser, OAuth};
    /// let browser = LoopbackBrowser::new(|url| {
    ///     eprintln!("open {url}");
    ///     Ok(())
    /// });
    /// // The clones share one credential store (memory here; any CredentialStore).
    /// let oauth = OAuth::new().authorizer(browser).client_name("my agent");
    /// let server = "https://mcp.example.com/mcp";
    /// let tokens = ClientBuilder::http(server).oauth(oauth.clone()).login().await?;
    /// println!("logged in at {} with {:?}", tokens.issuer, tokens.scopes);
    /// // Connections use the stored tokens and refresh them as needed.
    /// let client = ClientBuilder::http(server).oauth(oauth).connect().await?;
    /// # let _ = client; Ok(()) }
    /// ```
    pub async fn login(self) -> Result<StoredTokens, ClientError> {
        let (Target::Http(url), Some(o)) = (&self.target, &self.oauth) else {
            return Err(ClientError::Input("a login needs an HTTP server and OAuth (ClientBuilder::oauth)".into()));
        };
        oauth::login(o, url, self.http.clone()).await
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

    /// Whether to follow tasks by the Events extension's `task.status_changed`
    /// where the server offers it and the listen push did not take the task
    /// (default on; polling otherwise): every such task shares the client's
    /// one `events/stream`. Each event costs one `tasks/get`; nothing is
    /// polled between events.
    pub fn follow_by_events(mut self, on: bool) -> Self {
        self.follow.events = on;
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

    /// Where the client writes down the tasks it creates (default: a
    /// [`MemoryLedger`], which lasts as long as the process). A
    /// [`SqliteLedger`](super::ledger::SqliteLedger) keeps them across
    /// restarts, for [`Client::unfinished`] to resume. HTTP servers only: a
    /// stdio server is a child process, and its tasks are its own.
    pub fn ledger(mut self, ledger: impl TaskLedger + 'static) -> Self {
        self.ledger = Some(Arc::new(ledger));
        self
    }

    /// [`ledger`](Self::ledger) with a ledger shared with other clients.
    pub fn shared_ledger(mut self, ledger: Arc<dyn TaskLedger>) -> Self {
        self.ledger = Some(ledger);
        self
    }

    /// Writes each `tools/call` to the ledger before it is sent, too (off by
    /// default: two more writes per call). A process killed between sending
    /// a call and reading its answer then leaves an entry that
    /// [`Client::unfinished`] reports as interrupted (if the server made a
    /// task, its id never arrived), instead of nothing. The CLI turns it on.
    pub fn record_calls_in_flight(mut self, on: bool) -> Self {
        self.calls_in_flight = on;
        self
    }

    /// Writes no task down: [`Client::unfinished`] finds nothing.
    pub fn no_ledger(mut self) -> Self {
        self.ledger = None;
        self
    }

    /// Connects: starts the transport and settles the era: the one pinned, or
    /// `server/discover` first and `initialize` when the server does not speak `2026-07-28`.
    pub async fn connect(self) -> Result<Client, ClientError> {
        let (requests_tx, requests_rx) = mpsc::unbounded_channel();
        let mut recorder = None;
        let wire: Arc<dyn Wire> = match &self.target {
            Target::Http(url) => {
                let credential = match (&self.oauth, &self.token) {
                    (Some(o), _) => {
                        let parsed = http_options::parse_url("the server URL", url)?;
                        let session = oauth::session::Session::new(o.clone(), parsed, self.http.clone())?;
                        Credential::OAuth(Arc::new(session))
                    }
                    (None, Some(t)) => Credential::Token(t.clone()),
                    (None, None) => Credential::None,
                };
                recorder = self.ledger.clone().map(|l| {
                    let now = self.follow.now_ms.clone();
                    Recorder::new(l, ledger::server_key(url), credential.clone(), now, self.calls_in_flight)
                });
                Arc::new(HttpWire::new(url.clone(), self.http.clone(), credential, self.headers.clone(), requests_tx)?)
            }
            Target::Stdio(p, args) => Arc::new(StdioWire::spawn(p, args, self.http.max_message, requests_tx)?),
        };
        let conn = Arc::new(Connection::new(wire, self.handler, self.on_notification));
        let (era, server) = era::choose(&conn, self.era, &self.info).await?;
        connection::answer_unsolicited(Arc::downgrade(&conn), requests_rx, server.version.clone());
        Ok(Client::new(server, era, self.follow, recorder))
    }
}
