//! What the client needs from a transport: send one request and read every
//! message tied to it. Streamable HTTP ([`super::http`]) and a child
//! process over stdio ([`super::stdio`]) both provide it.

use super::error::ClientError;
use crate::protocol::RequestId;
use crate::protocol::jsonrpc::Incoming;
use serde_json::{Map, Value};
use std::sync::{Arc, Mutex};
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
/// ends (then [`Replies::why`] may say why it ended early). Dropping it closes
/// the stream (on HTTP) or cancels the request (on stdio).
#[derive(Debug)]
pub(crate) struct Replies {
    rx: mpsc::UnboundedReceiver<Incoming>,
    why: Arc<Mutex<Option<String>>>,
}

/// The sending side of [`Replies`].
#[derive(Debug, Clone)]
pub(crate) struct ReplyTx {
    tx: mpsc::UnboundedSender<Incoming>,
    why: Arc<Mutex<Option<String>>>,
}

/// A handle on a reply channel that does not keep it open: the legacy
/// session's table of requests whose response may come on another stream.
#[derive(Debug, Clone)]
pub(crate) struct WeakReplyTx {
    tx: mpsc::WeakUnboundedSender<Incoming>,
}

impl WeakReplyTx {
    /// Delivers a message; `Err` when the channel has closed.
    pub(crate) fn send(&self, msg: Incoming) -> Result<(), ()> {
        self.tx.upgrade().ok_or(())?.send(msg).map_err(drop)
    }
}

/// A new reply channel.
pub(crate) fn replies() -> (ReplyTx, Replies) {
    let (tx, rx) = mpsc::unbounded_channel();
    let why = Arc::default();
    (ReplyTx { tx, why: Arc::clone(&why) }, Replies { rx, why })
}

impl Replies {
    /// The next message, `None` once the stream has ended.
    pub(crate) async fn recv(&mut self) -> Option<Incoming> {
        self.rx.recv().await
    }

    /// Why the stream ended before its response, when the transport knows.
    pub(crate) fn why(&self) -> Option<String> {
        self.why.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl ReplyTx {
    /// Delivers a message; `Err` when nobody reads any more.
    pub(crate) fn send(&self, msg: Incoming) -> Result<(), ()> {
        self.tx.send(msg).map_err(drop)
    }

    /// Resolves when the reader has gone.
    pub(crate) async fn closed(&self) {
        self.tx.closed().await;
    }

    /// A handle that does not keep the channel open.
    pub(crate) fn downgrade(&self) -> WeakReplyTx {
        WeakReplyTx { tx: self.tx.downgrade() }
    }

    /// Records why the stream ends early (the channel closes when every sender is dropped).
    pub(crate) fn fail(&self, why: String) {
        *self.why.lock().unwrap_or_else(|p| p.into_inner()) = Some(why);
    }
}

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
