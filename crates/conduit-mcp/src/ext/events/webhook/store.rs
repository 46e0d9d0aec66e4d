//! [`WebhookStore`]: where webhook subscriptions, endpoint verifications and
//! the delivery outbox live. Shared by every node of a deployment (the SQL
//! stores): a subscription made on one node is delivered by any, and an
//! outbox entry is claimed by one node for a lease, so that another takes it
//! over when that node dies.

use super::record::{OutboxEntry, Settlement, WebhookCaps, WebhookSubscription};
use crate::task::StoreError;
use async_trait::async_trait;

/// What an upsert did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upserted {
    /// A new subscription (or one that had lapsed).
    Created,
    /// A live subscription refreshed: TTL, secret and `active` replaced,
    /// its watermark and outbox kept.
    Refreshed,
}

/// Why an upsert was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UpsertError {
    /// The principal holds its most subscriptions (`limit` = `"subscriptions"`)
    /// or bytes of them (`"subscriptionBytes"`).
    #[error("the principal holds its most webhook {limit} ({max})")]
    Full {
        /// Which cap.
        limit: &'static str,
        /// Its value.
        max: usize,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Webhook state shared by the nodes of a deployment.
#[async_trait]
pub trait WebhookStore: Send + Sync + 'static {
    /// Creates `sub`, or refreshes the live one of the same id: within
    /// `caps` for its principal (lapsed subscriptions do not count; a
    /// refresh counts the new size in place of the old).
    async fn upsert(&self, sub: WebhookSubscription, caps: WebhookCaps, now_ms: u64) -> Result<Upserted, UpsertError>;

    /// The subscription `id` of `principal`, if it is live at `now_ms`.
    async fn get(&self, principal: &str, id: &str, now_ms: u64) -> Result<Option<WebhookSubscription>, StoreError>;

    /// Removes the subscription `id` of `principal` and its outbox; whether
    /// a live one was there.
    async fn remove(&self, principal: &str, id: &str, now_ms: u64) -> Result<bool, StoreError>;

    /// Whether `principal` proved control of `url` (events.md §3.4), and was
    /// not asked again since.
    async fn verified(&self, principal: &str, url: &str) -> Result<bool, StoreError>;

    /// Records that `principal` proved control of `url` at `at_ms`.
    async fn set_verified(&self, principal: &str, url: &str, at_ms: u64) -> Result<(), StoreError>;

    /// Adds `entry` to the outbox (an entry of the same
    /// `(subscription_id, id)` is kept as it is): control envelopes and
    /// replays; occurrences of the log go through [`feed`](Self::feed).
    async fn enqueue(&self, entry: OutboxEntry) -> Result<(), StoreError>;

    /// Up to `max` subscriptions live at `now_ms` (active or not), in id
    /// order after `after_id`: what a node's feeder walks.
    async fn live(
        &self,
        now_ms: u64,
        after_id: Option<&str>,
        max: usize,
    ) -> Result<Vec<WebhookSubscription>, StoreError>;

    /// Adds `entries` to the outbox of `subscription_id` and moves its
    /// `fed_through` from `from` to `to`, in one step and only if it is
    /// still `from`: `false` (nothing written) when another node fed it
    /// first, or the subscription is gone.
    async fn feed(
        &self,
        subscription_id: &str,
        from: u64,
        to: u64,
        entries: Vec<OutboxEntry>,
    ) -> Result<bool, StoreError>;

    /// Claims up to `max` entries due at `now_ms` that no node holds (or
    /// whose lease ended) for `node` until `now_ms + lease_ms`, oldest due
    /// first.
    async fn claim(&self, node: &str, now_ms: u64, lease_ms: u64, max: usize) -> Result<Vec<OutboxEntry>, StoreError>;

    /// Settles the attempt `node` made on entry `id` at `now_ms`: ignored
    /// when `node` no longer holds it (another node took it over).
    async fn settle(&self, node: &str, id: &str, outcome: Settlement, now_ms: u64) -> Result<(), StoreError>;
}
