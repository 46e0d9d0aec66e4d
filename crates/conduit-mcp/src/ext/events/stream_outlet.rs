//! Where a push stream writes: its notifications, tagged with the stream's
//! subscription id, and the bound on what waits for a slow reader.
//!
//! On HTTP the transport counts the bytes the connection takes
//! ([`Backlog`]). Before each notification the stream waits for the bytes
//! still waiting to fall to `EventsConfig::max_stream_backlog_bytes`; a
//! reader that does not take enough within `EventsConfig::slow_reader_grace`
//! is told `notifications/events/terminated` (`ResourceExhausted`,
//! `data.limit: "streamBacklogBytes"`) and its stream ends, so the server
//! holds at most the bound plus one occurrence and that closing frame. The
//! client resumes with a new stream from its last cursor (events.md §2.6 S9).

use crate::protocol::jsonrpc::{Message, RequestId};
use crate::quota::Backlog;
use crate::subscriptions::tagged;
use serde_json::{Map, Value};
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

/// What a write did.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Sent {
    /// Queued for the client.
    Queued,
    /// The client went away.
    Gone,
    /// The client took too little for too long: nothing was queued.
    Full,
}

/// A push stream's writer.
pub(super) struct StreamOutlet<'a> {
    pub(super) id: &'a RequestId,
    pub(super) out: &'a UnboundedSender<Message>,
    pub(super) backlog: Option<&'a Backlog>,
    /// Fires when the client cancels or goes away (a wait for room ends then).
    pub(super) cancel: &'a CancellationToken,
    /// Most bytes waiting before a write waits for room.
    pub(super) limit: usize,
    /// How long a write waits for room.
    pub(super) grace: Duration,
}

impl StreamOutlet<'_> {
    /// Writes `method` once the backlog has room for it.
    pub(super) async fn send(&self, method: &str, params: Map<String, Value>) -> Sent {
        if let Some(b) = self.backlog {
            tokio::select! {
                room = b.room_within(self.limit, self.grace) => if !room {
                    return Sent::Full;
                },
                () = self.cancel.cancelled() => return Sent::Gone,
            }
        }
        self.send_now(method, params)
    }

    /// Writes `method` whatever waits (the closing frames of a stream).
    pub(super) fn send_now(&self, method: &str, params: Map<String, Value>) -> Sent {
        let m = tagged(self.id, method, params);
        if let Some(b) = self.backlog {
            b.queued(m.to_json().len());
        }
        if self.out.send(m).is_ok() { Sent::Queued } else { Sent::Gone }
    }
}
