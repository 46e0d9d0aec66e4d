//! `events/subscribe` and `events/unsubscribe` (events.md §2.7, §2.8).
//!
//! Without [`WebhookConfig`](super::webhook::WebhookConfig) the input is
//! checked and then refused (`Unsupported` naming the delivery mode; nothing
//! to unsubscribe). With it, a subscribe is checked in order — a principal
//! (`Forbidden`), the type (`NotFound`), the mode, the callback and the
//! secret (`-32602`), the type's webhook offer (`Unsupported`), the arguments
//! (`-32602`), the cursor (`-32602`) — then the endpoint is verified unless
//! this principal already proved this URL or the operator vouches for its
//! origin (`CallbackEndpointError` with the category, never the endpoint's
//! words), and the subscription is created or refreshed within the caps
//! (`ResourceExhausted`). Nothing is stored before every check passes.

use super::Events;
use super::webhook::origin::check_callback;
use crate::ctx::Ctx;
use crate::protocol::RpcError;
use crate::protocol::events::{DeliveryMode, EventErrorKind, SubscribeEventsParams, UnsubscribeEventsParams};
use crate::protocol::webhook_signature::WebhookSecret as SigningSecret;
use serde_json::{Value, json};
#[cfg(feature = "webhooks")]
use {
    super::Registered,
    super::cursor::Position,
    super::webhook::origin::origin_listed,
    super::webhook::runtime::Webhooks,
    super::webhook::verify_endpoint,
    super::webhook::{SubscriptionKey, TtlAsk, UpsertError, Upserted, WebhookSecret, WebhookSubscription},
    crate::clock::format_rfc3339_ms,
    serde_json::Map,
    std::sync::Arc,
};

/// A failed store call, as the method answers it (no detail).
#[cfg(feature = "webhooks")]
fn store_error(e: impl std::fmt::Display) -> RpcError {
    tracing::warn!(error = %e, "the webhook store failed");
    RpcError::internal("the webhook store could not be reached")
}

/// `deliveryStatus` of a refresh: how delivery went before it (categories only).
#[cfg(feature = "webhooks")]
fn delivery_status(before: &WebhookSubscription) -> Value {
    let mut status = Map::new();
    status.insert("active".into(), before.active.into());
    if let Some(f) = before.last_failure {
        status.insert("lastError".into(), f.as_str().into());
    }
    if let Some(since) = before.failing_since_ms {
        status.insert("failedSince".into(), format_rfc3339_ms(since).into());
    }
    Value::Object(status)
}

impl Events {
    fn forbidden(&self) -> RpcError {
        self.error(EventErrorKind::Forbidden, json!({ "reason": "webhooks need an authenticated principal" }))
    }

    pub(crate) async fn subscribe(&self, ctx: &Ctx, p: SubscribeEventsParams) -> Result<Value, RpcError> {
        let principal = ctx.owner().ok_or_else(|| self.forbidden())?.to_owned();
        let registered = self.get(&p.name).ok_or_else(|| self.not_found())?;
        if p.delivery.mode != DeliveryMode::Webhook {
            return Err(RpcError::invalid_params("events/subscribe is for delivery.mode \"webhook\" only"));
        }
        #[cfg(feature = "webhooks")]
        let allowed = self.webhooks().map(|h| h.config.allow_origins.clone()).unwrap_or_default();
        #[cfg(not(feature = "webhooks"))]
        let allowed = Vec::new();
        check_callback(&p.delivery.url, &allowed)?;
        let signing = SigningSecret::parse(&p.delivery.secret)
            .map_err(|e| RpcError::invalid_params(format!("delivery.secret: {e}")))?;
        #[cfg(feature = "webhooks")]
        if let Some(hooks) = self.webhooks().cloned() {
            let registered = self.offering(&p.name, DeliveryMode::Webhook)?;
            return self.subscribe_webhook(hooks, principal, &registered, p, signing).await;
        }
        let _ = (principal, signing);
        self.check_arguments(&registered, &p.arguments)?;
        let data = json!({ "feature": "deliveryMode", "value": "webhook" });
        Err(self.error(EventErrorKind::Unsupported, data))
    }

    /// A subscribe checked so far, with webhooks on: the rest of the checks,
    /// the handshake, the upsert.
    #[cfg(feature = "webhooks")]
    async fn subscribe_webhook(
        &self,
        hooks: Arc<Webhooks>,
        principal: String,
        registered: &Registered,
        p: SubscribeEventsParams,
        signing: SigningSecret,
    ) -> Result<Value, RpcError> {
        self.check_arguments(registered, &p.arguments)?;
        let filter = registered.source.filter(p.arguments.clone())?;
        let source = &registered.source;
        let head = source.head().await?;
        let (start, truncated) = match p.cursor.as_deref() {
            None => (head, false),
            Some(c) => {
                let at = self.inner.seal.open(c, Some(principal.as_str()), &p.name).map_err(|_| {
                    RpcError::invalid_params("cursor was not issued for this event type to this caller")
                })?;
                if at.epoch == source.epoch() {
                    self.servable_from(source.as_ref(), &principal, &filter, at.seq).await?
                } else {
                    (head, true)
                }
            }
        };
        let key = SubscriptionKey {
            principal: principal.clone(),
            url: p.delivery.url.clone(),
            name: p.name.clone(),
            arguments: Value::Object(p.arguments),
        };
        let id = key.id();
        let store = &hooks.config.store;
        let now = self.now_ms();
        let before = store.get(&principal, &id, now).await.map_err(store_error)?;
        self.verify(&hooks, &principal, &p.delivery.url, &id, &signing).await?;

        let ask = match p.ttl_ms {
            None => TtlAsk::Default,
            Some(None) => TtlAsk::NoExpiry,
            Some(Some(ms)) => TtlAsk::Millis(ms),
        };
        let refresh_before_ms = hooks.config.ttl.grant(ask, now);
        let secret = WebhookSecret::new(signing.to_text());
        let grace = u64::try_from(hooks.config.secret_grace.as_millis()).unwrap_or(u64::MAX);
        let previous_secret = match &before {
            // Rotated: the old secret signs beside the new one for the grace window.
            Some(b) if b.secret != secret => Some((b.secret.clone(), now.saturating_add(grace))),
            Some(b) => b.previous_secret.clone().filter(|(_, until)| *until > now),
            None => None,
        };
        let sub = WebhookSubscription {
            id: id.clone(),
            key,
            secret,
            previous_secret,
            refresh_before_ms,
            active: true,
            acked_through: start,
            fed_through: start,
            failing_since_ms: None,
            last_failure: None,
        };
        let upserted = store.upsert(sub, hooks.config.caps, now).await.map_err(|e| match e {
            UpsertError::Full { limit, max } => {
                self.error(EventErrorKind::ResourceExhausted, json!({ "limit": limit, "max": max }))
            }
            other => store_error(other),
        })?;
        let stored = store.get(&principal, &id, now).await.map_err(store_error)?;
        let watermark = stored.as_ref().map_or(start, |s| s.acked_through);
        if let Some(s) = stored {
            hooks.note(s);
        }
        hooks.feed_wake.notify_one();
        hooks.work_wake.notify_one();
        let cursor =
            self.inner.seal.seal(Some(principal.as_str()), &p.name, Position { epoch: source.epoch(), seq: watermark });
        let mut result = json!({
            "id": id,
            "refreshBefore": refresh_before_ms.map(format_rfc3339_ms),
            "cursor": cursor,
            "truncated": upserted == Upserted::Created && truncated,
        });
        if let (Upserted::Refreshed, Some(b)) = (upserted, &before) {
            result["deliveryStatus"] = delivery_status(b);
        }
        Ok(result)
    }

    /// The handshake, unless `principal` proved `url` already or the
    /// operator vouches for its origin; records a success.
    #[cfg(feature = "webhooks")]
    async fn verify(
        &self,
        hooks: &Arc<Webhooks>,
        principal: &str,
        url: &str,
        id: &str,
        secret: &SigningSecret,
    ) -> Result<(), RpcError> {
        let c = &hooks.config;
        if origin_listed(url, &c.verified_origins) || c.store.verified(principal, url).await.map_err(store_error)? {
            return Ok(());
        }
        if let Err(failure) =
            verify_endpoint(c.transport.as_ref(), url, id, std::slice::from_ref(secret), self.now_ms()).await
        {
            tracing::debug!(subscription = %id, reason = failure.as_str(), "webhook endpoint verification failed");
            return Err(self.error(EventErrorKind::CallbackEndpointError, json!({ "reason": failure.as_str() })));
        }
        c.store.set_verified(principal, url, self.now_ms()).await.map_err(store_error)
    }

    /// Where a subscription asked to start after `after` can start, and
    /// whether that is later (`truncated`: the log no longer holds what
    /// followed `after`). Delivery then starts there, so the response says
    /// `truncated` and no `gap` envelope follows for the same loss.
    #[cfg(feature = "webhooks")]
    async fn servable_from(
        &self,
        source: &dyn super::source::Source,
        principal: &str,
        filter: &super::source::Filter,
        after: u64,
    ) -> Result<(u64, bool), RpcError> {
        let probe = crate::seq_log::ReadFrom { after, floor_ms: None, max_entries: 1, max_bytes: 1 };
        let page = source.read(Some(principal), filter, probe).await?;
        if !page.truncated {
            return Ok((after, false));
        }
        // Just before the first occurrence it can still send, else where the read got to.
        let start = page.events.first().map_or(page.through, |(seq, _)| seq - 1);
        Ok((start, true))
    }

    pub(crate) async fn unsubscribe(&self, ctx: &Ctx, p: UnsubscribeEventsParams) -> Result<Value, RpcError> {
        let principal = ctx.owner().ok_or_else(|| self.forbidden())?;
        if p.delivery.mode.is_some_and(|m| m != DeliveryMode::Webhook) {
            return Err(RpcError::invalid_params("events/unsubscribe is for delivery.mode \"webhook\" only"));
        }
        let not_found = || self.error(EventErrorKind::NotFound, json!({ "kind": "subscription" }));
        #[cfg(not(feature = "webhooks"))]
        {
            let _ = (p, principal);
            Err(not_found())
        }
        #[cfg(feature = "webhooks")]
        {
            let Some(hooks) = self.webhooks() else { return Err(not_found()) };
            self.unsubscribe_webhook(hooks, principal, p)
                .await
                .and_then(|removed| if removed { Ok(json!({})) } else { Err(not_found()) })
        }
    }

    /// Removes the caller's subscription of this key; whether there was one.
    #[cfg(feature = "webhooks")]
    async fn unsubscribe_webhook(
        &self,
        hooks: &Webhooks,
        principal: &str,
        p: UnsubscribeEventsParams,
    ) -> Result<bool, RpcError> {
        let key = SubscriptionKey {
            principal: principal.to_owned(),
            url: p.delivery.url,
            name: p.name,
            arguments: Value::Object(p.arguments),
        };
        let id = key.id();
        let removed = hooks.config.store.remove(principal, &id, self.now_ms()).await.map_err(store_error)?;
        if removed {
            hooks.forget(&id);
        }
        Ok(removed)
    }
}
