//! [`ListenStream`], what [`Client::listen`](super::Client::listen) opens:
//! a `subscriptions/listen` stream of the caller's own, every message on it
//! as it comes: the acknowledgment, the notifications, and the server's
//! closing result when it ends the stream.
//!
//! Following tasks needs none of this ([`TaskHandle::follow`](super::TaskHandle::follow)
//! shares the client's one stream); it is for watching notifications as
//! such: which task ids a server acknowledged, `notifications/tasks` for
//! tasks someone else drives, list changes.

use super::era::Dialect;
use super::error::ClientError;
use super::wire::Replies;
use crate::protocol::jsonrpc::{Incoming, Response};
use crate::protocol::methods::LISTEN;
use crate::protocol::{RequestId, RpcError};
use serde_json::{Map, Value};

/// One message of a [`ListenStream`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ListenEvent {
    /// A notification (the acknowledgment is one too:
    /// `notifications/subscriptions/acknowledged`).
    Notification {
        /// The method.
        method: String,
        /// Its `params` (`Null` when absent), `_meta` included.
        params: Value,
    },
    /// The server ended the stream with this result (or error); nothing follows.
    Closed(Result<Value, RpcError>),
}

/// An open `subscriptions/listen` request; dropping it closes the stream.
#[derive(Debug)]
pub struct ListenStream {
    id: RequestId,
    replies: Replies,
    closed: bool,
}

impl ListenStream {
    /// Opens `subscriptions/listen` with `notifications` as its filter, unread.
    pub(crate) async fn open(era: &dyn Dialect, notifications: Value) -> Result<Self, ClientError> {
        let mut params = Map::new();
        params.insert("notifications".into(), notifications);
        let (id, replies) = era.open(LISTEN, params).await?;
        Ok(Self { id, replies, closed: false })
    }

    /// The listen request's id: the `subscriptionId` in each notification's `_meta`.
    pub fn subscription_id(&self) -> &RequestId {
        &self.id
    }

    /// The next message; `None` after [`ListenEvent::Closed`] or when the
    /// connection ended without a closing result.
    pub async fn next(&mut self) -> Option<ListenEvent> {
        if self.closed {
            return None;
        }
        loop {
            match self.replies.recv().await? {
                Incoming::Notification { method, params } => {
                    return Some(ListenEvent::Notification { method, params: params.unwrap_or(Value::Null) });
                }
                Incoming::Response(Response { outcome, .. }) => {
                    self.closed = true;
                    return Some(ListenEvent::Closed(outcome));
                }
                // Server requests belong to calls, not to a listen stream.
                Incoming::Request(_) => continue,
            }
        }
    }
}
