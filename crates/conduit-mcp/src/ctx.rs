//! The per-request context handed to every handler.
//!
//! It sits below the server: tools, prompts and resources read it without
//! knowing the server that calls them.

use crate::auth::Principal;
use crate::protocol::jsonrpc::{Message, RequestId};
use crate::protocol::meta::ClientCapabilities;
use crate::protocol::methods::{MESSAGE, PROGRESS};
use crate::protocol::version::Era;
use crate::quota::ClientKey;
use crate::subscriptions::Changes;
use serde_json::{Map, Value, json};
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

/// What a handler knows about the request it serves.
///
/// Cheap to clone; read once at dispatch, so handlers never re-read `_meta`.
#[derive(Clone)]
pub struct Ctx {
    pub(crate) inner: Arc<CtxInner>,
}

pub(crate) struct CtxInner {
    pub(crate) request_id: RequestId,
    pub(crate) method: String,
    pub(crate) era: Era,
    pub(crate) principal: Option<Principal>,
    /// Who per-client limits count this request against.
    pub(crate) client: ClientKey,
    pub(crate) caps: ClientCapabilities,
    pub(crate) meta: Map<String, Value>,
    pub(crate) progress_token: Option<Value>,
    pub(crate) log_level: Option<String>,
    pub(crate) cancel: CancellationToken,
    pub(crate) out: Option<UnboundedSender<Message>>,
    pub(crate) input_responses: Option<Map<String, Value>>,
    pub(crate) request_state: Option<Value>,
    pub(crate) changes: Changes,
    /// Legacy SSE polling: cancelling it closes the request's stream early.
    pub(crate) close_stream: Option<CancellationToken>,
    /// HTTP streams: the bytes queued on `out` that the connection has not taken.
    pub(crate) backlog: Option<Arc<crate::quota::Backlog>>,
    /// Legacy `tools/call`: the `params.task` object that opted in to a task.
    pub(crate) task_params: Option<Value>,
    /// Legacy sessions: the session, through which the server can ask the client (and the
    /// longest it waits for one answer).
    pub(crate) session: Option<(Arc<crate::session::LegacySession>, crate::session::Asking)>,
}

impl std::fmt::Debug for Ctx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ctx")
            .field("method", &self.inner.method)
            .field("request_id", &self.inner.request_id)
            .finish_non_exhaustive()
    }
}

const LEVELS: [&str; 8] = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];

impl Ctx {
    /// The legacy session this request belongs to, if any.
    pub(crate) fn legacy_session(&self) -> Option<&Arc<crate::session::LegacySession>> {
        self.inner.session.as_ref().map(|(s, _)| s)
    }

    /// The request id.
    pub fn request_id(&self) -> &RequestId {
        &self.inner.request_id
    }

    /// The method, e.g. `tools/call`.
    pub fn method(&self) -> &str {
        &self.inner.method
    }

    /// The protocol era of this request.
    pub fn era(&self) -> Era {
        self.inner.era
    }

    /// Who sent the request; `None` when no authentication is configured.
    pub fn principal(&self) -> Option<&Principal> {
        self.inner.principal.as_ref()
    }

    /// The principal id, the owner key of tasks.
    pub fn owner(&self) -> Option<&str> {
        self.inner.principal.as_ref().map(|p| p.id())
    }

    /// Who per-client limits count this request against: the principal, or without
    /// authentication the client's address (the process on stdio).
    pub fn client_key(&self) -> &ClientKey {
        &self.inner.client
    }

    /// The capabilities declared on this request (and only this request).
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        &self.inner.caps
    }

    /// The raw `_meta` of the request.
    pub fn meta(&self) -> &Map<String, Value> {
        &self.inner.meta
    }

    /// The progress token, if the request asked for progress.
    pub fn progress_token(&self) -> Option<&Value> {
        self.inner.progress_token.as_ref()
    }

    /// Fires when the client goes away or cancels this request.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.inner.cancel
    }

    /// Whether the request was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancel.is_cancelled()
    }

    /// The client's answers to an earlier `input_required` round, by key.
    pub fn input_responses(&self) -> Option<&Map<String, Value>> {
        self.inner.input_responses.as_ref()
    }

    /// One answer by key.
    pub fn input_response(&self, key: &str) -> Option<&Value> {
        self.inner.input_responses.as_ref().and_then(|m| m.get(key))
    }

    /// The state the server sealed in the previous round, verified.
    pub fn request_state(&self) -> Option<&Value> {
        self.inner.request_state.as_ref()
    }

    /// Announces list changes and resource updates to the listen streams that asked for them.
    pub fn changes(&self) -> &Changes {
        &self.inner.changes
    }

    /// Sends `notifications/progress` if the request carried a progress token, its
    /// `message` cut at [`MAX_STATUS_MESSAGE_BYTES`](crate::bounds::MAX_STATUS_MESSAGE_BYTES).
    /// Returns whether a notification was sent.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) -> bool {
        let (Some(token), Some(out)) = (&self.inner.progress_token, &self.inner.out) else {
            return false;
        };
        let mut p = json!({ "progressToken": token, "progress": progress });
        if let Some(t) = total {
            p["total"] = json!(t);
        }
        if let Some(m) = message {
            // Cut like a task's status message: a progress message may repeat client input,
            // and a legacy session keeps it for replay.
            p["message"] = json!(crate::bounds::cut_message(m.to_owned()));
        }
        out.send(Message::notification(PROGRESS, p)).is_ok()
    }

    /// Sends `notifications/message` at `level`, only if the request set a log
    /// level at or below it. Returns whether a notification was sent.
    pub fn log(&self, level: &str, data: Value) -> bool {
        let (Some(min), Some(out)) = (&self.inner.log_level, &self.inner.out) else {
            return false;
        };
        let rank = |l: &str| LEVELS.iter().position(|x| *x == l);
        match (rank(level), rank(min)) {
            (Some(l), Some(m)) if l >= m => {
                out.send(Message::notification(MESSAGE, json!({ "level": level, "data": data }))).is_ok()
            }
            _ => false,
        }
    }

    /// Closes this request's SSE stream now, before the answer (2025-11-25 "SSE
    /// polling"): the client reconnects with `Last-Event-ID` and receives what
    /// follows, the answer included. Returns whether the transport supports it
    /// (legacy HTTP sessions only).
    pub fn close_stream(&self) -> bool {
        match &self.inner.close_stream {
            Some(t) => {
                t.cancel();
                true
            }
            None => false,
        }
    }

    /// The `params.task` of a legacy `tools/call` (`{ttl?}`), if it asked for a task.
    pub(crate) fn task_params(&self) -> Option<&Value> {
        self.inner.task_params.as_ref()
    }

    /// Legacy sessions: sends `method` to the client as a real request on this request's
    /// stream and waits for its answer. `None` when this request cannot ask (modern era, or
    /// no stream to the client).
    pub(crate) async fn ask_client(
        &self,
        method: &str,
        params: Option<Value>,
    ) -> Option<Result<Value, crate::protocol::RpcError>> {
        let (session, asking) = self.inner.session.as_ref()?;
        let out = self.inner.out.as_ref()?;
        Some(session.ask(out, method, params, *asking).await)
    }

    /// The outlet for request-scoped notifications (listen streams write here).
    pub(crate) fn outlet(&self) -> Option<&UnboundedSender<Message>> {
        self.inner.out.as_ref()
    }

    /// The count of bytes queued on the outlet and not yet taken by the
    /// connection, where the transport keeps one (HTTP streams).
    pub(crate) fn backlog(&self) -> Option<&crate::quota::Backlog> {
        self.inner.backlog.as_deref()
    }
}
