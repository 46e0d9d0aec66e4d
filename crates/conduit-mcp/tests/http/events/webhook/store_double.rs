//! The library's `MemoryWebhookStore`, wrapped so that the tests can wait on
//! it: every write tells waiters once it is done, and the tests read its
//! outbox and its subscriptions through the store's own inspectors.

use async_trait::async_trait;
use conduit_mcp::ext::events::webhook::{
    MemoryWebhookStore, OutboxEntry, Settlement, UpsertError, Upserted, WebhookCaps, WebhookStore, WebhookSubscription,
};
use conduit_mcp::task::StoreError;
use tokio::sync::Notify;

/// The memory store, and a signal after each write.
#[derive(Default)]
pub struct DoubleStore {
    inner: MemoryWebhookStore,
    /// Told after every write, for tests waiting on one.
    changed: Notify,
}

impl DoubleStore {
    /// `result`, once waiters were told of the write that made it.
    fn told<T>(&self, result: T) -> T {
        self.changed.notify_waiters();
        result
    }

    /// Waits (up to 5 s) until `cond` holds, looking again after each write.
    pub async fn until(&self, what: &str, mut cond: impl FnMut(&Self) -> bool) {
        super::guard(what, async {
            loop {
                let changed = self.changed.notified();
                tokio::pin!(changed);
                changed.as_mut().enable();
                if cond(self) {
                    return;
                }
                changed.await;
            }
        })
        .await;
    }

    /// The outbox entries waiting, as `(subscription, id, attempts)`.
    pub fn waiting(&self) -> Vec<(String, String, u32)> {
        self.inner.outbox().into_iter().map(|e| (e.subscription_id, e.id, e.attempts)).collect()
    }

    /// How many subscriptions it holds (lapsed or not).
    pub fn subscriptions(&self) -> usize {
        self.inner.stored()
    }
}

#[async_trait]
impl WebhookStore for DoubleStore {
    async fn upsert(&self, sub: WebhookSubscription, caps: WebhookCaps, now_ms: u64) -> Result<Upserted, UpsertError> {
        self.told(self.inner.upsert(sub, caps, now_ms).await)
    }

    async fn get(&self, principal: &str, id: &str, now_ms: u64) -> Result<Option<WebhookSubscription>, StoreError> {
        self.inner.get(principal, id, now_ms).await
    }

    async fn remove(&self, principal: &str, id: &str, now_ms: u64) -> Result<bool, StoreError> {
        self.told(self.inner.remove(principal, id, now_ms).await)
    }

    async fn verified(&self, principal: &str, url: &str) -> Result<bool, StoreError> {
        self.inner.verified(principal, url).await
    }

    async fn set_verified(&self, principal: &str, url: &str, at_ms: u64) -> Result<(), StoreError> {
        self.told(self.inner.set_verified(principal, url, at_ms).await)
    }

    async fn enqueue(&self, entry: OutboxEntry) -> Result<(), StoreError> {
        self.told(self.inner.enqueue(entry).await)
    }

    async fn live(
        &self,
        now_ms: u64,
        after_id: Option<&str>,
        max: usize,
    ) -> Result<Vec<WebhookSubscription>, StoreError> {
        self.inner.live(now_ms, after_id, max).await
    }

    async fn feed(
        &self,
        subscription_id: &str,
        from: u64,
        to: u64,
        entries: Vec<OutboxEntry>,
    ) -> Result<bool, StoreError> {
        self.told(self.inner.feed(subscription_id, from, to, entries).await)
    }

    async fn claim(&self, node: &str, now_ms: u64, lease_ms: u64, max: usize) -> Result<Vec<OutboxEntry>, StoreError> {
        self.told(self.inner.claim(node, now_ms, lease_ms, max).await)
    }

    async fn settle(
        &self,
        node: &str,
        subscription_id: &str,
        id: &str,
        outcome: Settlement,
        now_ms: u64,
    ) -> Result<bool, StoreError> {
        self.told(self.inner.settle(node, subscription_id, id, outcome, now_ms).await)
    }

    async fn sweep(&self, now_ms: u64) -> Result<usize, StoreError> {
        self.told(self.inner.sweep(now_ms).await)
    }
}
