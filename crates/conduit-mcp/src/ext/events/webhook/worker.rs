//! The worker: claims due outbox entries under a lease, posts each, signed
//! afresh for this attempt, through the transport, and settles it
//! (delivered, tried again later, or dropped). Woken when entries are fed
//! and every `recheck` (retries coming due on the injected clock, entries of
//! other nodes whose lease ended). An entry of a suspended subscription is
//! not claimed (nor tried, if claimed as it was suspended) until a refresh
//! reactivates it. A delivered (or dropped) `terminated` envelope removes
//! its subscription, so within one claim it goes after that subscription's
//! events, and not at all while one of them waits for a retry. Now and then
//! it sweeps lapsed subscriptions away.

use super::attempt::{headers, settlement, signing_secrets};
use super::envelope::is_envelope;
use super::record::{OutboxEntry, Settlement, WebhookSubscription};
use super::runtime::{Streak, Webhooks};
use super::store::SWEEP_BATCH;
use crate::ext::events::Events;
use crate::ext::events::webhook::DeliveryFailure;
use bytes::Bytes;
use std::sync::{Arc, PoisonError};

/// How often (on the handle's clock) lapsed subscriptions are swept from the store.
const SWEEP_EVERY_MS: u64 = 60_000;

fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Events {
    pub(crate) async fn worker_loop(self) {
        let Some(hooks) = self.webhooks().cloned() else { return };
        let shutdown = self.inner.shutdown.clone();
        let c = &hooks.config;
        let mut swept_ms = 0;
        loop {
            let now = self.now_ms();
            if now.saturating_sub(swept_ms) >= SWEEP_EVERY_MS {
                swept_ms = now;
                self.sweep(&hooks, now).await;
            }
            let claimed = match c.store.claim(&c.node, now, millis(c.lease), c.max_in_flight).await {
                Ok(entries) => entries,
                Err(e) => {
                    tracing::warn!(error = %e, "claiming webhook deliveries failed");
                    Vec::new()
                }
            };
            if !claimed.is_empty() {
                // One subscription's entries in the order claimed (its last event before its
                // `terminated`); different subscriptions' at once.
                let mut by_subscription: Vec<Vec<OutboxEntry>> = Vec::new();
                for e in claimed {
                    match by_subscription.iter_mut().find(|g| g[0].subscription_id == e.subscription_id) {
                        Some(g) => g.push(e),
                        None => by_subscription.push(vec![e]),
                    }
                }
                let runs = by_subscription.into_iter().map(|mut group| async {
                    // A `terminated` envelope (position 0) sorts first in claim order but
                    // ends the subscription, outbox and all: it goes after the group's events,
                    // and only once each of them is settled for good.
                    group.sort_by_key(|e| is_envelope(&e.body, "terminated"));
                    let mut all_done = true;
                    for e in group {
                        if is_envelope(&e.body, "terminated") && !all_done {
                            // Left claimed: taken again once its lease ends.
                            continue;
                        }
                        all_done &= !matches!(self.deliver(&hooks, e).await, Some(Settlement::RetryAt(..)) | None);
                    }
                });
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    _ = futures_util::future::join_all(runs) => {}
                }
                continue;
            }
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = hooks.work_wake.notified() => {}
                () = tokio::time::sleep(c.recheck) => {}
            }
        }
    }

    /// Removes lapsed subscriptions, a batch at a time.
    async fn sweep(&self, hooks: &Webhooks, now: u64) {
        loop {
            match hooks.config.store.sweep(now).await {
                Ok(n) if n >= SWEEP_BATCH => {}
                Ok(_) => return,
                Err(e) => {
                    tracing::warn!(error = %e, "sweeping lapsed webhook subscriptions failed");
                    return;
                }
            }
        }
    }

    /// The subscription an entry goes to: as last seen, else as the store has it now.
    async fn subscription_of(&self, hooks: &Webhooks, entry: &OutboxEntry) -> Option<WebhookSubscription> {
        if let Some(sub) = hooks.known(&entry.subscription_id) {
            return Some(sub);
        }
        match hooks.walk(self.now_ms()).await {
            Ok(_) => hooks.known(&entry.subscription_id),
            Err(e) => {
                tracing::warn!(error = %e, "reading webhook subscriptions failed");
                None
            }
        }
    }

    /// One attempt at `entry`; how it settled (`None`: not tried, or not this node's to settle).
    async fn deliver(&self, hooks: &Arc<Webhooks>, entry: OutboxEntry) -> Option<Settlement> {
        let c = &hooks.config;
        let Some(sub) = self.subscription_of(hooks, &entry).await else {
            // Lapsed or removed since it was fed: nobody to deliver to.
            let gone = Settlement::Dropped(DeliveryFailure::ConnectionRefused);
            let _ = c.store.settle(&c.node, &entry.subscription_id, &entry.id, gone, self.now_ms()).await;
            return Some(gone);
        };
        if !sub.active {
            return None;
        }
        let now = self.now_ms();
        let secrets = signing_secrets(&sub, now);
        let headers = headers(&secrets, &entry.id, &sub.id, now, &entry.body);
        let outcome = c.transport.post(&sub.key.url, &headers, Bytes::from(entry.body.clone())).await;
        let now = self.now_ms();
        let settled = settlement(&outcome, entry.attempts.saturating_add(1), &c.retry, now);
        tracing::debug!(subscription = %sub.id, webhook_id = %entry.id, outcome = ?settled, "webhook attempt");
        match c.store.settle(&c.node, &sub.id, &entry.id, settled, now).await {
            Ok(true) => {}
            // Another node took the entry over after this node's lease ended: its attempt counts.
            Ok(false) => return None,
            Err(e) => {
                tracing::warn!(error = %e, "settling a webhook delivery failed");
                return None;
            }
        }
        match settled {
            Settlement::Delivered => {
                hooks.failing.lock().unwrap_or_else(PoisonError::into_inner).remove(&sub.id);
            }
            Settlement::RetryAt(..) | Settlement::Dropped(_) => self.failed(hooks, &sub, now).await,
        }
        let ended = !matches!(settled, Settlement::RetryAt(..)) && is_envelope(&entry.body, "terminated");
        if ended {
            if let Err(e) = c.store.remove(&sub.key.principal, &sub.id, now).await {
                tracing::warn!(error = %e, "removing an ended webhook subscription failed");
            }
            hooks.forget(&sub.id);
        }
        Some(settled)
    }

    /// Counts a failed attempt; suspends the subscription once failures have
    /// lasted as long and been as many as the policy says.
    async fn failed(&self, hooks: &Webhooks, sub: &WebhookSubscription, now: u64) {
        let policy = hooks.config.suspend;
        let suspend = {
            let mut failing = hooks.failing.lock().unwrap_or_else(PoisonError::into_inner);
            let streak = failing.entry(sub.id.clone()).or_insert(Streak { since_ms: now, attempts: 0 });
            streak.attempts = streak.attempts.saturating_add(1);
            let long = now.saturating_sub(streak.since_ms) >= millis(policy.after);
            let due = long && streak.attempts >= policy.min_attempts;
            if due {
                failing.remove(&sub.id);
            }
            due
        };
        if !suspend {
            return;
        }
        tracing::info!(subscription = %sub.id, "suspending a webhook subscription after sustained delivery failures");
        let Ok(Some(mut current)) = hooks.config.store.get(&sub.key.principal, &sub.id, now).await else { return };
        current.active = false;
        match hooks.config.store.upsert(current.clone(), hooks.config.caps, now).await {
            Ok(_) => hooks.note(current),
            Err(e) => tracing::warn!(error = %e, "suspending a webhook subscription failed"),
        }
    }
}
