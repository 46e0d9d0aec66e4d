//! `MemoryStore`: the in-memory, single-node default.

use super::store::{Owner, StatusFields, StoreError, TaskStore, UpdateFn, apply_cancel, apply_status};
use super::task::{Lease, TaskFailure, TaskRecord, TaskStatus};
use crate::clock::{Clock, SystemClock};
use crate::protocol::meta::ClientCapabilities;
use crate::protocol::mrtr::InputRequest;
use async_trait::async_trait;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

const SHARDS: usize = 64;

/// Most records one sweep removes under one hold of a shard lock.
const SWEEP_BATCH: usize = 32;

/// How long a sweep runs before it yields to the runtime, so requests queued
/// on its worker wait at most about this long (a few hundred removals).
const SWEEP_SLICE: std::time::Duration = std::time::Duration::from_micros(200);

/// A small multiply-rotate hasher for the shard maps.
///
/// Not keyed: fine here because every stored key is a server-generated random
/// id, so nobody can choose keys that collide (a lookup of a client-supplied id
/// never inserts).
#[derive(Default, Clone, Copy)]
pub(super) struct IdHasher(u64);

const K: u64 = 0xf135_7aea_2e62_a9c5;

impl IdHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0 ^ word).wrapping_mul(K).rotate_left(23);
    }
}

impl Hasher for IdHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w) ^ ((rest.len() as u64) << 59));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        // Spread every input bit over the high bits (hashbrown's tags) and the low ones (its buckets).
        let h = (self.0 ^ (self.0 >> 29)).wrapping_mul(K);
        h ^ (h >> 32)
    }
}

/// Builds [`IdHasher`]s (for maps keyed by task id).
pub(super) type IdBuild = BuildHasherDefault<IdHasher>;

/// A task id, stored once per record and shared by its index entries.
type Id = Arc<str>;

/// The fields of a record that are empty most of a task's life.
#[derive(Default)]
struct Cold {
    input_requests: BTreeMap<String, InputRequest>,
    issued_keys: BTreeSet<String>,
    pending_responses: Map<String, Value>,
    input_responses: Map<String, Value>,
    result: Option<Value>,
    error: Option<TaskFailure>,
    tool: Option<String>,
    resume_args: Option<Value>,
}

impl Cold {
    fn is_empty(&self) -> bool {
        self.input_requests.is_empty()
            && self.issued_keys.is_empty()
            && self.pending_responses.is_empty()
            && self.input_responses.is_empty()
            && self.result.is_none()
            && self.error.is_none()
            && self.tool.is_none()
            && self.resume_args.is_none()
    }
}

/// A [`TaskRecord`] as a shard keeps it: the id only as the map key, the
/// capabilities and lease node shared with other records, cold fields boxed.
struct Stored {
    owner: Option<String>,
    status: TaskStatus,
    status_message: Option<String>,
    created_at_ms: u64,
    last_updated_at_ms: u64,
    ttl_ms: Option<u64>,
    poll_interval_ms: Option<u64>,
    terminal_at_ms: Option<u64>,
    version: u64,
    client_capabilities: Arc<ClientCapabilities>,
    /// `(node, expires_at_ms)`.
    lease: Option<(Arc<str>, u64)>,
    cold: Option<Box<Cold>>,
}

impl Stored {
    fn is_terminal(&self) -> bool {
        self.status.is_terminal()
    }

    fn is_expired(&self, now_ms: u64) -> bool {
        self.ttl_ms.is_some_and(|t| now_ms > self.created_at_ms.saturating_add(t))
    }

    fn allows(&self, owner: Owner<'_>) -> bool {
        match owner {
            Owner::Any => true,
            Owner::Is(o) => self.owner.as_deref() == o,
        }
    }

    /// The record with id `id` (a copy).
    fn to_record(&self, id: &str) -> TaskRecord {
        let mut r = TaskRecord::new(id.to_owned(), self.owner.clone(), self.created_at_ms, self.ttl_ms);
        r.status = self.status;
        r.status_message = self.status_message.clone();
        r.last_updated_at_ms = self.last_updated_at_ms;
        r.poll_interval_ms = self.poll_interval_ms;
        r.terminal_at_ms = self.terminal_at_ms;
        r.version = self.version;
        r.client_capabilities = ClientCapabilities::clone(&self.client_capabilities);
        r.lease = self.lease.as_ref().map(|(node, at)| Lease { node: node.to_string(), expires_at_ms: *at });
        if let Some(c) = &self.cold {
            r.input_requests = c.input_requests.clone();
            r.issued_keys = c.issued_keys.clone();
            r.pending_responses = c.pending_responses.clone();
            r.input_responses = c.input_responses.clone();
            r.result = c.result.clone();
            r.error = c.error.clone();
            r.tool = c.tool.clone();
            r.resume_args = c.resume_args.clone();
        }
        r
    }
}

/// One shard: its records and their indexes, all under one lock.
#[derive(Default)]
struct Shard {
    /// The records (boxed: a hash-table slot is two words, the record allocated at its size).
    map: HashMap<Id, Box<Stored>, IdBuild>,
    /// The capabilities of the last record stored here, shared by the next equal ones.
    last_capabilities: Option<Arc<ClientCapabilities>>,
    /// The lease node of the last leased record stored here, shared likewise.
    last_node: Option<Arc<str>>,
    /// `(expires_at_ms, id)` of tasks with a TTL.
    expiry: BTreeSet<(u64, Id)>,
    /// `(terminal_at_ms, id)` of terminal tasks with unlimited TTL.
    terminal_unlimited: BTreeSet<(u64, Id)>,
    /// Live (non-terminal) tasks whose work holds a lease (only `spawn`ed work).
    leased: HashSet<Id, IdBuild>,
}

impl Shard {
    /// `record` in stored form (the id is the caller's to keep).
    fn store(&mut self, record: TaskRecord) -> Stored {
        let caps = match &self.last_capabilities {
            Some(c) if **c == record.client_capabilities => c.clone(),
            _ => {
                let c = Arc::new(record.client_capabilities);
                self.last_capabilities = Some(c.clone());
                c
            }
        };
        let lease = record.lease.map(|l| {
            let node = match &self.last_node {
                Some(n) if **n == *l.node => n.clone(),
                _ => {
                    let n: Arc<str> = Arc::from(l.node);
                    self.last_node = Some(n.clone());
                    n
                }
            };
            (node, l.expires_at_ms)
        });
        let cold = Cold {
            input_requests: record.input_requests,
            issued_keys: record.issued_keys,
            pending_responses: record.pending_responses,
            input_responses: record.input_responses,
            result: record.result,
            error: record.error,
            tool: record.tool,
            resume_args: record.resume_args,
        };
        Stored {
            owner: record.owner,
            status: record.status,
            status_message: record.status_message,
            created_at_ms: record.created_at_ms,
            last_updated_at_ms: record.last_updated_at_ms,
            ttl_ms: record.ttl_ms,
            poll_interval_ms: record.poll_interval_ms,
            terminal_at_ms: record.terminal_at_ms,
            version: record.version,
            client_capabilities: caps,
            lease,
            cold: (!cold.is_empty()).then(|| Box::new(cold)),
        }
    }

    /// The stored key equal to `id` (to share it with an index).
    fn key(&self, id: &str) -> Option<Id> {
        self.map.get_key_value(id).map(|(k, _)| k.clone())
    }

    /// Up to `limit` records expired before `now`, or terminal with unlimited
    /// TTL since before `cutoff`, taken out (the caller drops them after
    /// unlocking). Returns whether more may remain.
    fn take_expired(&mut self, now: u64, cutoff: u64, limit: usize, out: &mut Vec<(Id, Box<Stored>)>) -> bool {
        for (index, bound) in [(&mut self.expiry, now), (&mut self.terminal_unlimited, cutoff)] {
            while out.len() < limit {
                match index.first() {
                    Some((at, _)) if *at < bound => {}
                    _ => break,
                }
                let Some((_, id)) = index.pop_first() else { break };
                self.leased.remove(&id);
                if let Some(r) = self.map.remove(&id) {
                    out.push((id, r));
                }
            }
            if out.len() >= limit {
                return true;
            }
        }
        false
    }
}

/// Tasks in this process's memory: O(1) reads under a short sharded lock, no
/// lock held across `.await`, and per-shard expiry indexes so a sweep costs
/// what it removes.
///
/// Single node, lost on restart: use a SQL store for durable or multi-node tasks.
pub struct MemoryStore {
    shards: Box<[Mutex<Shard>]>,
    count: AtomicUsize,
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
        Self { shards: (0..SHARDS).map(|_| Mutex::default()).collect(), count: AtomicUsize::new(0), clock }
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

    /// Read-modify-write under the shard lock. `f` returns `Ok(None)` to leave the record as is.
    fn modify(
        &self,
        id: &str,
        owner: Owner<'_>,
        f: impl FnOnce(&TaskRecord) -> Result<Option<TaskRecord>, StoreError>,
    ) -> Result<TaskRecord, StoreError> {
        let now = self.clock.now_ms();
        let mut guard = lock(self.shard(id));
        let shard = &mut *guard;
        let stored = shard.map.get(id).filter(|r| r.allows(owner) && !r.is_expired(now)).ok_or(StoreError::NotFound)?;
        let cur = stored.to_record(id);
        let Some(mut next) = f(&cur)? else {
            return Ok(cur);
        };
        if cur.is_terminal() {
            // Terminal records never change, whatever the function returned.
            return Ok(cur);
        }
        next.version = cur.version + 1;
        next.task_id = cur.task_id;
        let became_terminal = next.is_terminal() && next.ttl_ms.is_none();
        let leased = next.lease.is_some() && !next.is_terminal();
        let out = next.clone();
        let new = shard.store(next);
        if let Some(slot) = shard.map.get_mut(id) {
            **slot = new;
        }
        if became_terminal && let Some(key) = shard.key(id) {
            shard.terminal_unlimited.insert((out.terminal_at_ms.unwrap_or(now), key));
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
        let leased = record.lease.is_some() && !record.is_terminal();
        let id: Id = Arc::from(record.task_id.as_str());
        let mut shard = lock(self.shard(&id));
        if shard.map.contains_key(&id) {
            drop(shard);
            self.count.fetch_sub(1, Ordering::Relaxed);
            return Err(StoreError::Duplicate);
        }
        if let Some(e) = expires {
            shard.expiry.insert((e, id.clone()));
        }
        if leased {
            shard.leased.insert(id.clone());
        }
        let stored = shard.store(record);
        shard.map.insert(id, Box::new(stored));
        Ok(())
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

    async fn lapsed_leases(&self, limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
        let now = self.clock.now_ms();
        Ok(self.leased_where(limit, |_, at| at < now))
    }

    async fn leased_to(&self, node: &str, limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
        Ok(self.leased_where(limit, |n, _| n == node))
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
            store.create(rec, None).await.unwrap();
        }
        let mut unlimited = TaskRecord::new("unlimited".into(), None, 1_000_000, None);
        unlimited.lease = Some(Lease { node: "n".into(), expires_at_ms: 1 });
        store.create(unlimited, None).await.unwrap();
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
