//! What the client needs from a transport: send one request and read every
//! message tied to it. Streamable HTTP ([`super::http`]) and a child
//! process over stdio ([`super::stdio`]) both provide it.

use super::error::ClientError;
use crate::protocol::RequestId;
use crate::protocol::jsonrpc::Incoming;
use serde_json::{Map, Value};
use std::sync::{Arc, Mutex};
use tokio::sync::{Semaphore, mpsc};

/// Bytes a request's stream may hold that its reader has not taken yet. The
/// HTTP stream reader waits for room ([`ReplyTx::send_held`]) and stops reading
/// the socket meanwhile, so a server that sends faster than the caller reads
/// (a busy `events/stream`) is slowed down by TCP instead of filling memory.
/// One message bigger than this still passes once the queue is empty.
pub(crate) const REPLY_BUDGET_BYTES: usize = 1024 * 1024;

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
    /// Each message with the bytes of [`REPLY_BUDGET_BYTES`] it holds.
    rx: mpsc::UnboundedReceiver<(Incoming, u32)>,
    budget: Arc<Semaphore>,
    why: Arc<Mutex<Option<String>>>,
}

/// The sending side of [`Replies`].
#[derive(Debug, Clone)]
pub(crate) struct ReplyTx {
    tx: mpsc::UnboundedSender<(Incoming, u32)>,
    budget: Arc<Semaphore>,
    why: Arc<Mutex<Option<String>>>,
}

/// A handle on a reply channel that does not keep it open: the legacy
/// session's table of requests whose response may come on another stream.
#[derive(Debug, Clone)]
pub(crate) struct WeakReplyTx {
    tx: mpsc::WeakUnboundedSender<(Incoming, u32)>,
}

impl WeakReplyTx {
    /// Delivers a message; `Err` when the channel has closed.
    pub(crate) fn send(&self, msg: Incoming) -> Result<(), ()> {
        self.tx.upgrade().ok_or(())?.send((msg, 0)).map_err(drop)
    }
}

/// A new reply channel.
pub(crate) fn replies() -> (ReplyTx, Replies) {
    let (tx, rx) = mpsc::unbounded_channel();
    let why = Arc::default();
    let budget = Arc::new(Semaphore::new(REPLY_BUDGET_BYTES));
    (ReplyTx { tx, budget: Arc::clone(&budget), why: Arc::clone(&why) }, Replies { rx, budget, why })
}

impl Replies {
    /// The next message, `None` once the stream has ended.
    pub(crate) async fn recv(&mut self) -> Option<Incoming> {
        let (msg, held) = self.rx.recv().await?;
        self.budget.add_permits(held as usize);
        Some(msg)
    }

    /// Why the stream ended before its response, when the transport knows.
    pub(crate) fn why(&self) -> Option<String> {
        self.why.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl ReplyTx {
    /// Delivers a message outside the byte budget (a response, or the one
    /// message of a JSON answer); `Err` when nobody reads any more.
    pub(crate) fn send(&self, msg: Incoming) -> Result<(), ()> {
        self.tx.send((msg, 0)).map_err(drop)
    }

    /// Delivers a message that came as `bytes` on a stream, first waiting
    /// until the reader has taken enough that it fits [`REPLY_BUDGET_BYTES`]
    /// (a bigger one waits for an empty queue); `Err` when nobody reads any more.
    pub(crate) async fn send_held(&self, msg: Incoming, bytes: usize) -> Result<(), ()> {
        // At most the whole budget, which always fits u32.
        let held = u32::try_from(bytes.min(REPLY_BUDGET_BYTES)).unwrap_or(u32::MAX);
        tokio::select! {
            permit = self.budget.acquire_many(held) => permit.map_err(drop)?.forget(),
            () = self.tx.closed() => return Err(()),
        }
        self.tx.send((msg, held)).map_err(drop)
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
