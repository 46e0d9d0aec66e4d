//! What can go wrong on the client side, as one enum.

use crate::protocol::RpcError;

/// A client failure. Tool errors (`isError`) and failed or cancelled tasks
/// are not errors: they are values of [`ToolOutcome`](super::ToolOutcome).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The server answered with a JSON-RPC error.
    #[error("server error {}: {}", .0.code, .0.message)]
    Rpc(RpcError),
    /// The connection could not be made or broke (refused, reset, closed mid-stream).
    #[error("connection: {0}")]
    Transport(String),
    /// The server sent something that is not valid MCP (bad JSON, wrong shape, unknown `resultType`).
    #[error("protocol: {0}")]
    Protocol(String),
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
    /// A tool was refused locally (an invalid `x-mcp-header` annotation) or is unknown.
    #[error("tool: {0}")]
    Tool(String),
}

impl ClientError {
    /// The JSON-RPC error, when the server sent one.
    pub fn rpc(&self) -> Option<&RpcError> {
        match self {
            Self::Rpc(e) => Some(e),
            _ => None,
        }
    }
}

impl From<RpcError> for ClientError {
    fn from(e: RpcError) -> Self {
        Self::Rpc(e)
    }
}
