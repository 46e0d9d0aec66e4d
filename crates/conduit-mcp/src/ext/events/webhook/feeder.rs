//! The feeder: puts each live subscription's occurrences into its outbox.
//! Woken when any event type's log moves (as push streams are), when a
//! subscription is made or refreshed, and every `recheck` (subscriptions
//! made on other nodes), it walks [`WebhookStore::live`](super::WebhookStore::live),
//! reads each active subscription's type after its `fed_through` as its
//! principal sees it, through its filter, builds each body once (the
//! occurrence with the safe watermark as its `cursor`) and hands the batch to
//! [`feed`](super::WebhookStore::feed), which moves `fed_through` only if no
//! other node did first. A gap in the log adds a `gap` envelope; the last
//! occurrence a task-scoped subscription can see adds a `terminated`
//! envelope; a type no longer offered adds one too, and so does a type
//! offered again, since it was last fed on this node, with a change that is
//! not additive (`Unsupported`, `reason: "schema_changed"`).

use super::envelope::{envelope_id, gap, terminated};
use super::record::{OutboxEntry, WebhookSubscription};
use super::runtime::Webhooks;
use super::store::TERMINATED_ID_PREFIX;
use crate::ext::events::Events;
use crate::ext::events::cursor::Position;
use crate::protocol::RpcError;
use crate::protocol::events::{DeliveryMode, EventErrorKind};
use crate::seq_log::ReadFrom;
use futures_util::future::select_all;
use serde_json::{Value, json};
use std::sync::{Arc, PoisonError};
use tokio::sync::watch;

/// Most pages of one subscription's log fed in one pass.
const PAGES_PER_PASS: usize = 16;

/// Waits until `w` moves; forever once its sender is gone.
async fn moved(w: &mut watch::Receiver<u64>) {
    if w.changed().await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// The id of a subscription's one `terminated` envelope (the same on every
/// node and pass, so the outbox keeps it once).
fn terminated_id(sub: &WebhookSubscription) -> String {
    format!("{TERMINATED_ID_PREFIX}{}", sub.id.trim_start_matches("sub_"))
}

impl Events {
    pub(crate) async fn feeder_loop(self) {
        let Some(hooks) = self.webhooks().cloned() else { return };
        let shutdown = self.inner.shutdown.clone();
        loop {
            let mut watches: Vec<watch::Receiver<u64>> = {
                let types = self.inner.types.read().unwrap_or_else(PoisonError::into_inner);
                types.values().map(|r| r.source.watch()).collect()
            };
            let mut catalog = self.inner.catalog.subscribe();
            for w in &mut watches {
                w.borrow_and_update();
            }
            if let Err(e) = self.feed_all(&hooks).await {
                tracing::warn!(error = %e, "feeding webhook subscriptions failed");
            }
            let any = async {
                if watches.is_empty() {
                    std::future::pending::<()>().await;
                }
                select_all(watches.iter_mut().map(|w| Box::pin(moved(w)))).await;
            };
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = hooks.feed_wake.notified() => {}
                () = any => {}
                _ = catalog.changed() => {}
                () = tokio::time::sleep(hooks.config.recheck) => {}
            }
        }
    }

    /// One pass over every live subscription.
    async fn feed_all(&self, hooks: &Arc<Webhooks>) -> Result<(), crate::task::StoreError> {
        let now = self.now_ms();
        for sub in hooks.walk(now).await? {
            if sub.active {
                self.feed_one(hooks, &sub, now).await?;
            }
        }
        Ok(())
    }

    /// Feeds one subscription up to its log's head (or [`PAGES_PER_PASS`]).
    async fn feed_one(
        &self,
        hooks: &Webhooks,
        sub: &WebhookSubscription,
        now: u64,
    ) -> Result<(), crate::task::StoreError> {
        let store = &hooks.config.store;
        let key = &sub.key;
        let ending = |error: RpcError| OutboxEntry {
            id: terminated_id(sub),
            subscription_id: sub.id.clone(),
            position: 0,
            body: terminated(&error),
            attempts: 0,
            due_ms: now,
            lease: None,
        };
        let Some(registered) = self.get(&key.name) else {
            // The type is gone: the subscription ends (the worker removes it once told).
            let error = self.error(EventErrorKind::NotFound, json!({ "kind": "event" }));
            store.enqueue(ending(error)).await?;
            hooks.work_wake.notify_one();
            return Ok(());
        };
        if let Some(before) = hooks.fed_from(&sub.id).filter(|b| !Arc::ptr_eq(b, &registered)) {
            // Offered again since it was last fed here: it goes on only after an additive change.
            if let Err(error) = self.carries_on(&before, &registered, DeliveryMode::Webhook) {
                store.enqueue(ending(error)).await?;
                hooks.work_wake.notify_one();
                return Ok(());
            }
        }
        hooks.feeding_from(&sub.id, &registered);
        let source = &registered.source;
        let arguments = match &key.arguments {
            Value::Object(m) => m.clone(),
            _ => serde_json::Map::new(),
        };
        let Ok(filter) = source.filter(arguments) else {
            tracing::debug!(subscription = %sub.id, "a stored webhook subscription's arguments no longer filter");
            return Ok(());
        };
        let owner = Some(key.principal.as_str());
        let seal = |seq| self.inner.seal.seal(owner, &key.name, Position { epoch: source.epoch(), seq });
        let mut from = sub.fed_through;
        let mut settled = sub.acked_through >= sub.fed_through;
        let c = &self.inner.config;
        for _ in 0..PAGES_PER_PASS {
            let read =
                ReadFrom { after: from, floor_ms: None, max_entries: c.max_poll_events, max_bytes: c.max_page_bytes };
            let page = match source.read(owner, &filter, read).await {
                Ok(p) => p,
                Err(e) => {
                    tracing::debug!(subscription = %sub.id, error = %e.message, "reading for a webhook subscription failed");
                    return Ok(());
                }
            };
            if page.events.is_empty() && page.through == from && !page.truncated {
                return Ok(());
            }
            let first = page.events.first().map_or(page.through, |(seq, _)| *seq);
            let mut entries = Vec::with_capacity(page.events.len() + 1);
            let entry = |id: String, position: u64, body: Vec<u8>| OutboxEntry {
                id,
                subscription_id: sub.id.clone(),
                position,
                body,
                attempts: 0,
                due_ms: now,
                lease: None,
            };
            if page.truncated {
                entries.push(entry(envelope_id("gap"), 0, gap(&seal(first.saturating_sub(1)))));
            }
            let mut last = false;
            for (i, (seq, mut event)) in page.events.into_iter().enumerate() {
                // The safe watermark: never past an occurrence not yet acknowledged.
                let mark = match (settled, i) {
                    (true, 0) => seq,
                    (true, _) => first.saturating_sub(1).max(from),
                    (false, _) => sub.acked_through,
                };
                event.cursor = Some(seal(mark));
                last = source.is_last(&filter, &event);
                let body = serde_json::to_vec(&event).unwrap_or_default();
                entries.push(entry(event.event_id.clone(), seq, body));
                if last {
                    break;
                }
            }
            if last {
                let data = json!({ "kind": "subscription", "reason": "task_terminal" });
                entries.push(ending(self.error(EventErrorKind::NotFound, data)));
            }
            let any = !entries.is_empty();
            if !store.feed(&sub.id, from, page.through, entries).await? {
                // Another node fed it first.
                return Ok(());
            }
            if any {
                hooks.work_wake.notify_one();
            }
            from = page.through;
            settled = false;
            if !page.more || last {
                return Ok(());
            }
        }
        hooks.feed_wake.notify_one();
        Ok(())
    }
}
