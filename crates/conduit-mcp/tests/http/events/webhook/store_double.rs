//! A small in-memory `WebhookStore` for these tests only, the trait's
//! contract simply, with a view of its outbox the tests wait on (the
//! library's `MemoryWebhookStore` passes the contract suite on its own). The safe
//! watermark is the position before the oldest occurrence still in the
//! outbox, or `fed_through` when none is.

use async_trait::async_trait;
use conduit_mcp::ext::events::webhook::{
    OutboxEntry, Settlement, UpsertError, Upserted, WebhookCaps, WebhookStore, WebhookSubscription,
};
use conduit_mcp::task::StoreError;
use std::collections::{BTreeMap, HashSet};
use std::sync::{Mutex, MutexGuard};
use tokio::sync::Notify;

#[derive(Default)]
struct State {
    subs: BTreeMap<String, WebhookSubscription>,
    verified: HashSet<(String, String)>,
    outbox: Vec<OutboxEntry>,
}

impl State {
    fn rewatermark(&mut self, id: &str) {
        let oldest = self.outbox.iter().filter(|e| e.subscription_id == id && e.position > 0).map(|e| e.position).min();
        if let Some(s) = self.subs.get_mut(id) {
            s.acked_through = oldest.map_or(s.fed_through, |p| p - 1);
        }
    }
}

/// The test double.
#[derive(Default)]
pub struct DoubleStore {
    state: Mutex<State>,
    /// Told after every change, for tests waiting on one.
    changed: Notify,
}

/// The state held for a change; waiters are told when it is let go.
struct Edit<'a> {
    state: Option<MutexGuard<'a, State>>,
    changed: &'a Notify,
}

impl std::ops::Deref for Edit<'_> {
    type Target = State;
    fn deref(&self) -> &State {
        self.state.as_ref().expect("held")
    }
}

impl std::ops::DerefMut for Edit<'_> {
    fn deref_mut(&mut self) -> &mut State {
        self.state.as_mut().expect("held")
    }
}

impl Drop for Edit<'_> {
    fn drop(&mut self) {
        drop(self.state.take());
        self.changed.notify_waiters();
    }
}

impl DoubleStore {
    fn edit(&self) -> Edit<'_> {
        Edit { state: Some(self.state.lock().unwrap()), changed: &self.changed }
    }

    /// Waits (up to 5 s) until `cond` holds, looking again after each change.
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
        let s = self.state.lock().unwrap();
        s.outbox.iter().map(|e| (e.subscription_id.clone(), e.id.clone(), e.attempts)).collect()
    }

    /// How many subscriptions it holds (lapsed or not).
    pub fn subscriptions(&self) -> usize {
        self.state.lock().unwrap().subs.len()
    }
}

#[async_trait]
impl WebhookStore for DoubleStore {
    async fn upsert(&self, sub: WebhookSubscription, caps: WebhookCaps, now_ms: u64) -> Result<Upserted, UpsertError> {
        let mut s = self.edit();
        let live =
            |x: &WebhookSubscription| !x.expired(now_ms) && x.key.principal == sub.key.principal && x.id != sub.id;
        let count = s.subs.values().filter(|x| live(x)).count();
        if count >= caps.max_per_principal {
            return Err(UpsertError::Full { limit: "subscriptions", max: caps.max_per_principal });
        }
        let bytes: usize = s.subs.values().filter(|x| live(x)).map(WebhookSubscription::held_bytes).sum();
        if bytes + sub.held_bytes() > caps.max_bytes_per_principal {
            return Err(UpsertError::Full { limit: "subscriptionBytes", max: caps.max_bytes_per_principal });
        }
        match s.subs.get_mut(&sub.id) {
            Some(old) if !old.expired(now_ms) => {
                old.secret = sub.secret;
                old.previous_secret = sub.previous_secret;
                old.refresh_before_ms = sub.refresh_before_ms;
                old.active = sub.active;
                Ok(Upserted::Refreshed)
            }
            _ => {
                let id = sub.id.clone();
                s.outbox.retain(|e| e.subscription_id != id);
                s.subs.insert(id, sub);
                Ok(Upserted::Created)
            }
        }
    }

    async fn get(&self, principal: &str, id: &str, now_ms: u64) -> Result<Option<WebhookSubscription>, StoreError> {
        let s = self.state.lock().unwrap();
        Ok(s.subs.get(id).filter(|x| x.key.principal == principal && !x.expired(now_ms)).cloned())
    }

    async fn remove(&self, principal: &str, id: &str, now_ms: u64) -> Result<bool, StoreError> {
        let mut s = self.edit();
        let live = s.subs.get(id).is_some_and(|x| x.key.principal == principal && !x.expired(now_ms));
        if live {
            s.subs.remove(id);
            s.outbox.retain(|e| e.subscription_id != id);
        }
        Ok(live)
    }

    async fn verified(&self, principal: &str, url: &str) -> Result<bool, StoreError> {
        Ok(self.state.lock().unwrap().verified.contains(&(principal.to_owned(), url.to_owned())))
    }

    async fn set_verified(&self, principal: &str, url: &str, _at_ms: u64) -> Result<(), StoreError> {
        self.edit().verified.insert((principal.to_owned(), url.to_owned()));
        Ok(())
    }

    async fn enqueue(&self, entry: OutboxEntry) -> Result<(), StoreError> {
        let mut s = self.edit();
        if !s.outbox.iter().any(|e| e.subscription_id == entry.subscription_id && e.id == entry.id) {
            s.outbox.push(entry);
        }
        Ok(())
    }

    async fn live(
        &self,
        now_ms: u64,
        after_id: Option<&str>,
        max: usize,
    ) -> Result<Vec<WebhookSubscription>, StoreError> {
        let s = self.state.lock().unwrap();
        let after = |id: &String| after_id.is_none_or(|a| id.as_str() > a);
        Ok(s.subs.values().filter(|x| after(&x.id) && !x.expired(now_ms)).take(max).cloned().collect())
    }

    async fn feed(
        &self,
        subscription_id: &str,
        from: u64,
        to: u64,
        entries: Vec<OutboxEntry>,
    ) -> Result<bool, StoreError> {
        let mut s = self.edit();
        match s.subs.get_mut(subscription_id) {
            Some(sub) if sub.fed_through == from => sub.fed_through = to,
            _ => return Ok(false),
        }
        for e in entries {
            if !s.outbox.iter().any(|x| x.subscription_id == e.subscription_id && x.id == e.id) {
                s.outbox.push(e);
            }
        }
        s.rewatermark(subscription_id);
        Ok(true)
    }

    async fn claim(&self, node: &str, now_ms: u64, lease_ms: u64, max: usize) -> Result<Vec<OutboxEntry>, StoreError> {
        let mut s = self.edit();
        let State { subs, outbox, .. } = &mut *s;
        // Only entries of live, active subscriptions: a suspended one's wait for its refresh.
        let active = |id: &str| subs.get(id).is_some_and(|x| x.active && !x.expired(now_ms));
        let mut due: Vec<&mut OutboxEntry> = outbox
            .iter_mut()
            .filter(|e| e.due_ms <= now_ms && e.lease.as_ref().is_none_or(|(_, until)| *until <= now_ms))
            .filter(|e| active(&e.subscription_id))
            .collect();
        due.sort_by_key(|e| e.due_ms);
        Ok(due
            .into_iter()
            .take(max)
            .map(|e| {
                e.lease = Some((node.to_owned(), now_ms + lease_ms));
                e.clone()
            })
            .collect())
    }

    async fn settle(
        &self,
        node: &str,
        subscription_id: &str,
        id: &str,
        outcome: Settlement,
        now_ms: u64,
    ) -> Result<bool, StoreError> {
        let mut s = self.edit();
        let held = |e: &OutboxEntry| {
            e.subscription_id == subscription_id && e.id == id && e.lease.as_ref().is_some_and(|(n, _)| n == node)
        };
        let Some(at) = s.outbox.iter().position(held) else {
            return Ok(false);
        };
        let sub_id = s.outbox[at].subscription_id.clone();
        let failure = match outcome {
            Settlement::Delivered => {
                s.outbox.remove(at);
                None
            }
            Settlement::RetryAt(due, f) => {
                let e = &mut s.outbox[at];
                e.attempts += 1;
                e.due_ms = due;
                e.lease = None;
                Some(f)
            }
            Settlement::Dropped(f) => {
                s.outbox.remove(at);
                Some(f)
            }
        };
        if let Some(sub) = s.subs.get_mut(&sub_id) {
            match failure {
                None => (sub.failing_since_ms, sub.last_failure) = (None, None),
                Some(f) => {
                    sub.failing_since_ms.get_or_insert(now_ms);
                    sub.last_failure = Some(f);
                }
            }
        }
        s.rewatermark(&sub_id);
        Ok(true)
    }

    async fn sweep(&self, now_ms: u64) -> Result<usize, StoreError> {
        let mut s = self.edit();
        let lapsed: Vec<String> = s.subs.values().filter(|x| x.expired(now_ms)).map(|x| x.id.clone()).collect();
        for id in &lapsed {
            s.subs.remove(id);
            s.outbox.retain(|e| &e.subscription_id != id);
        }
        Ok(lapsed.len())
    }
}
