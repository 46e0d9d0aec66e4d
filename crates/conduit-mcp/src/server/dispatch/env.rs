//! What a transport hands the server beside the request body.

use crate::auth::Principal;
use crate::protocol::RpcError;
use crate::protocol::jsonrpc::Message;
use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

/// A transport's header rules, which dispatch calls at the points the check
/// order puts them (HTTP implements them; stdio has none).
pub trait HeaderCheck: Send + Sync {
    /// The `MCP-Protocol-Version` header as sent, for the era decision.
    fn protocol_version(&self) -> Option<&str>;

    /// Checks `MCP-Protocol-Version` and `Mcp-Method` against the body.
    fn check_base(&self, meta_version: &str, method: &str) -> Result<(), RpcError>;

    /// Checks `Mcp-Name` (when the method mirrors a value) and the `Mcp-Param-*`
    /// headers of the tool arguments that are mirrored (header name, body value).
    fn check_routing(&self, name: Option<&str>, params: &[(&str, &Value)]) -> Result<(), RpcError>;
}

/// What the transport knows about a request besides its body.
#[derive(Default)]
#[non_exhaustive]
pub struct RequestEnv {
    /// The authenticated caller (`None` without authentication).
    pub principal: Option<Principal>,
    /// Header rules (HTTP only).
    pub headers: Option<Box<dyn HeaderCheck>>,
    /// Fires when the client goes away or cancels.
    pub cancel: CancellationToken,
    /// Where request-scoped notifications (progress, log, listen) go.
    pub out: Option<UnboundedSender<Message>>,
}

impl std::fmt::Debug for RequestEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestEnv")
            .field("principal", &self.principal)
            .field("headers", &self.headers.is_some())
            .finish_non_exhaustive()
    }
}

impl RequestEnv {
    /// An environment with a principal, a cancellation token and an outlet for notifications.
    pub fn new(principal: Option<Principal>, cancel: CancellationToken, out: Option<UnboundedSender<Message>>) -> Self {
        Self { principal, headers: None, cancel, out }
    }

    /// Adds header rules.
    #[must_use]
    pub fn with_headers(mut self, headers: Box<dyn HeaderCheck>) -> Self {
        self.headers = Some(headers);
        self
    }
}
