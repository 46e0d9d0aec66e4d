//! `MemoryStore`: the in-memory, single-node default.

mod hasher;
mod owners;
mod shard;

pub(crate) use hasher::IdBuild;

use super::contract::{CreateCaps, Owner, TaskStore, TerminalBound, UpdateFn};
use super::record::TaskRecord;
use crate::clock::{Clock, SystemClock};
use crate::task::StoreError;
use async_trait::async_trait;
use owners::Owners;
use shard::{Id, Shard, Stored};
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

const SHARDS: usize = 64;

/// Most records one sweep removes under one hold of a shard lock.
const SWEEP_BATCH: usize = 32;

/// How long a sweep runs before it yields to the runtime, so requests queued
/// on its worker wait at most about this long (a few hundred removals).
const SWEEP_SLICE: std::time::Duration = std::time::Duration::from_micros(200);

/// Tasks in this process's memory: O(1) reads under a short sharded lock, no
/// lock held across `.await`, and per-shard expiry indexes so a sweep costs
/// what it removes.
///
/// Single node, lost on restart: use a SQL store for durable or multi-node tasks.
pub struct MemoryStore {
    shards: Box<[Mutex<Shard>]>,
    count: AtomicUsize,
    /// Each owner's live and terminal tasks (owned tasks only), for the
    /// per-principal cap and the terminal bound. Taken inside a shard lock,
    /// never the other way round.
    owners: Mutex<Owners>,
    clock: Arc<dyn Clock>,
}

/// A task a store removed before its time (to make room, or past its
/// owner's terminal bound): what an index kept beside the store needs to
/// drop its entries.
#[derive(Debug, Clone)]
pub(crate) struct Gone {
    /// The task id.
    pub(crate) id: Arc<str>,
    /// When it would have expired.
    pub(crate) expires_at_ms: Option<u64>,
    /// When it ended.
    pub(crate) terminal_at_ms: Option<u64>,
}

/// Removal attempts of one eviction that lost a race to another remover.
const EVICT_RACES: usize = 8;

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
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            count: AtomicUsize::new(0),
            owners: Mutex::default(),
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

    fn shard(&self, id: &str) -> &Mutex<Shard> {
        let h = IdBuild::default().hash_one(id);
        // Bits the shard maps themselves use neither for buckets (low) nor for tags (top 7).
        &self.shards[((h >> 32) as usize) % SHARDS]
    }

    /// `create` under both caps: the owner's live count is checked and its
    /// slot reserved under the owners' lock (released before any shard lock),
    /// the row count by compare-and-swap; whatever fails after gives both back.
    fn insert(&self, mut record: TaskRecord, caps: CreateCaps) -> Result<TaskRecord, StoreError> {
        let live = !record.is_terminal();
        let owner = record.owner.clone();
        if let Some(o) = &owner
            && !lock(&self.owners).reserve(o, caps.max_rows_per_owner, live)
        {
            return Err(StoreError::OwnerLimitReached);
        }
        let unreserve = || {
            if let Some(o) = &owner {
                lock(&self.owners).unreserve(o, live);
            }
        };
        let mut cur = self.count.load(Ordering::Relaxed);
        loop {
            if caps.max_rows.is_some_and(|m| cur >= m) {
                unreserve();
                return Err(StoreError::TaskLimitReached);
            }
            match self.count.compare_exchange_weak(cur, cur + 1, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => break,
                Err(actual) => cur = actual,
            }
        }
        record.version = 1;
        // The caller's copy: the stored one is taken apart into the shard.
        let created = record.clone();
        let expires = record.expires_at_ms();
        let leased = record.lease.is_some() && live;
        let bytes = if live || owner.is_none() { 0 } else { record.stored_len() };
        let id: Id = Arc::from(record.task_id.as_str());
        let mut shard = lock(self.shard(&id));
        if shard.map.contains_key(&id) {
            drop(shard);
            self.count.fetch_sub(1, Ordering::Relaxed);
            unreserve();
            return Err(StoreError::Duplicate);
        }
        if let Some(e) = expires {
            shard.expiry.insert((e, id.clone()));
        }
        if leased {
            shard.leased.insert(id.clone());
        }
        let stored = shard.store(record);
        if let Some(key) = stored.ended_key(&id) {
            if stored.ttl_ms.is_none() {
                shard.terminal_unlimited.insert(key.clone());
            }
            if let Some(o) = &owner {
                lock(&self.owners).ended(o, key, bytes, false);
            }
        }
        shard.map.insert(id, Box::new(stored));
        Ok(created)
    }

    /// Counts removed records out of their owners' tallies (after the shard lock is released).
    fn forget<'a>(&self, gone: impl Iterator<Item = (&'a Id, &'a Stored)>) {
        let mut owners = None;
        for (id, stored) in gone {
            if let Some(owner) = stored.owner.as_deref() {
                owners.get_or_insert_with(|| lock(&self.owners)).gone(owner, stored.ended_key(id));
            }
        }
    }

    /// Removes task `id` at once, counted out of both caps; what it was.
    fn take(&self, id: &str) -> Option<Gone> {
        let (key, stored) = lock(self.shard(id)).take(id)?;
        self.forget(std::iter::once((&key, &*stored)));
        self.count.fetch_sub(1, Ordering::Relaxed);
        Some(Gone {
            expires_at_ms: stored.ttl_ms.map(|t| stored.created_at_ms.saturating_add(t)),
            terminal_at_ms: stored.terminal_at_ms,
            id: key,
        })
    }

    /// [`TaskStore::evict_oldest_terminal`], saying which task went.
    pub(crate) fn evict_oldest(&self, owner: &str) -> Option<Gone> {
        for _ in 0..EVICT_RACES {
            let oldest = lock(&self.owners).oldest_ended(owner);
            // Another remover may have taken it meanwhile: then look again.
            if let Some(gone) = self.take(&oldest?) {
                return Some(gone);
            }
        }
        None
    }

    /// [`TaskStore::trim_terminal`], saying which tasks went.
    pub(crate) fn trim(&self, owner: &str, bound: TerminalBound) -> Vec<Gone> {
        let victims = lock(&self.owners).trim(owner, bound);
        victims.iter().filter_map(|id| self.take(id)).collect()
    }

    /// Read-modify-write under the shard lock.
    fn modify(&self, id: &str, owner: Owner<'_>, f: UpdateFn<'_>) -> Result<TaskRecord, StoreError> {
        let now = self.clock.now_ms();
        let mut guard = lock(self.shard(id));
        let shard = &mut *guard;
        let stored = shard.map.get(id).filter(|r| r.allows(owner) && !r.is_expired(now)).ok_or(StoreError::NotFound)?;
        let cur = stored.to_record(id);
        let mut next = f(&cur)?;
        if cur.is_terminal() {
            // Terminal records never change, whatever the function returned.
            return Ok(cur);
        }
        next.version = cur.version + 1;
        next.task_id = cur.task_id;
        let leased = next.lease.is_some() && !next.is_terminal();
        let out = next.clone();
        let new = shard.store(next);
        let ended = if new.is_terminal() { shard.key(id).and_then(|key| new.ended_key(&key)) } else { None };
        if let Some(slot) = shard.map.get_mut(id) {
            **slot = new;
        }
        if let Some(key) = ended {
            // It became terminal with this write (a terminal record returned above).
            if out.ttl_ms.is_none() {
                shard.terminal_unlimited.insert(key.clone());
            }
            if let Some(owner) = out.owner.as_deref() {
                lock(&self.owners).ended(owner, key, out.stored_len(), true);
            }
        }
        if !leased {
            shard.leased.remove(id);
        } else if !shard.leased.contains(id)
            && let Some(key) = shard.key(id)
        {
            shard.leased.insert(key);
        }
        Ok(out)
    }

    /// Up to `limit` live leased records that pass `keep`, one shard lock at a time.
    fn leased_where(&self, limit: usize, keep: impl Fn(&str, u64) -> bool) -> Vec<TaskRecord> {
        let now = self.clock.now_ms();
        let mut out = Vec::new();
        for shard in self.shards.iter() {
            let s = lock(shard);
            for id in &s.leased {
                if out.len() >= limit {
                    return out;
                }
                if let Some(r) = s.map.get(id).filter(|r| {
                    !r.is_terminal() && !r.is_expired(now) && r.lease.as_ref().is_some_and(|(n, at)| keep(n, *at))
                }) {
                    out.push(r.to_record(id));
                }
            }
        }
        out
    }
}

#[async_trait]
impl TaskStore for MemoryStore {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    async fn create(&self, record: TaskRecord, caps: CreateCaps) -> Result<TaskRecord, StoreError> {
        self.insert(record, caps)
    }

    async fn get(&self, task_id: &str, owner: Owner<'_>) -> Result<TaskRecord, StoreError> {
        let now = self.clock.now_ms();
        let shard = lock(self.shard(task_id));
        shard
            .map
            .get(task_id)
            .filter(|r| r.allows(owner) && !r.is_expired(now))
            .map(|r| r.to_record(task_id))
            .ok_or(StoreError::NotFound)
    }

    async fn update(&self, task_id: &str, owner: Owner<'_>, f: UpdateFn<'_>) -> Result<TaskRecord, StoreError> {
        self.modify(task_id, owner, f)
    }

    async fn renew_leases(&self, node: &str, until_ms: u64) -> Result<usize, StoreError> {
        let mut renewed = 0;
        for shard in self.shards.iter() {
            let mut guard = lock(shard);
            let s = &mut *guard;
            for id in &s.leased {
                if let Some((n, at)) = s.map.get_mut(id).filter(|r| !r.is_terminal()).and_then(|r| r.lease.as_mut())
                    && **n == *node
                {
                    *at = (*at).max(until_ms);
                    renewed += 1;
                }
            }
        }
        Ok(renewed)
    }

    async fn renew_leases_of(&self, node: &str, task_ids: &[String], until_ms: u64) -> Result<usize, StoreError> {
        let mut renewed = 0;
        for id in task_ids {
            let mut shard = lock(self.shard(id));
            if let Some((n, at)) =
                shard.map.get_mut(id.as_str()).filter(|r| !r.is_terminal()).and_then(|r| r.lease.as_mut())
                && **n == *node
            {
                *at = (*at).max(until_ms);
                renewed += 1;
            }
        }
        Ok(renewed)
    }

    async fn lapsed_leases(&self, limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
        let now = self.clock.now_ms();
        Ok(self.leased_where(limit, |_, at| at < now))
    }

    async fn leased_to(&self, node: &str, limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
        Ok(self.leased_where(limit, |n, _| n == node))
    }

    async fn trim_terminal(&self, owner: &str, bound: TerminalBound) -> Result<usize, StoreError> {
        Ok(self.trim(owner, bound).len())
    }

    async fn evict_oldest_terminal(&self, owner: &str) -> Result<bool, StoreError> {
        Ok(self.evict_oldest(owner).is_some())
    }

    async fn cleanup(&self, terminal_ttl_ms: u64) -> Result<usize, StoreError> {
        let now = self.clock.now_ms();
        let cutoff = now.saturating_sub(terminal_ttl_ms);
        let mut removed = 0;
        let mut batch = Vec::with_capacity(SWEEP_BATCH);
        let mut since_yield = std::time::Instant::now();
        for shard in self.shards.iter() {
            loop {
                let more = lock(shard).take_expired(now, cutoff, SWEEP_BATCH, &mut batch);
                let n = batch.len();
                self.forget(batch.iter().map(|(id, r)| (id, &**r)));
                // Freed outside the lock.
                batch.clear();
                self.count.fetch_sub(n, Ordering::Relaxed);
                removed += n;
                if n > 0 && since_yield.elapsed() >= SWEEP_SLICE {
                    // Let requests queued on this runtime worker run.
                    tokio::task::yield_now().await;
                    since_yield = std::time::Instant::now();
                }
                if !more {
                    break;
                }
            }
        }
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::ext::tasks::store::contract::StatusFields;
    use crate::ext::tasks::store::record::Lease;
    use crate::protocol::tasks::TaskStatus;

    #[tokio::test]
    async fn a_sweep_removes_every_expired_record_across_batches() {
        let clock = ManualClock::new(1_000_000);
        let store = MemoryStore::with_clock(Arc::new(clock.clone()));
        let mut live = Vec::new();
        for i in 0..5_000u64 {
            // Every third record outlives the sweep; the others expire at different times.
            let ttl = if i % 3 == 0 { 1_000_000 } else { 1 + i % 50 };
            let rec = TaskRecord::new(format!("task-{i:05}"), None, 1_000_000, Some(ttl));
            if i % 3 == 0 {
                live.push(rec.task_id.clone());
            }
            store.create(rec, CreateCaps::default()).await.unwrap();
        }
        let mut unlimited = TaskRecord::new("unlimited".into(), None, 1_000_000, None);
        unlimited.lease = Some(Lease { node: "n".into(), expires_at_ms: 1 });
        store.create(unlimited, CreateCaps::default()).await.unwrap();
        store.put_status("unlimited", TaskStatus::Completed, StatusFields::default()).await.unwrap();
        assert!(store.lapsed_leases(10).await.unwrap().is_empty(), "a terminal task holds no lease");
        clock.advance(100);
        assert_eq!(store.cleanup(3_600_000).await.unwrap(), 5_000 - live.len());
        assert_eq!(store.len(), live.len() + 1);
        for id in &live {
            store.get(id, Owner::Any).await.unwrap();
        }
        clock.advance(3_600_000);
        // The live ones expire now too, and the terminal unlimited one is old enough.
        assert_eq!(store.cleanup(3_600_000).await.unwrap(), live.len() + 1);
        assert!(store.is_empty());
    }
}
