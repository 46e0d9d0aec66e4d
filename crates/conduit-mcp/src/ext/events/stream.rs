//! `events/stream`: one subscription pushed on the request's own stream.
//! `notifications/events/active` first (and again, `truncated`, after a
//! gap), then each occurrence as `notifications/events/event` with the cursor
//! after it, a `notifications/events/heartbeat` with the position checked up
//! to whenever the stream is quiet for the configured interval, and
//! `notifications/events/terminated` if the type stops being offered, or is
//! offered again with a change that is not additive (`evolution.rs`; after an
//! additive one the stream goes on, through the new type). After an
//! occurrence its source says is the subscription's last (one task's terminal
//! status) the stream closes with its result, no `terminated` (events.md P9); so
//! does a stream of such a subscription that ended before it began (after its
//! first read, which carries the last occurrence if it is after the start). Every
//! notification names the stream (`_meta` subscription id = the request id).
//!
//! The stream holds one of its client's stream slots (`ResourceExhausted`
//! past the cap) and reads the log one bounded page at a time; it ends when
//! the client cancels or goes away, or when the server shuts down.

use super::Events;
use super::resolve::{Asked, Resolved};
use super::stream_outlet::{Sent, StreamOutlet};
use crate::ctx::Ctx;
use crate::protocol::RpcError;
use crate::protocol::events::{
    ActiveParams, DeliveryMode, EVENTS_ACTIVE, EVENTS_EVENT, EVENTS_HEARTBEAT, EVENTS_TERMINATED, EventErrorKind,
    HeartbeatParams, StreamErrorParams, StreamEventsParams,
};
use crate::protocol::meta::SUBSCRIPTION_ID_KEY;
use crate::quota::Full;
use crate::seq_log::ReadFrom;
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::time::Duration;

/// The first wait before a settling log (changes committed, positions not yet
/// given: an older transaction still runs) is read again; doubled each time,
/// up to [`SETTLE_MAX`]. Nothing else wakes the stream for those changes.
const SETTLE_FIRST: Duration = Duration::from_millis(10);
/// The longest wait between reads of a log that stays settling.
const SETTLE_MAX: Duration = Duration::from_secs(1);

/// Why a stream stopped.
enum End {
    /// The client cancelled or went away: nothing more can be written.
    Gone,
    /// The server ends it: the closing result is written.
    Closed,
}

fn as_map<T: Serialize>(v: &T) -> Map<String, Value> {
    match serde_json::to_value(v) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

impl Events {
    pub(crate) async fn stream(&self, ctx: &Ctx, p: StreamEventsParams) -> Result<Value, RpcError> {
        let owner = ctx.owner();
        let asked = Asked {
            name: &p.name,
            arguments: p.arguments,
            cursor: p.cursor.as_deref(),
            max_age_ms: p.max_age_ms,
            mode: DeliveryMode::Push,
        };
        let r = self.resolve(owner, asked).await?;
        let Some(out) = ctx.outlet() else {
            return Err(RpcError::internal("this transport cannot carry an event stream"));
        };
        let c = &self.inner.config;
        let _slot =
            self.inner.streams.hold(ctx.client_key(), c.max_streams_per_client, c.max_streams).map_err(|full| {
                let max = match full {
                    Full::Client => c.max_streams_per_client,
                    Full::Total => c.max_streams,
                };
                self.error(EventErrorKind::ResourceExhausted, json!({ "limit": "streams", "max": max }))
            })?;
        let id = ctx.request_id().clone();
        let outlet = StreamOutlet {
            id: &id,
            out,
            backlog: ctx.backlog(),
            cancel: ctx.cancellation(),
            limit: c.max_stream_backlog_bytes,
            grace: c.slow_reader_grace,
        };
        match self.pump(ctx, r, &outlet).await {
            End::Gone => Err(RpcError::internal("event stream cancelled")),
            End::Closed => Ok(json!({ "_meta": { SUBSCRIPTION_ID_KEY: id.to_value() } })),
        }
    }

    /// Delivers until the stream ends.
    async fn pump(&self, ctx: &Ctx, mut r: Resolved, out: &StreamOutlet<'_>) -> End {
        let owner = ctx.owner();
        let c = &self.inner.config;
        let mut source = r.registered.source.clone();
        let mut head = source.watch();
        let mut catalog = self.inner.catalog.subscribe();
        let mut at = r.start.after;
        let mut floor_ms = r.start.floor_ms;
        let mut first = true;
        let mut pending_truncated = r.start.truncated;
        let mut heartbeat = tokio::time::interval(c.heartbeat);
        heartbeat.tick().await;
        // How long until a settling log is read again (doubling while it settles).
        let mut settle_wait = Duration::ZERO;
        // Asked before the first read: what ended before it is in that read
        // or before the stream's start, and nothing follows it either way.
        let ended_before = match source.ended(owner, &r.filter).await {
            Ok(ended) => ended,
            Err(e) => return Self::terminate(out, e),
        };
        loop {
            // Mark what is seen now before reading, so a write after the read still wakes.
            head.borrow_and_update();
            let from = ReadFrom { after: at, floor_ms, max_entries: c.max_poll_events, max_bytes: c.max_page_bytes };
            let page = match source.read(owner, &r.filter, from).await {
                Ok(p) => p,
                Err(e) => {
                    return Self::terminate(out, e);
                }
            };
            floor_ms = None;
            if first || page.truncated {
                // Where delivery (re)starts: before the first occurrence sent, else where the read ended.
                let start = page.events.first().map_or(page.through, |(seq, _)| seq - 1);
                let truncated = pending_truncated || page.truncated;
                let active = ActiveParams { cursor: Some(self.cursor(owner, &r, start)), truncated };
                if let Some(end) = self.ended(out, out.send(EVENTS_ACTIVE, as_map(&active)).await) {
                    return end;
                }
                first = false;
                pending_truncated = false;
            }
            let sent_any = !page.events.is_empty();
            for (seq, mut event) in page.events {
                event.cursor = Some(self.cursor(owner, &r, seq));
                let last = source.is_last(&r.filter, &event);
                if let Some(end) = self.ended(out, out.send(EVENTS_EVENT, as_map(&event)).await) {
                    return end;
                }
                if last {
                    // Nothing can follow (one task's terminal status): the server closes it.
                    return End::Closed;
                }
            }
            if ended_before && !page.more {
                // Its last occurrence was before the start (or is still being numbered):
                // the caller reads the task itself.
                return End::Closed;
            }
            at = page.through;
            if sent_any {
                heartbeat.reset();
            }
            if page.more {
                tokio::task::yield_now().await;
                continue;
            }
            settle_wait =
                if page.settling { (settle_wait * 2).clamp(SETTLE_FIRST, SETTLE_MAX) } else { Duration::ZERO };
            let settled = tokio::time::sleep(settle_wait);
            tokio::pin!(settled);
            loop {
                tokio::select! {
                    biased;
                    () = ctx.cancellation().cancelled() => return End::Gone,
                    () = self.inner.shutdown.cancelled() => return End::Closed,
                    changed = catalog.changed() => {
                        if changed.is_err() {
                            return Self::terminate(out, self.not_found());
                        }
                        match self.successor(&r, DeliveryMode::Push) {
                            Ok(None) => {}
                            // Offered again additively: the same log, read through the new type.
                            Ok(Some((now, filter))) => {
                                (r.registered, r.filter) = (now, filter);
                                source = r.registered.source.clone();
                                head = source.watch();
                                break;
                            }
                            Err(error) => return Self::terminate(out, error),
                        }
                    }
                    moved = head.changed() => {
                        if moved.is_err() {
                            return End::Closed;
                        }
                        break;
                    }
                    () = &mut settled, if page.settling => break,
                    _ = heartbeat.tick() => {
                        let beat = HeartbeatParams { cursor: Some(self.cursor(owner, &r, at)) };
                        if let Some(end) = self.ended(out, out.send(EVENTS_HEARTBEAT, as_map(&beat)).await) {
                            return end;
                        }
                    }
                }
            }
        }
    }

    /// How a write that did not queue ends the stream: a reader too slow is
    /// told why (`ResourceExhausted`) and the stream closes.
    fn ended(&self, out: &StreamOutlet<'_>, sent: Sent) -> Option<End> {
        match sent {
            Sent::Queued => None,
            Sent::Gone => Some(End::Gone),
            Sent::Full => {
                tracing::debug!("ending an event stream whose reader fell behind");
                let data = json!({ "limit": "streamBacklogBytes", "max": out.limit });
                Some(Self::terminate(out, self.error(EventErrorKind::ResourceExhausted, data)))
            }
        }
    }

    /// Ends the stream with `notifications/events/terminated` carrying `error`.
    fn terminate(out: &StreamOutlet<'_>, error: RpcError) -> End {
        match out.send_now(EVENTS_TERMINATED, as_map(&StreamErrorParams { error })) {
            Sent::Queued => End::Closed,
            Sent::Gone | Sent::Full => End::Gone,
        }
    }
}
