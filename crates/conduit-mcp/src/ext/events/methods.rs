//! `events/list` and `events/poll` (the webhook methods are in `subscribe.rs`).

use super::Events;
use super::resolve::Asked;
use crate::ctx::Ctx;
use crate::protocol::RpcError;
use crate::protocol::events::{DeliveryMode, ListEventsParams, ListEventsResult, PollEventsParams, PollEventsResult};
use crate::seq_log::ReadFrom;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::ops::Bound;

/// The params as `T`, or `-32602` naming what is wrong.
pub(crate) fn params<T: DeserializeOwned>(method: &str, params: Map<String, Value>) -> Result<T, RpcError> {
    serde_json::from_value(Value::Object(params)).map_err(|e| RpcError::invalid_params(format!("{method}: {e}")))
}

fn to_value<T: serde::Serialize>(v: &T) -> Result<Value, RpcError> {
    serde_json::to_value(v).map_err(|_| RpcError::internal("could not serialise the result"))
}

impl Events {
    pub(crate) fn list(&self, p: ListEventsParams) -> Result<Value, RpcError> {
        // The cursor is the last name of the previous page, base64url.
        let after = match &p.cursor {
            None => None,
            Some(c) => Some(
                B64.decode(c)
                    .ok()
                    .and_then(|b| String::from_utf8(b).ok())
                    .ok_or_else(|| RpcError::invalid_params("invalid cursor"))?,
            ),
        };
        let types = self.inner.types.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        let lower = after.as_ref().map_or(Bound::Unbounded, |a| Bound::Excluded(a.clone()));
        let mut page = types.range((lower, Bound::Unbounded));
        let events: Vec<_> =
            page.by_ref().take(self.inner.config.list_page_size).map(|(_, r)| r.source.descriptor().clone()).collect();
        let next_cursor = match (page.next(), events.last()) {
            (Some(_), Some(last)) => Some(B64.encode(last.name.as_bytes())),
            _ => None,
        };
        to_value(&ListEventsResult { events, next_cursor })
    }

    pub(crate) async fn poll(&self, ctx: &Ctx, p: PollEventsParams) -> Result<Value, RpcError> {
        let owner = ctx.owner();
        let asked = Asked {
            name: &p.name,
            arguments: p.arguments,
            cursor: p.cursor.as_deref(),
            max_age_ms: p.max_age_ms,
            mode: DeliveryMode::Poll,
        };
        let r = self.resolve(owner, asked).await?;
        let c = &self.inner.config;
        let next_poll_ms = u64::try_from(c.next_poll.as_millis()).unwrap_or(u64::MAX);
        if r.start.from_now {
            let cursor = Some(self.cursor(owner, &r, r.start.after));
            let result = PollEventsResult {
                events: Vec::new(),
                cursor,
                truncated: r.start.truncated,
                has_more: false,
                next_poll_ms,
            };
            return to_value(&result);
        }
        let max_entries = p
            .max_events
            .map_or(c.max_poll_events, |m| usize::try_from(m).unwrap_or(usize::MAX).clamp(1, c.max_poll_events));
        let from =
            ReadFrom { after: r.start.after, floor_ms: r.start.floor_ms, max_entries, max_bytes: c.max_page_bytes };
        let page = r.registered.source.read(owner, &r.filter, from).await?;
        let result = PollEventsResult {
            events: page.events.into_iter().map(|(_, e)| e).collect(),
            cursor: Some(self.cursor(owner, &r, page.through)),
            truncated: page.truncated,
            has_more: page.more,
            next_poll_ms: if page.more { 0 } else { next_poll_ms },
        };
        to_value(&result)
    }
}
