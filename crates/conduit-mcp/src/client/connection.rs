//! The connection core: one transport ([`Wire`]), the request ids, and the
//! 2025-11-25 session the transport keeps. Every request of either era goes
//! out and comes back here; what a request carries is the era seam's
//! business ([`super::era`]), which is the only caller.
//!
//! Messages tied to a request are sorted here: its response ends the wait,
//! notifications go to the [`NotificationFn`], and requests the server sends
//! (elicitation, sampling, roots, ping) are answered through the
//! [`InputHandler`].

use super::error::ClientError;
use super::input::{self, InputHandler};
use super::wire::{Outgoing, Replies, Wire};
use crate::protocol::jsonrpc::{Incoming, Message, Request, Response};
use crate::protocol::mrtr::InputRequest;
use crate::protocol::{RequestId, RpcError};
use serde_json::{Value, json};
use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Weak};
use tokio::sync::mpsc;

/// A callback for request-scoped notifications (`notifications/progress`, `notifications/message`).
pub type NotificationFn = Arc<dyn Fn(&str, &Value) + Send + Sync>;

/// One connection to one server, in whichever era it speaks.
pub(crate) struct Connection {
    wire: Arc<dyn Wire>,
    next_id: AtomicI64,
    handler: Arc<dyn InputHandler>,
    on_notification: Option<NotificationFn>,
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection").field("wire", &self.wire).finish_non_exhaustive()
    }
}

impl Connection {
    /// A connection over `wire`; server questions go to `handler`.
    pub(crate) fn new(
        wire: Arc<dyn Wire>,
        handler: Arc<dyn InputHandler>,
        on_notification: Option<NotificationFn>,
    ) -> Self {
        Self { wire, next_id: AtomicI64::new(1), handler, on_notification }
    }

    /// A request id this connection has not used.
    pub(crate) fn next_id(&self) -> RequestId {
        RequestId::Number(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Who answers the server's questions.
    pub(crate) fn handler(&self) -> &dyn InputHandler {
        self.handler.as_ref()
    }

    /// Whether someone listens to request-scoped notifications (requests then carry a `progressToken`).
    pub(crate) fn reports_notifications(&self) -> bool {
        self.on_notification.is_some()
    }

    /// How many messages went out so far (see [`Wire::sent`]).
    pub(crate) fn sent(&self) -> u64 {
        self.wire.sent()
    }

    /// Sends a request and hands back what comes for it, unread (a listen stream).
    pub(crate) async fn open(&self, out: Outgoing) -> Result<Replies, ClientError> {
        self.wire.send(out).await
    }

    /// Sends a request and waits for its response; notifications and server
    /// requests that come on its stream are handled on the way.
    pub(crate) async fn request(&self, out: Outgoing) -> Result<Value, ClientError> {
        let method = out.method.clone();
        let version = out.version.clone();
        let mut replies = self.wire.send(out).await?;
        while let Some(msg) = replies.recv().await {
            match msg {
                Incoming::Response(Response { outcome, .. }) => return outcome.map_err(ClientError::Rpc),
                Incoming::Notification { method, params } => {
                    if let Some(f) = &self.on_notification {
                        f(&method, params.as_ref().unwrap_or(&Value::Null));
                    }
                }
                Incoming::Request(req) => self.answer(req, &version).await?,
            }
        }
        Err(ClientError::transport(match replies.why() {
            Some(why) => format!("{why} (answering {method})"),
            None => format!("the server closed the stream before answering {method}"),
        }))
    }

    /// Sends a notification (`message` is a whole JSON-RPC object).
    pub(crate) async fn notify(&self, message: Value, version: &str) -> Result<(), ClientError> {
        self.wire.post(message, version).await
    }

    /// Answers a request the server sent: `ping`, or a question for the
    /// [`InputHandler`]; anything else is `-32601`.
    pub(crate) async fn answer(&self, req: Request, version: &str) -> Result<(), ClientError> {
        let reply = match req.method.as_str() {
            "ping" => Message::Result { id: req.id, result: json!({}) },
            method => match InputRequest::from_value(json!({ "method": method, "params": req.params })) {
                None => Message::Error { id: Some(req.id), error: RpcError::method_not_found(method) },
                Some(ir) => match input::answer(self.handler(), &req.id.to_string(), &ir).await {
                    Ok(result) => Message::Result { id: req.id, result },
                    Err(e) => Message::Error { id: Some(req.id), error: RpcError::internal(e.to_string()) },
                },
            },
        };
        self.wire.post(reply.to_value(), version).await
    }

    /// Forgets the 2025-11-25 session (the next `initialize` starts afresh).
    pub(crate) fn end_session(&self) {
        self.wire.reset_session();
    }

    /// Opens the 2025-11-25 session's own event stream (HTTP GET), if the transport has one.
    pub(crate) async fn open_session_events(&self, version: &str) {
        self.wire.open_events(version).await;
    }
}

/// Answers, while the connection lives, the requests a server sends outside
/// any request of ours (a stdio server's, the legacy event stream's).
pub(crate) fn answer_unsolicited(conn: Weak<Connection>, mut rx: mpsc::UnboundedReceiver<Request>, version: String) {
    tokio::spawn(async move {
        while let Some(req) = rx.recv().await {
            let Some(conn) = conn.upgrade() else { return };
            let version = version.clone();
            tokio::spawn(async move {
                if let Err(e) = conn.answer(req, &version).await {
                    tracing::debug!("could not answer a server request: {e}");
                }
            });
        }
    });
}
