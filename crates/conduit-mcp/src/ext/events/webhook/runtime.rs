//! [`Webhooks`]: webhook delivery as one [`Events`] handle runs it — the
//! configuration, what wakes the feeder and the worker, the subscriptions
//! seen on the last walk of the store (where the worker finds a claimed
//! entry's callback and secrets), the type each was last fed from, and this
//! node's failure streaks. The
//! feeder and the worker are two tasks started with the server and ended by
//! its shutdown.

use super::config::WebhookConfig;
use super::record::WebhookSubscription;
use crate::ext::events::{Events, Registered};
use crate::task::StoreError;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::Notify;

/// Subscriptions per walk of [`WebhookStore::live`](super::WebhookStore::live).
pub(crate) const WALK_PAGE: usize = 100;

/// Failed attempts in a row at one subscription, on this node.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Streak {
    /// When the first of them was made (Unix ms).
    pub(crate) since_ms: u64,
    /// How many.
    pub(crate) attempts: u32,
}

/// Webhook delivery of one handle.
pub(crate) struct Webhooks {
    pub(crate) config: WebhookConfig,
    /// Wakes the feeder (a new or refreshed subscription).
    pub(crate) feed_wake: Notify,
    /// Wakes the worker (entries fed, a subscription reactivated).
    pub(crate) work_wake: Notify,
    /// The live subscriptions by id, as last seen.
    known: Mutex<HashMap<String, WebhookSubscription>>,
    /// Failure streaks by subscription id.
    pub(crate) failing: Mutex<HashMap<String, Streak>>,
    /// The event type each subscription was last fed from on this node (a
    /// type offered again then is followed only if it changed additively).
    fed_from: Mutex<HashMap<String, Arc<Registered>>>,
}

impl Webhooks {
    pub(crate) fn new(config: WebhookConfig) -> Self {
        Self {
            config,
            feed_wake: Notify::new(),
            work_wake: Notify::new(),
            known: Mutex::default(),
            failing: Mutex::default(),
            fed_from: Mutex::default(),
        }
    }

    /// The subscription `id` as last seen.
    pub(crate) fn known(&self, id: &str) -> Option<WebhookSubscription> {
        self.known.lock().unwrap_or_else(PoisonError::into_inner).get(id).cloned()
    }

    /// Notes `sub` as it is now.
    pub(crate) fn note(&self, sub: WebhookSubscription) {
        self.known.lock().unwrap_or_else(PoisonError::into_inner).insert(sub.id.clone(), sub);
    }

    /// Forgets the subscription `id`.
    pub(crate) fn forget(&self, id: &str) {
        self.known.lock().unwrap_or_else(PoisonError::into_inner).remove(id);
        self.failing.lock().unwrap_or_else(PoisonError::into_inner).remove(id);
        self.fed_from.lock().unwrap_or_else(PoisonError::into_inner).remove(id);
    }

    /// The type subscription `id` was last fed from on this node.
    pub(crate) fn fed_from(&self, id: &str) -> Option<Arc<Registered>> {
        self.fed_from.lock().unwrap_or_else(PoisonError::into_inner).get(id).cloned()
    }

    /// Notes that subscription `id` is fed from `registered`.
    pub(crate) fn feeding_from(&self, id: &str, registered: &Arc<Registered>) {
        self.fed_from.lock().unwrap_or_else(PoisonError::into_inner).insert(id.to_owned(), registered.clone());
    }

    /// Every subscription live at `now_ms`, walked page by page; also what
    /// [`known`](Self::known) answers from now on.
    pub(crate) async fn walk(&self, now_ms: u64) -> Result<Vec<WebhookSubscription>, StoreError> {
        let mut all = Vec::new();
        loop {
            let after = all.last().map(|s: &WebhookSubscription| s.id.clone());
            let page = self.config.store.live(now_ms, after.as_deref(), WALK_PAGE).await?;
            let done = page.len() < WALK_PAGE;
            all.extend(page);
            if done {
                break;
            }
        }
        let map: HashMap<String, WebhookSubscription> = all.iter().map(|s| (s.id.clone(), s.clone())).collect();
        self.fed_from.lock().unwrap_or_else(PoisonError::into_inner).retain(|id, _| map.contains_key(id));
        *self.known.lock().unwrap_or_else(PoisonError::into_inner) = map;
        Ok(all)
    }
}

impl Events {
    /// The webhook delivery of this handle, when configured.
    pub(crate) fn webhooks(&self) -> Option<&Arc<Webhooks>> {
        self.inner.webhooks.as_ref()
    }

    /// Starts the feeder and the worker (once; inside the runtime).
    pub(crate) fn start_webhooks(&self) {
        if self.webhooks().is_none() || self.inner.started.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        let feeder = self.clone();
        tokio::spawn(async move { feeder.feeder_loop().await });
        let worker = self.clone();
        tokio::spawn(async move { worker.worker_loop().await });
    }

    /// Now, on the handle's clock.
    pub(crate) fn now_ms(&self) -> u64 {
        self.inner.clock.now_ms()
    }
}
