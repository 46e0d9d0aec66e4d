//! [`MemoryWebhookStore`]: webhook state in this process, for one node (or
//! tests). Everything sits behind one mutex; every operation is a short
//! critical section with no `.await` inside. Bounded: subscriptions per
//! principal by the caller's [`WebhookCaps`], and in all, the outbox and the
//! verifications by [`MemoryWebhookLimits`].

use super::record::{OutboxEntry, Settlement, WebhookCaps, WebhookSubscription};
use super::store::{SWEEP_BATCH, TERMINATED_ID_PREFIX, UpsertError, Upserted, VERIFICATION_KEEP_MS, WebhookStore};
use crate::task::StoreError;
use async_trait::async_trait;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;

/// What a [`MemoryWebhookStore`] holds at most, across principals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct MemoryWebhookLimits {
    /// Subscriptions in all, live or lapsed (default 100 000): an upsert past
    /// it is refused as `Full { limit: "subscriptions" }`.
    pub max_subscriptions: usize,
    /// Bytes of outbox entries in all (bodies and ids; default 64 MiB): an
    /// `enqueue` or `feed` past it fails and writes nothing (a feeder tries
    /// again later, from the same position).
    pub max_outbox_bytes: usize,
    /// Endpoint verifications kept (default 10 000): past it, the oldest goes.
    pub max_verifications: usize,
}

impl Default for MemoryWebhookLimits {
    fn default() -> Self {
        Self { max_subscriptions: 100_000, max_outbox_bytes: 64 * 1024 * 1024, max_verifications: 10_000 }
    }
}

/// Where an entry is in the claim order: due, position, subscription, id.
type DueKey = (u64, u64, String, String);

#[derive(Debug, Default)]
struct State {
    /// By id: `live` walks them in id order.
    subs: BTreeMap<String, WebhookSubscription>,
    /// Each principal's subscription ids (live or lapsed).
    by_principal: HashMap<String, BTreeSet<String>>,
    /// By `(subscription_id, id)`: a subscription's entries are one range.
    outbox: BTreeMap<(String, String), OutboxEntry>,
    /// Every outbox entry in claim order.
    due: BTreeSet<DueKey>,
    outbox_bytes: usize,
    /// `(principal, url)` → when verified.
    verified: HashMap<(String, String), u64>,
}

/// Webhook subscriptions, verifications and the outbox in memory: one node's
/// (nothing is shared with other processes, nothing survives a restart). Use
/// the SQL stores of `conduit-mcp-sql` for several nodes, or for
/// subscriptions that must outlive the process (no-expiry grants).
#[derive(Debug, Default)]
pub struct MemoryWebhookStore {
    state: Mutex<State>,
    limits: MemoryWebhookLimits,
}

impl MemoryWebhookStore {
    /// An empty store with the default [`MemoryWebhookLimits`].
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store within `limits`.
    pub fn with_limits(limits: MemoryWebhookLimits) -> Self {
        Self { state: Mutex::default(), limits }
    }

    /// Every outbox entry waiting now (claimed or not), in claim order: what
    /// an operator (or a test) looks at to see deliveries pending.
    pub fn outbox(&self) -> Vec<OutboxEntry> {
        let s = self.lock();
        s.due.iter().filter_map(|(_, _, sub, id)| s.outbox.get(&(sub.clone(), id.clone())).cloned()).collect()
    }

    /// How many subscriptions it holds, live or lapsed (lapsed ones go at the next sweep).
    pub fn stored(&self) -> usize {
        self.lock().subs.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // Every critical section leaves the state whole: a panic elsewhere does not taint it.
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// What an entry counts against [`MemoryWebhookLimits::max_outbox_bytes`].
fn entry_bytes(e: &OutboxEntry) -> usize {
    e.body.len() + e.id.len() + e.subscription_id.len() + e.lease.as_ref().map_or(0, |(n, _)| n.len()) + 64
}

fn due_key(e: &OutboxEntry) -> DueKey {
    (e.due_ms, e.position, e.subscription_id.clone(), e.id.clone())
}

/// Whether the outbox holds an entry of subscription `sub` other than `id`.
fn others_waiting(outbox: &BTreeMap<(String, String), OutboxEntry>, sub: &str, id: &str) -> bool {
    let from = (sub.to_owned(), String::new());
    outbox.range(from..).take_while(|((s, _), _)| s == sub).any(|((_, i), _)| i != id)
}

fn full(what: &str) -> StoreError {
    StoreError::backend_message(format!("memory webhook store: the {what} is full"))
}

impl State {
    fn range(&self, sub: &str) -> impl Iterator<Item = &OutboxEntry> {
        let start = (sub.to_owned(), String::new());
        self.outbox.range(start..).take_while(move |((s, _), _)| s == sub).map(|(_, e)| e)
    }

    fn insert_entry(&mut self, entry: OutboxEntry) {
        let key = (entry.subscription_id.clone(), entry.id.clone());
        if self.outbox.contains_key(&key) {
            return;
        }
        self.outbox_bytes += entry_bytes(&entry);
        self.due.insert(due_key(&entry));
        self.outbox.insert(key, entry);
    }

    fn remove_entry(&mut self, sub: &str, id: &str) -> Option<OutboxEntry> {
        let entry = self.outbox.remove(&(sub.to_owned(), id.to_owned()))?;
        self.outbox_bytes -= entry_bytes(&entry);
        self.due.remove(&due_key(&entry));
        Some(entry)
    }

    fn clear_outbox(&mut self, sub: &str) {
        let ids: Vec<String> = self.range(sub).map(|e| e.id.clone()).collect();
        for id in ids {
            self.remove_entry(sub, &id);
        }
    }

    fn remove_sub(&mut self, id: &str) -> Option<WebhookSubscription> {
        let sub = self.subs.remove(id)?;
        if let Some(ids) = self.by_principal.get_mut(&sub.key.principal) {
            ids.remove(id);
            if ids.is_empty() {
                self.by_principal.remove(&sub.key.principal);
            }
        }
        self.clear_outbox(id);
        Some(sub)
    }

    /// Moves `acked_through` of `sub` to its safe watermark.
    fn advance_watermark(&mut self, sub: &str) {
        let lowest = self.range(sub).filter(|e| e.position > 0).map(|e| e.position).min();
        if let Some(s) = self.subs.get_mut(sub) {
            let safe = lowest.map_or(s.fed_through, |p| s.fed_through.min(p - 1));
            s.acked_through = s.acked_through.max(safe);
        }
    }
}

#[async_trait]
impl WebhookStore for MemoryWebhookStore {
    async fn upsert(&self, sub: WebhookSubscription, caps: WebhookCaps, now_ms: u64) -> Result<Upserted, UpsertError> {
        let mut st = self.lock();
        let principal = sub.key.principal.clone();
        // The principal's lapsed subscriptions go now: they count for nothing.
        let lapsed: Vec<String> = st
            .by_principal
            .get(&principal)
            .into_iter()
            .flatten()
            .filter(|id| **id != sub.id && st.subs.get(*id).is_some_and(|s| s.expired(now_ms)))
            .cloned()
            .collect();
        for id in lapsed {
            st.remove_sub(&id);
        }
        let (count, bytes) = st
            .by_principal
            .get(&principal)
            .into_iter()
            .flatten()
            .filter(|id| **id != sub.id)
            .filter_map(|id| st.subs.get(id))
            .filter(|s| !s.expired(now_ms))
            .fold((0, 0), |(n, b), s| (n + 1, b + s.held_bytes()));
        if count + 1 > caps.max_per_principal {
            return Err(UpsertError::Full { limit: "subscriptions", max: caps.max_per_principal });
        }
        if bytes + sub.held_bytes() > caps.max_bytes_per_principal {
            return Err(UpsertError::Full { limit: "subscriptionBytes", max: caps.max_bytes_per_principal });
        }
        match st.subs.get(&sub.id).map(|s| s.expired(now_ms)) {
            Some(false) => {
                if let Some(old) = st.subs.get_mut(&sub.id) {
                    old.secret = sub.secret;
                    old.previous_secret = sub.previous_secret;
                    old.refresh_before_ms = sub.refresh_before_ms;
                    old.active = sub.active;
                }
                return Ok(Upserted::Refreshed);
            }
            Some(true) => st.clear_outbox(&sub.id),
            None if st.subs.len() >= self.limits.max_subscriptions => {
                return Err(UpsertError::Full { limit: "subscriptions", max: self.limits.max_subscriptions });
            }
            None => {}
        }
        st.by_principal.entry(principal).or_default().insert(sub.id.clone());
        st.subs.insert(sub.id.clone(), sub);
        Ok(Upserted::Created)
    }

    async fn get(&self, principal: &str, id: &str, now_ms: u64) -> Result<Option<WebhookSubscription>, StoreError> {
        let st = self.lock();
        Ok(st.subs.get(id).filter(|s| s.key.principal == principal && !s.expired(now_ms)).cloned())
    }

    async fn remove(&self, principal: &str, id: &str, now_ms: u64) -> Result<bool, StoreError> {
        let mut st = self.lock();
        let theirs = st.subs.get(id).is_some_and(|s| s.key.principal == principal);
        if !theirs {
            return Ok(false);
        }
        Ok(st.remove_sub(id).is_some_and(|s| !s.expired(now_ms)))
    }

    async fn verified(&self, principal: &str, url: &str) -> Result<bool, StoreError> {
        Ok(self.lock().verified.contains_key(&(principal.to_owned(), url.to_owned())))
    }

    async fn set_verified(&self, principal: &str, url: &str, at_ms: u64) -> Result<(), StoreError> {
        let mut st = self.lock();
        let key = (principal.to_owned(), url.to_owned());
        if !st.verified.contains_key(&key) && st.verified.len() >= self.limits.max_verifications {
            let oldest = st.verified.iter().min_by_key(|(_, at)| **at).map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                st.verified.remove(&k);
            }
        }
        if self.limits.max_verifications > 0 {
            st.verified.insert(key, at_ms);
        }
        Ok(())
    }

    async fn enqueue(&self, entry: OutboxEntry) -> Result<(), StoreError> {
        let mut st = self.lock();
        if !st.subs.contains_key(&entry.subscription_id) {
            return Ok(());
        }
        if st.outbox_bytes + entry_bytes(&entry) > self.limits.max_outbox_bytes {
            return Err(full("outbox"));
        }
        st.insert_entry(entry);
        Ok(())
    }

    async fn live(
        &self,
        now_ms: u64,
        after_id: Option<&str>,
        max: usize,
    ) -> Result<Vec<WebhookSubscription>, StoreError> {
        let st = self.lock();
        let after = after_id.map_or(std::ops::Bound::Unbounded, |a| std::ops::Bound::Excluded(a.to_owned()));
        Ok(st
            .subs
            .range::<String, _>((after, std::ops::Bound::Unbounded))
            .map(|(_, s)| s)
            .filter(|s| !s.expired(now_ms))
            .take(max)
            .cloned()
            .collect())
    }

    async fn feed(
        &self,
        subscription_id: &str,
        from: u64,
        to: u64,
        entries: Vec<OutboxEntry>,
    ) -> Result<bool, StoreError> {
        let mut st = self.lock();
        let at_from = st.subs.get(subscription_id).is_some_and(|s| s.fed_through == from);
        if !at_from {
            return Ok(false);
        }
        let adding: usize = entries.iter().filter(|e| e.subscription_id == subscription_id).map(entry_bytes).sum();
        if st.outbox_bytes + adding > self.limits.max_outbox_bytes {
            return Err(full("outbox"));
        }
        for e in entries.into_iter().filter(|e| e.subscription_id == subscription_id) {
            st.insert_entry(e);
        }
        if let Some(s) = st.subs.get_mut(subscription_id) {
            s.fed_through = to;
        }
        st.advance_watermark(subscription_id);
        Ok(true)
    }

    async fn claim(&self, node: &str, now_ms: u64, lease_ms: u64, max: usize) -> Result<Vec<OutboxEntry>, StoreError> {
        let mut st = self.lock();
        let until = now_ms.saturating_add(lease_ms);
        let mut picked = Vec::new();
        for key in st.due.iter() {
            if picked.len() >= max || key.0 > now_ms {
                break;
            }
            let (_, _, sub, id) = key;
            let Some(entry) = st.outbox.get(&(sub.clone(), id.clone())) else { continue };
            if entry.lease.as_ref().is_some_and(|(_, t)| *t > now_ms) {
                continue;
            }
            if id.starts_with(TERMINATED_ID_PREFIX) && others_waiting(&st.outbox, sub, id) {
                continue;
            }
            if st.subs.get(sub).is_some_and(|s| s.active && !s.expired(now_ms)) {
                picked.push((sub.clone(), id.clone()));
            }
        }
        let mut claimed = Vec::with_capacity(picked.len());
        for key in picked {
            let Some(entry) = st.outbox.get_mut(&key) else { continue };
            let before = entry_bytes(entry);
            entry.lease = Some((node.to_owned(), until));
            let (after, copy) = (entry_bytes(entry), entry.clone());
            st.outbox_bytes = st.outbox_bytes - before + after;
            claimed.push(copy);
        }
        Ok(claimed)
    }

    async fn settle(
        &self,
        node: &str,
        subscription_id: &str,
        id: &str,
        outcome: Settlement,
        now_ms: u64,
    ) -> Result<bool, StoreError> {
        let mut st = self.lock();
        let key = (subscription_id.to_owned(), id.to_owned());
        let held = st.outbox.get(&key).and_then(|e| e.lease.as_ref()).is_some_and(|(n, _)| n == node);
        if !held {
            return Ok(false);
        }
        match outcome {
            Settlement::Delivered | Settlement::Dropped(_) => {
                st.remove_entry(subscription_id, id);
                st.advance_watermark(subscription_id);
            }
            Settlement::RetryAt(at, _) => {
                if let Some(mut entry) = st.remove_entry(subscription_id, id) {
                    entry.due_ms = at;
                    entry.attempts = entry.attempts.saturating_add(1);
                    entry.lease = None;
                    st.insert_entry(entry);
                }
            }
        }
        if let Some(s) = st.subs.get_mut(subscription_id) {
            match outcome {
                Settlement::Delivered => (s.failing_since_ms, s.last_failure) = (None, None),
                Settlement::Dropped(f) | Settlement::RetryAt(_, f) => {
                    s.failing_since_ms = s.failing_since_ms.or(Some(now_ms));
                    s.last_failure = Some(f);
                }
            }
        }
        Ok(true)
    }

    async fn sweep(&self, now_ms: u64) -> Result<usize, StoreError> {
        let mut st = self.lock();
        let lapsed: Vec<String> =
            st.subs.values().filter(|s| s.expired(now_ms)).take(SWEEP_BATCH).map(|s| s.id.clone()).collect();
        for id in &lapsed {
            st.remove_sub(id);
        }
        let named: BTreeSet<(&str, &str)> =
            st.subs.values().map(|s| (s.key.principal.as_str(), s.key.url.as_str())).collect();
        let stale: Vec<(String, String)> = st
            .verified
            .iter()
            .filter(|((p, u), at)| {
                !named.contains(&(p.as_str(), u.as_str())) && now_ms.saturating_sub(**at) > VERIFICATION_KEEP_MS
            })
            .map(|(k, _)| k.clone())
            .collect();
        for k in stale {
            st.verified.remove(&k);
        }
        Ok(lapsed.len())
    }
}
