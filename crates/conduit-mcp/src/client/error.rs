//! What can go wrong on the client side: [`ClientError`], and the two
//! failures that keep the error underneath them ([`TransportError`],
//! [`ProtocolError`]) as their [`source`](std::error::Error::source).
//!
//! Every message reads whole on its own (`{e}` names the cause too); the
//! source is there for code that inspects it (an `io::Error`, a
//! `reqwest::Error`, a `serde_json::Error`).

use super::ledger::LedgerError;
use super::sanitize::shown;
use crate::protocol::RpcError;
use std::fmt;

/// A client failure. Tool errors (`isError`) and failed or cancelled tasks
/// are not errors: they are values of [`ToolOutcome`](super::ToolOutcome).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The server answered with a JSON-RPC error.
    #[error("server error {}: {}", .0.code, .0.message)]
    Rpc(RpcError),
    /// The connection could not be made or broke (refused, reset, closed
    /// mid-stream, a limit passed), or the server answered outside JSON-RPC.
    #[error("connection: {0}")]
    Transport(#[source] TransportError),
    /// The server sent something that is not valid MCP (bad JSON, wrong shape, unknown `resultType`).
    #[error("protocol: {0}")]
    Protocol(#[source] ProtocolError),
    /// HTTP 401/403: the token is missing, invalid or lacks a scope.
    #[error("not authorized (HTTP {status})")]
    Unauthorized {
        /// The HTTP status (401 or 403).
        status: u16,
    },
    /// The server needs an OAuth login this client cannot start (no
    /// [`Authorizer`](super::oauth::Authorizer)): the person logs in first
    /// (`conduit-mcp login URL`). Holds the server URL.
    #[error("{0} requires authorization: log in first")]
    LoginRequired(String),
    /// The server asks for more scope than the stored tokens carry, and this
    /// client cannot start a login (no authorizer): log in again asking for
    /// `scopes` (what was held plus what the server asks for).
    #[error("{server} asks for more scope: log in again for {}", .scopes.join(" "))]
    ScopeRequired {
        /// The server URL.
        server: String,
        /// The scopes to ask for.
        scopes: Vec<String>,
    },
    /// The server sends the login to an authorization server this client may
    /// not use ([`OAuth::issuer`](super::oauth::OAuth::issuer)); nothing was
    /// sent to it.
    #[error(
        "{} sends its login to the authorization server {}, not to {}: nothing was sent there",
        shown(.server),
        shown(.issuer),
        shown(&.allowed.join(" or "))
    )]
    IssuerNotAllowed {
        /// The server URL.
        server: String,
        /// The authorization server its metadata names first.
        issuer: String,
        /// The authorization servers this client may use.
        allowed: Vec<String>,
    },
    /// OAuth failed: discovery, registration, the authorization server's
    /// answer, or a check the client makes (issuer, `iss`, `resource`, PKCE support).
    #[error("oauth: {0}")]
    OAuth(String),
    /// A credential would go out in clear text to a host that is not this machine.
    #[error("{0}")]
    Insecure(String),
    /// The server does not know the task (never existed, expired, purged, or not ours).
    #[error("task not found: {0}")]
    TaskNotFound(String),
    /// The task outlived `createdAt + ttlMs` without reaching a terminal status.
    #[error("the task did not finish within its TTL")]
    Expired,
    /// The task stayed `input_required` with no new keys for too long.
    #[error("the task is stuck waiting for input it already received")]
    Stuck,
    /// The input handler could not answer (no input allowed, unsupported kind, user aborted).
    #[error("input: {0}")]
    Input(String),
    /// The server does not offer what was asked on this connection (an
    /// extension it did not advertise, or one not defined for the era
    /// spoken); nothing was sent.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A tool was refused locally (an invalid `x-mcp-header` annotation) or is unknown.
    #[error("tool: {0}")]
    Tool(String),
    /// The task ledger could not be read or written. When it failed to
    /// record a task the server had created, `task_id` names that task: it
    /// runs on, and [`Client::task`](super::Client::task) follows it.
    #[error("{source}")]
    Ledger {
        /// What went wrong.
        source: LedgerError,
        /// The task that was not recorded (a bearer capability: not in the message).
        task_id: Option<String>,
    },
}

impl ClientError {
    /// The JSON-RPC error, when the server sent one.
    pub fn rpc(&self) -> Option<&RpcError> {
        match self {
            Self::Rpc(e) => Some(e),
            _ => None,
        }
    }

    /// A transport failure with nothing underneath it.
    pub(crate) fn transport(message: impl Into<String>) -> Self {
        Self::Transport(TransportError::new(message))
    }

    /// A protocol failure with nothing underneath it.
    pub(crate) fn protocol(message: impl Into<String>) -> Self {
        Self::Protocol(ProtocolError::new(message))
    }

    /// `value` is not the `what` it should be (the parser's error kept as the source).
    pub(crate) fn malformed(what: &str, e: serde_json::Error) -> Self {
        Self::Protocol(ProtocolError::new(format!("not {what}: {e}")).caused_by(e))
    }
}

impl From<RpcError> for ClientError {
    fn from(e: RpcError) -> Self {
        Self::Rpc(e)
    }
}

/// What an error keeps of the error underneath it.
type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why a connection could not be made or broke: what the client was doing
/// (its `Display`), and the I/O or HTTP error underneath, when there is one
/// (its [`source`](std::error::Error::source)).
#[derive(Debug)]
pub struct TransportError {
    message: String,
    status: Option<u16>,
    timed_out: bool,
    cause: Option<Cause>,
}

impl TransportError {
    /// A failure described by `message` alone.
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Self { message: message.into(), status: None, timed_out: false, cause: None }
    }

    /// The server answered with HTTP `status` and no JSON-RPC message.
    pub(crate) fn http(status: u16, message: impl Into<String>) -> Self {
        Self { status: Some(status), ..Self::new(message) }
    }

    /// The server did not answer in time.
    pub(crate) fn timeout(message: impl Into<String>) -> Self {
        Self { timed_out: true, ..Self::new(message) }
    }

    /// Keeps `cause` as this error's source.
    pub(crate) fn caused_by(mut self, cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.cause = Some(Box::new(cause));
        self
    }

    /// The HTTP status, when the server answered with one but sent no JSON-RPC message.
    pub fn status(&self) -> Option<u16> {
        self.status
    }

    /// Whether the server (or the network) did not answer within the client's timeout.
    pub fn is_timeout(&self) -> bool {
        self.timed_out
    }
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TransportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cause.as_deref().map(|c| c as &(dyn std::error::Error + 'static))
    }
}

/// What the server sent that is not valid MCP (its `Display`), and the
/// parser's error underneath, when there is one (its [`source`](std::error::Error::source)).
#[derive(Debug)]
pub struct ProtocolError {
    message: String,
    cause: Option<Cause>,
}

impl ProtocolError {
    /// A failure described by `message` alone.
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Self { message: message.into(), cause: None }
    }

    /// Keeps `cause` as this error's source.
    pub(crate) fn caused_by(mut self, cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.cause = Some(Box::new(cause));
        self
    }
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ProtocolError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cause.as_deref().map(|c| c as &(dyn std::error::Error + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error;

    #[test]
    fn a_malformed_answer_keeps_the_parsers_error() {
        let parse = serde_json::from_str::<u32>("\"seven\"").unwrap_err();
        let e = ClientError::malformed("a count", parse);
        assert!(e.to_string().starts_with("protocol: not a count: invalid type"), "{e}");
        let protocol = e.source().expect("the ProtocolError");
        assert!(protocol.source().expect("the parser's error").is::<serde_json::Error>());
    }

    #[test]
    fn an_http_answer_without_json_rpc_names_its_status() {
        let e = TransportError::http(502, "HTTP 502 without a JSON-RPC body");
        assert_eq!(e.status(), Some(502));
        assert!(!e.is_timeout());
        assert!(e.source().is_none());
    }
}
