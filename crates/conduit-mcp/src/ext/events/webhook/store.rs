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
    /// refresh counts the new size in place of the old). A refresh takes
    /// `secret`, `previous_secret`, `refresh_before_ms` and `active` from
    /// `sub` and keeps the rest as stored (watermark, `fed_through`, failure
    /// state, outbox); a create (also over a lapsed one, whose outbox goes)
    /// stores `sub` whole. Checked and written in one step: two nodes
    /// upserting at once never take a principal past a cap.
    async fn upsert(&self, sub: WebhookSubscription, caps: WebhookCaps, now_ms: u64) -> Result<Upserted, UpsertError>;

    /// The subscription `id` of `principal`, if it is live at `now_ms`.
    async fn get(&self, principal: &str, id: &str, now_ms: u64) -> Result<Option<WebhookSubscription>, StoreError>;

    /// Removes the subscription `id` of `principal` (live or lapsed) and its
    /// outbox; whether a live one was there.
    async fn remove(&self, principal: &str, id: &str, now_ms: u64) -> Result<bool, StoreError>;

    /// Whether `principal` proved control of `url` (events.md §3.4), and was
    /// not asked again since.
    async fn verified(&self, principal: &str, url: &str) -> Result<bool, StoreError>;

    /// Records that `principal` proved control of `url` at `at_ms`.
    async fn set_verified(&self, principal: &str, url: &str, at_ms: u64) -> Result<(), StoreError>;

    /// Adds `entry` to the outbox (an entry of the same
    /// `(subscription_id, id)` is kept as it is; one for a subscription not
    /// stored is dropped): control envelopes and replays; occurrences of the
    /// log go through [`feed`](Self::feed).
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
    /// first, or the subscription is gone. `acked_through` then moves to the
    /// safe watermark (see [`settle`](Self::settle)): positions fed with no
    /// entry were none of this subscriber's.
    async fn feed(
        &self,
        subscription_id: &str,
        from: u64,
        to: u64,
        entries: Vec<OutboxEntry>,
    ) -> Result<bool, StoreError>;

    /// Claims up to `max` entries due at `now_ms` that no node holds (or
    /// whose lease ended) for `node` until `now_ms + lease_ms`, oldest due
    /// first (then lowest position), and returns them with their lease.
    /// Only entries of subscriptions live at `now_ms` and active are claimed
    /// (a suspended subscription's entries wait for the refresh that
    /// reactivates it). A subscription's `terminated` envelope (its id starts
    /// with [`TERMINATED_ID_PREFIX`]) is not claimed while any other entry of
    /// that subscription is in the outbox: delivering it removes the
    /// subscription, so it must go last.
    async fn claim(&self, node: &str, now_ms: u64, lease_ms: u64, max: usize) -> Result<Vec<OutboxEntry>, StoreError>;

    /// Settles the attempt `node` made on the entry `(subscription_id, id)`
    /// at `now_ms`; `false` (nothing changed) when the entry is gone or its
    /// lease names another node (it took the entry over after the lease
    /// ended). A lease that ended but nobody took over still names `node`.
    ///
    /// - [`Settlement::Delivered`]: the entry goes, the subscription's
    ///   failure state (`failing_since_ms`, `last_failure`) is cleared, and
    ///   `acked_through` moves to the safe watermark (below).
    /// - [`Settlement::Dropped`]: the entry goes, the failure is recorded
    ///   (`last_failure`; `failing_since_ms` if not failing already), and
    ///   `acked_through` moves to the safe watermark.
    /// - [`Settlement::RetryAt`]: the entry stays, due at the given time,
    ///   with one more attempt and no lease; the failure is recorded.
    ///
    /// The safe watermark of a subscription (events.md §3.2) is the highest
    /// position at or before which every occurrence put in its outbox was
    /// delivered or abandoned: `min(fed_through, p - 1)` where `p` is the
    /// lowest position of an occurrence entry still in its outbox
    /// (`position > 0`; envelopes, at position 0, never hold it back), or
    /// `fed_through` when none is. `acked_through` takes it when it is
    /// higher: it never moves back.
    async fn settle(
        &self,
        node: &str,
        subscription_id: &str,
        id: &str,
        outcome: Settlement,
        now_ms: u64,
    ) -> Result<bool, StoreError>;

    /// Removes the subscriptions lapsed at `now_ms` with their outbox (at
    /// most [`SWEEP_BATCH`] a call: call again while it returns that many),
    /// and the verifications of `(principal, url)` pairs that no stored
    /// subscription names and that are older than [`VERIFICATION_KEEP_MS`].
    /// Returns how many subscriptions went. The delivery loop calls it now
    /// and then; nothing else removes lapsed rows (reads skip them).
    async fn sweep(&self, now_ms: u64) -> Result<usize, StoreError>;
}

/// How the id of a subscription's `terminated` envelope starts: the one
/// outbox entry [`WebhookStore::claim`] holds back while others of its
/// subscription remain.
pub const TERMINATED_ID_PREFIX: &str = "msg_terminated_";

/// The most subscriptions one [`WebhookStore::sweep`] removes.
pub const SWEEP_BATCH: usize = 1_000;

/// How long an endpoint verification outlives the last subscription that
/// named its `(principal, url)` (or is kept before the first is made):
/// 1 hour.
pub const VERIFICATION_KEEP_MS: u64 = 3_600_000;
