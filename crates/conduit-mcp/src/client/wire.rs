//! What the client needs from a transport: send one request and read every
//! message tied to it. Streamable HTTP ([`super::http`]) and a child
//! process over stdio ([`super::stdio`]) both provide it.

use super::error::ClientError;
use crate::protocol::RequestId;
use crate::protocol::jsonrpc::Incoming;
use serde_json::{Map, Value};
use tokio::sync::mpsc;

/// One request on its way out.
#[derive(Debug, Clone)]
pub(crate) struct Outgoing {
    /// The JSON-RPC id.
    pub(crate) id: RequestId,
    /// The method.
    pub(crate) method: String,
    /// `params` (with `_meta` already filled in).
    pub(crate) params: Map<String, Value>,
    /// The protocol version the request speaks (the `MCP-Protocol-Version` header on HTTP).
    pub(crate) version: String,
    /// Extra per-request headers (`Mcp-Param-*`); ignored on stdio.
    pub(crate) headers: Vec<(String, String)>,
}

impl Outgoing {
    /// The request as a JSON-RPC object.
    pub(crate) fn to_value(&self) -> Value {
        serde_json::json!({
            "jsonrpc": "2.0",
            "id": self.id.to_value(),
            "method": self.method,
            "params": Value::Object(self.params.clone()),
        })
    }
}

/// The messages tied to one request: notifications and server requests, then
/// its response; the channel closes after the response or when the stream
/// ends. Dropping it closes the stream (on HTTP) or cancels the request (on stdio).
pub(crate) type Replies = mpsc::UnboundedReceiver<Incoming>;

/// A transport as the client sees it.
#[async_trait::async_trait]
pub(crate) trait Wire: Send + Sync + std::fmt::Debug {
    /// Sends `req` and returns the stream of what comes back for it.
    async fn send(&self, req: Outgoing) -> Result<Replies, ClientError>;
    /// Sends a notification or a response to a server request (legacy era).
    async fn post(&self, message: Value, version: &str) -> Result<(), ClientError>;
    /// Forgets any legacy session state (the next `initialize` starts afresh).
    fn reset_session(&self) {}
    /// Legacy era: opens the server's own event stream (HTTP GET), if it has one.
    async fn open_events(&self, _version: &str) {}
    /// How many messages went out so far: HTTP requests (POST and GET), or lines written to a child.
    fn sent(&self) -> u64;
}
