//! [`EventStream`], what [`Client::stream_events`](super::Client::stream_events)
//! opens: one `events/stream` request whose answer carries only this
//! subscription's `notifications/events/*`, read as [`StreamEvent`]s. It
//! keeps the last cursor the server gave (never a `null` one) so a caller
//! can reconnect where it stopped.

use super::era::Dialect;
use super::error::ClientError;
use super::events::EventQuery;
use super::wire::Replies;
use crate::protocol::events::{
    EVENTS_ACTIVE, EVENTS_ERROR, EVENTS_EVENT, EVENTS_HEARTBEAT, EVENTS_STREAM, EVENTS_TERMINATED, EventOccurrence,
};
use crate::protocol::jsonrpc::{ErrorCode, Incoming, Response};
use crate::protocol::meta::SUBSCRIPTION_ID_KEY;
use crate::protocol::{RequestId, RpcError};
use serde::Deserialize;
use serde_json::Value;

/// One message of an [`EventStream`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum StreamEvent {
    /// The subscription is live (first message; again after a gap with `truncated`).
    Active {
        /// Where delivery starts.
        cursor: Option<String>,
        /// Delivery started later than the cursor asked: occurrences were skipped.
        truncated: bool,
    },
    /// One occurrence (its `data` is server text: sanitize before printing).
    Event(EventOccurrence),
    /// The server checked up to `cursor` and found nothing new.
    Heartbeat {
        /// The position checked up to.
        cursor: Option<String>,
    },
    /// A recoverable error; the stream stays.
    Error(RpcError),
    /// The subscription ended with this error; nothing follows.
    Terminated(RpcError),
}

/// An open `events/stream` request; dropping it cancels the subscription.
#[derive(Debug)]
pub struct EventStream {
    id: RequestId,
    replies: Replies,
    cursor: Option<String>,
    /// The first notification, read while opening.
    pending: Option<(String, Value)>,
    ended: bool,
}

/// The `error` member of `notifications/events/{error,terminated}`.
#[derive(Deserialize)]
struct WireError {
    code: i64,
    message: String,
    #[serde(default)]
    data: Option<Value>,
}

#[derive(Deserialize)]
struct ErrorParams {
    error: WireError,
}

#[derive(Deserialize)]
struct ActiveParams {
    #[serde(default)]
    cursor: Option<String>,
    #[serde(default)]
    truncated: bool,
}

#[derive(Deserialize)]
struct HeartbeatParams {
    #[serde(default)]
    cursor: Option<String>,
}

impl EventStream {
    /// Sends `events/stream` for `query`; a refusal the server answers at once is the error.
    pub(crate) async fn open(era: &dyn Dialect, query: &EventQuery) -> Result<Self, ClientError> {
        let (id, replies) = era.open(EVENTS_STREAM, query.params()).await?;
        let mut s = Self { id, replies, cursor: query.cursor.clone(), pending: None, ended: false };
        // A refused subscription answers with an error and no notification.
        match s.replies.recv().await {
            Some(Incoming::Response(Response { outcome: Err(e), .. })) => Err(ClientError::Rpc(e)),
            Some(Incoming::Response(Response { outcome: Ok(_), .. })) | None => {
                Err(ClientError::protocol("events/stream ended before the subscription became active"))
            }
            Some(Incoming::Notification { method, params }) => {
                s.pending = Some((method, params.unwrap_or(Value::Null)));
                Ok(s)
            }
            Some(Incoming::Request(_)) => Ok(s),
        }
    }

    /// The request's id: the `subscriptionId` in every notification's `_meta`.
    pub fn subscription_id(&self) -> &RequestId {
        &self.id
    }

    /// The last cursor the server gave (what a reconnect passes on); `None`
    /// when it gave none or only `null`.
    pub fn cursor(&self) -> Option<&str> {
        self.cursor.as_deref()
    }

    /// The next message; `None` after [`StreamEvent::Terminated`] or when the
    /// server closed the stream (reconnect with [`EventStream::cursor`]).
    pub async fn next(&mut self) -> Option<Result<StreamEvent, ClientError>> {
        loop {
            if self.ended {
                return None;
            }
            let (method, params) = match self.pending.take() {
                Some(p) => p,
                None => match self.replies.recv().await? {
                    Incoming::Notification { method, params } => (method, params.unwrap_or(Value::Null)),
                    Incoming::Response(_) => {
                        self.ended = true;
                        return None;
                    }
                    Incoming::Request(_) => continue,
                },
            };
            if !self.ours(&params) {
                continue;
            }
            match self.read(&method, params) {
                Ok(Some(ev)) => return Some(Ok(ev)),
                Ok(None) => continue,
                Err(e) => return Some(Err(e)),
            }
        }
    }

    /// Whether a notification names this stream's subscription.
    fn ours(&self, params: &Value) -> bool {
        params.pointer("/_meta").and_then(|m| m.get(SUBSCRIPTION_ID_KEY)).is_some_and(|v| *v == self.id.to_value())
    }

    /// One notification as a [`StreamEvent`] (`None`: a method not known here).
    fn read(&mut self, method: &str, params: Value) -> Result<Option<StreamEvent>, ClientError> {
        fn parse<T: serde::de::DeserializeOwned>(what: &str, v: Value) -> Result<T, ClientError> {
            serde_json::from_value(v).map_err(|e| ClientError::malformed(what, e))
        }
        let ev = match method {
            EVENTS_ACTIVE => {
                let p: ActiveParams = parse("notifications/events/active", params)?;
                self.advance(&p.cursor);
                StreamEvent::Active { cursor: p.cursor, truncated: p.truncated }
            }
            EVENTS_EVENT => {
                let o: EventOccurrence = parse("notifications/events/event", params)?;
                self.advance(&o.cursor);
                StreamEvent::Event(o)
            }
            EVENTS_HEARTBEAT => {
                let p: HeartbeatParams = parse("notifications/events/heartbeat", params)?;
                self.advance(&p.cursor);
                StreamEvent::Heartbeat { cursor: p.cursor }
            }
            EVENTS_ERROR => StreamEvent::Error(rpc(parse("notifications/events/error", params)?)),
            EVENTS_TERMINATED => {
                self.ended = true;
                StreamEvent::Terminated(rpc(parse("notifications/events/terminated", params)?))
            }
            _ => return Ok(None),
        };
        Ok(Some(ev))
    }

    /// Keeps a cursor the server gave; a `null` one is never kept (nor replayed).
    fn advance(&mut self, cursor: &Option<String>) {
        if let Some(c) = cursor {
            self.cursor = Some(c.clone());
        }
    }
}

fn rpc(p: ErrorParams) -> RpcError {
    let e = RpcError::new(ErrorCode::from_code(p.error.code), p.error.message);
    match p.error.data {
        Some(d) => e.data(d),
        None => e,
    }
}
