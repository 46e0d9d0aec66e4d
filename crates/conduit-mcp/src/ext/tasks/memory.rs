//! `MemoryStore`: the in-memory, single-node default.

use super::store::{Owner, StatusFields, StoreError, TaskStore, UpdateFn, apply_cancel, apply_status};
use super::task::{TaskRecord, TaskStatus};
use crate::clock::{Clock, SystemClock};
use async_trait::async_trait;
use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeSet, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

const SHARDS: usize = 64;

/// Tasks in this process's memory: O(1) reads under a short sharded lock, no
/// lock held across `.await`, and an expiry index so a sweep costs what it removes.
///
/// Single node, lost on restart: use a SQL store for durable or multi-node tasks.
pub struct MemoryStore {
    shards: Box<[Mutex<HashMap<String, TaskRecord>>]>,
    count: AtomicUsize,
    /// `(expires_at_ms, id)` of tasks with a TTL.
    expiry: Mutex<BTreeSet<(u64, String)>>,
    /// `(terminal_at_ms, id)` of terminal tasks with unlimited TTL.
    terminal_unlimited: Mutex<BTreeSet<(u64, String)>>,
    /// Live tasks whose work holds a lease: id → node (only `spawn`ed work).
    leased: Mutex<HashMap<String, String>>,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore").field("len", &self.len()).finish_non_exhaustive()
    }
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding a shard lock cannot leave a half-written record
    // (records are replaced whole), so a poisoned lock is still usable.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl MemoryStore {
    /// An empty store on the system clock.
    pub fn new() -> Self {
        Self::with_clock(Arc::new(SystemClock))
    }

    /// An empty store on an injected clock.
    pub fn with_clock(clock: Arc<dyn Clock>) -> Self {
        Self {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            count: AtomicUsize::new(0),
            expiry: Mutex::new(BTreeSet::new()),
            terminal_unlimited: Mutex::new(BTreeSet::new()),
            leased: Mutex::new(HashMap::new()),
            clock,
        }
    }

    /// How many records are stored (expired ones included until swept).
    pub fn len(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn shard(&self, id: &str) -> &Mutex<HashMap<String, TaskRecord>> {
        let mut h = DefaultHasher::new();
        id.hash(&mut h);
        &self.shards[(h.finish() as usize) % SHARDS]
    }

    /// Read-modify-write under the shard lock. `f` returns `Ok(None)` to leave the record as is.
    fn modify(
        &self,
        id: &str,
        owner: Owner<'_>,
        f: impl FnOnce(&TaskRecord) -> Result<Option<TaskRecord>, StoreError>,
    ) -> Result<TaskRecord, StoreError> {
        let now = self.clock.now_ms();
        let became_terminal;
        let lease;
        let out = {
            let mut shard = lock(self.shard(id));
            let cur = shard.get(id).filter(|r| owner.allows(r) && !r.is_expired(now)).ok_or(StoreError::NotFound)?;
            let was_terminal = cur.is_terminal();
            match f(cur)? {
                None => return Ok(cur.clone()),
                Some(mut next) => {
                    if was_terminal {
                        // Terminal records never change, whatever the function returned.
                        return Ok(cur.clone());
                    }
                    next.version = cur.version + 1;
                    became_terminal = next.is_terminal() && next.ttl_ms.is_none();
                    lease = next.lease.as_ref().filter(|_| !next.is_terminal()).map(|l| l.node.clone());
                    shard.insert(id.to_owned(), next.clone());
                    next
                }
            }
        };
        if became_terminal {
            lock(&self.terminal_unlimited).insert((out.terminal_at_ms.unwrap_or(now), id.to_owned()));
        }
        self.index_lease(id, lease);
        Ok(out)
    }

    fn index_lease(&self, id: &str, node: Option<String>) {
        let mut l = lock(&self.leased);
        match node {
            Some(n) => {
                l.insert(id.to_owned(), n);
            }
            None => {
                l.remove(id);
            }
        }
    }

    fn leased_where(&self, limit: usize, keep: impl Fn(&TaskRecord) -> bool) -> Vec<TaskRecord> {
        let ids: Vec<String> = lock(&self.leased).keys().cloned().collect();
        let now = self.clock.now_ms();
        let mut out = Vec::new();
        for id in ids {
            if out.len() >= limit {
                break;
            }
            let shard = lock(self.shard(&id));
            if let Some(r) = shard.get(&id).filter(|r| !r.is_terminal() && !r.is_expired(now) && keep(r)) {
                out.push(r.clone());
            }
        }
        out
    }

    fn remove(&self, id: &str) -> bool {
        lock(&self.leased).remove(id);
        let removed = lock(self.shard(id)).remove(id).is_some();
        if removed {
            self.count.fetch_sub(1, Ordering::Relaxed);
        }
        removed
    }
}

#[async_trait]
impl TaskStore for MemoryStore {
    fn name(&self) -> &'static str {
        "memory"
    }

    async fn create(&self, mut record: TaskRecord, max_rows: Option<usize>) -> Result<(), StoreError> {
        let mut cur = self.count.load(Ordering::Relaxed);
        loop {
            if max_rows.is_some_and(|m| cur >= m) {
                return Err(StoreError::TaskLimitReached);
            }
            match self.count.compare_exchange_weak(cur, cur + 1, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => break,
                Err(actual) => cur = actual,
            }
        }
        record.version = 1;
        let expires = record.expires_at_ms();
        let id = record.task_id.clone();
        let lease = record.lease.as_ref().filter(|_| !record.is_terminal()).map(|l| l.node.clone());
        {
            let mut shard = lock(self.shard(&id));
            if shard.contains_key(&id) {
                drop(shard);
                self.count.fetch_sub(1, Ordering::Relaxed);
                return Err(StoreError::Duplicate);
            }
            shard.insert(id.clone(), record);
        }
        self.index_lease(&id, lease);
        if let Some(e) = expires {
            lock(&self.expiry).insert((e, id));
        }
        Ok(())
    }

    async fn get(&self, task_id: &str, owner: Owner<'_>) -> Result<TaskRecord, StoreError> {
        let now = self.clock.now_ms();
        let shard = lock(self.shard(task_id));
        shard.get(task_id).filter(|r| owner.allows(r) && !r.is_expired(now)).cloned().ok_or(StoreError::NotFound)
    }

    async fn update(&self, task_id: &str, owner: Owner<'_>, f: UpdateFn<'_>) -> Result<TaskRecord, StoreError> {
        self.modify(task_id, owner, |r| f(r).map(Some))
    }

    async fn cancel(
        &self,
        task_id: &str,
        owner: Owner<'_>,
        status_message: Option<&str>,
    ) -> Result<TaskRecord, StoreError> {
        let now = self.clock.now_ms();
        self.modify(task_id, owner, |r| Ok(apply_cancel(r, status_message, now)))
    }

    async fn put_status(
        &self,
        task_id: &str,
        status: TaskStatus,
        fields: StatusFields,
    ) -> Result<TaskRecord, StoreError> {
        let now = self.clock.now_ms();
        let mut terminal = false;
        let r = self.modify(task_id, Owner::Any, |r| {
            terminal = r.is_terminal();
            apply_status(r, status, &fields, now).map(Some)
        })?;
        if terminal {
            return Err(StoreError::Terminal);
        }
        Ok(r)
    }

    async fn renew_leases(&self, node: &str, until_ms: u64) -> Result<usize, StoreError> {
        let ids: Vec<String> =
            lock(&self.leased).iter().filter(|(_, n)| n.as_str() == node).map(|(id, _)| id.clone()).collect();
        let mut renewed = 0;
        for id in ids {
            let mut shard = lock(self.shard(&id));
            if let Some(l) = shard.get_mut(&id).filter(|r| !r.is_terminal()).and_then(|r| r.lease.as_mut())
                && l.node == node
            {
                l.expires_at_ms = l.expires_at_ms.max(until_ms);
                renewed += 1;
            }
        }
        Ok(renewed)
    }

    async fn lapsed_leases(&self, limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
        let now = self.clock.now_ms();
        Ok(self.leased_where(limit, |r| r.lease.as_ref().is_some_and(|l| l.expires_at_ms < now)))
    }

    async fn leased_to(&self, node: &str, limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
        Ok(self.leased_where(limit, |r| r.lease.as_ref().is_some_and(|l| l.node == node)))
    }

    async fn cleanup(&self, terminal_ttl_ms: u64) -> Result<usize, StoreError> {
        let now = self.clock.now_ms();
        let expired: Vec<String> = {
            let mut idx = lock(&self.expiry);
            let keep = idx.split_off(&(now, String::new()));
            std::mem::replace(&mut *idx, keep).into_iter().map(|(_, id)| id).collect()
        };
        let cutoff = now.saturating_sub(terminal_ttl_ms);
        let old_terminal: Vec<String> = {
            let mut idx = lock(&self.terminal_unlimited);
            let keep = idx.split_off(&(cutoff, String::new()));
            std::mem::replace(&mut *idx, keep).into_iter().map(|(_, id)| id).collect()
        };
        Ok(expired.iter().chain(old_terminal.iter()).filter(|id| self.remove(id)).count())
    }
}
