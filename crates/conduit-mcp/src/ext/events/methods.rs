//! `events/list`, `events/poll`, and the webhook methods, which refuse for
//! now (no event type offers webhook delivery yet).

use super::Events;
use super::resolve::Asked;
use crate::ctx::Ctx;
use crate::protocol::RpcError;
use crate::protocol::events::{
    DeliveryMode, EventErrorKind, ListEventsParams, ListEventsResult, PollEventsParams, PollEventsResult,
    SubscribeEventsParams, UnsubscribeEventsParams,
};
use crate::seq_log::ReadFrom;
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD as B64};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use std::ops::Bound;

/// Event types per `events/list` page.
const LIST_PAGE: usize = 100;

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
        let events: Vec<_> = page.by_ref().take(LIST_PAGE).map(|(_, r)| r.source.descriptor().clone()).collect();
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

    /// `events/subscribe`: checked as the extension says, then refused, since
    /// no event type offers webhook delivery here yet.
    pub(crate) fn subscribe(&self, ctx: &Ctx, p: SubscribeEventsParams) -> Result<Value, RpcError> {
        if ctx.owner().is_none() {
            return Err(
                self.error(EventErrorKind::Forbidden, json!({ "reason": "webhooks need an authenticated principal" }))
            );
        }
        let registered = self.get(&p.name).ok_or_else(|| self.not_found())?;
        if p.delivery.mode != DeliveryMode::Webhook {
            return Err(RpcError::invalid_params("events/subscribe is for delivery.mode \"webhook\" only"));
        }
        check_callback(&p.delivery.url)?;
        check_secret(&p.delivery.secret)?;
        self.check_arguments(&registered, &p.arguments)?;
        let data = json!({ "feature": "deliveryMode", "value": "webhook" });
        Err(self.error(EventErrorKind::Unsupported, data))
    }

    /// `events/unsubscribe`: no webhook subscription is ever stored here yet.
    pub(crate) fn unsubscribe(&self, ctx: &Ctx, p: UnsubscribeEventsParams) -> Result<Value, RpcError> {
        if ctx.owner().is_none() {
            return Err(
                self.error(EventErrorKind::Forbidden, json!({ "reason": "webhooks need an authenticated principal" }))
            );
        }
        let _ = (p.name, p.arguments, p.delivery);
        Err(self.error(EventErrorKind::NotFound, json!({ "kind": "subscription" })))
    }
}

/// A webhook callback: an absolute `https://` URL with a host (`-32602` otherwise).
fn check_callback(url: &str) -> Result<(), RpcError> {
    let uri: http::Uri = url.parse().map_err(|_| RpcError::invalid_params("delivery.url is not a URL"))?;
    if uri.scheme_str() != Some("https") || uri.host().is_none_or(str::is_empty) {
        return Err(RpcError::invalid_params("delivery.url must be an https:// URL"));
    }
    Ok(())
}

/// A Standard Webhooks secret: `whsec_` and base64 of 24 to 64 bytes (`-32602` otherwise).
fn check_secret(secret: &str) -> Result<(), RpcError> {
    let key = secret.strip_prefix("whsec_").and_then(|b| STANDARD.decode(b).ok());
    match key {
        Some(k) if (24..=64).contains(&k.len()) => Ok(()),
        _ => Err(RpcError::invalid_params("delivery.secret must be whsec_ and base64 of 24 to 64 bytes")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callbacks_are_https_with_a_host_and_secrets_whsec_of_24_to_64_bytes() {
        assert!(check_callback("https://hooks.example/h").is_ok());
        for bad in ["http://hooks.example/h", "hooks.example/h", "https:///h", "not a url", ""] {
            assert!(check_callback(bad).is_err(), "{bad}");
        }
        let ok = format!("whsec_{}", STANDARD.encode([7u8; 24]));
        assert!(check_secret(&ok).is_ok());
        assert!(check_secret(&format!("whsec_{}", STANDARD.encode([7u8; 64]))).is_ok());
        for bad in [
            format!("whsec_{}", STANDARD.encode([7u8; 23])),
            format!("whsec_{}", STANDARD.encode([7u8; 65])),
            STANDARD.encode([7u8; 32]),
            "whsec_!!!".to_owned(),
        ] {
            assert!(check_secret(&bad).is_err(), "{bad}");
        }
    }
}
