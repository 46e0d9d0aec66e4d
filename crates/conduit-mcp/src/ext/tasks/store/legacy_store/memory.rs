//! `MemoryLegacyStore`: legacy tasks in this process's memory, listable.

use super::contract::LegacyTaskStore;
use super::cursor::{CursorKey, ListPosition};
use crate::clock::{Clock, SystemClock};
use crate::ext::tasks::store::{CreateCaps, Gone, MemoryStore, Owner, TaskRecord, TaskStore, TerminalBound, UpdateFn};
use crate::task::StoreError;
use async_trait::async_trait;
use std::collections::{BTreeSet, HashMap};
use std::ops::Bound;
use std::sync::{Arc, Mutex, MutexGuard};

/// A task id, shared by the index entries of one task.
type Id = Arc<str>;

/// Legacy tasks in memory: a [`MemoryStore`] for the records (the same
/// sharded, O(1) reads and writes), and beside it an index of each owner's
/// tasks in creation order for `list`.
///
/// The index keeps the store's own expiry rules (the TTL fixed at creation,
/// and the terminal time of unlimited tasks, seen on every write), so a sweep
/// removes from it exactly what it removes from the records, at the cost of
/// what it removes. Single node, lost on restart, like [`MemoryStore`].
pub struct MemoryLegacyStore {
    records: MemoryStore,
    index: Mutex<Index>,
    key: CursorKey,
    clock: Arc<dyn Clock>,
}

/// Each owner's tasks, and when each leaves.
#[derive(Default)]
struct Index {
    /// `(created_at_ms, id)` per owner.
    by_owner: HashMap<Option<String>, BTreeSet<(u64, Id)>>,
    /// The owner and creation time of every indexed id (to find its entry).
    entries: HashMap<Id, (Option<String>, u64)>,
    /// `(expires_at_ms, id)` of tasks with a TTL.
    expiry: BTreeSet<(u64, Id)>,
    /// `(terminal_at_ms, id)` of terminal tasks with unlimited TTL.
    terminal_unlimited: BTreeSet<(u64, Id)>,
}

impl Index {
    fn remove(&mut self, id: &Id) {
        if let Some((owner, created)) = self.entries.remove(id) {
            let emptied = self.by_owner.get_mut(&owner).is_some_and(|s| {
                s.remove(&(created, id.clone()));
                s.is_empty()
            });
            if emptied {
                self.by_owner.remove(&owner);
            }
        }
    }

    /// Drops the entries of `set` below `bound`.
    fn sweep(&mut self, which: fn(&mut Index) -> &mut BTreeSet<(u64, Id)>, bound: u64) {
        while let Some((at, _)) = which(self).first() {
            if *at >= bound {
                break;
            }
            if let Some((_, id)) = which(self).pop_first() {
                self.remove(&id);
            }
        }
    }
}

impl std::fmt::Debug for MemoryLegacyStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryLegacyStore").field("len", &self.records.len()).finish_non_exhaustive()
    }
}

impl Default for MemoryLegacyStore {
    fn default() -> Self {
        Self::new()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every index change is a few set operations that cannot panic halfway.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Ids `list_after` reads per hold of the index lock.
const CHUNK: usize = 64;

impl MemoryLegacyStore {
    /// An empty store on the system clock.
    pub fn new() -> Self {
        Self::with_clock(Arc::new(SystemClock))
    }

    /// An empty store on an injected clock, with a random cursor key.
    pub fn with_clock(clock: Arc<dyn Clock>) -> Self {
        Self {
            records: MemoryStore::with_clock(clock.clone()),
            index: Mutex::default(),
            key: CursorKey::random(),
            clock,
        }
    }

    /// How many records are stored (expired ones included until swept).
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Drops the index entries of tasks the records removed before their time.
    fn forget(&self, gone: &[Gone]) {
        if gone.is_empty() {
            return;
        }
        let mut index = lock(&self.index);
        for g in gone {
            index.remove(&g.id);
            if let Some(e) = g.expires_at_ms {
                index.expiry.remove(&(e, g.id.clone()));
            }
            if let Some(t) = g.terminal_at_ms {
                index.terminal_unlimited.remove(&(t, g.id.clone()));
            }
        }
    }

    /// Indexes a record that became terminal with an unlimited TTL.
    fn saw(&self, record: &TaskRecord) {
        if let (true, None, Some(at)) = (record.is_terminal(), record.ttl_ms, record.terminal_at_ms) {
            let mut index = lock(&self.index);
            if let Some((id, _)) = index.entries.get_key_value(record.task_id.as_str()) {
                let id = id.clone();
                index.terminal_unlimited.insert((at, id));
            }
        }
    }
}

#[async_trait]
impl TaskStore for MemoryLegacyStore {
    fn name(&self) -> &'static str {
        "memory-legacy"
    }

    fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    async fn create(&self, record: TaskRecord, caps: CreateCaps) -> Result<TaskRecord, StoreError> {
        let id: Id = Arc::from(record.task_id.as_str());
        let (owner, created, expires) = (record.owner.clone(), record.created_at_ms, record.expires_at_ms());
        let terminal = (record.is_terminal() && record.ttl_ms.is_none()).then_some(record.terminal_at_ms).flatten();
        let stored = self.records.create(record, caps).await?;
        let mut index = lock(&self.index);
        index.by_owner.entry(owner.clone()).or_default().insert((created, id.clone()));
        if let Some(e) = expires {
            index.expiry.insert((e, id.clone()));
        }
        if let Some(t) = terminal {
            index.terminal_unlimited.insert((t, id.clone()));
        }
        index.entries.insert(id, (owner, created));
        Ok(stored)
    }

    async fn get(&self, task_id: &str, owner: Owner<'_>) -> Result<TaskRecord, StoreError> {
        self.records.get(task_id, owner).await
    }

    async fn update(&self, task_id: &str, owner: Owner<'_>, f: UpdateFn<'_>) -> Result<TaskRecord, StoreError> {
        let rec = self.records.update(task_id, owner, f).await?;
        self.saw(&rec);
        Ok(rec)
    }

    async fn trim_terminal(&self, owner: &str, bound: TerminalBound) -> Result<usize, StoreError> {
        let gone = self.records.trim(owner, bound);
        self.forget(&gone);
        Ok(gone.len())
    }

    async fn evict_oldest_terminal(&self, owner: &str) -> Result<bool, StoreError> {
        let gone: Vec<Gone> = self.records.evict_oldest(owner).into_iter().collect();
        self.forget(&gone);
        Ok(!gone.is_empty())
    }

    async fn cleanup(&self, terminal_ttl_ms: u64) -> Result<usize, StoreError> {
        let removed = self.records.cleanup(terminal_ttl_ms).await?;
        // The same bounds the records were swept by (a later `now` only drops
        // entries of tasks that already read as missing).
        let now = self.clock.now_ms();
        let mut index = lock(&self.index);
        index.sweep(|i| &mut i.expiry, now);
        index.sweep(|i| &mut i.terminal_unlimited, now.saturating_sub(terminal_ttl_ms));
        Ok(removed)
    }

    async fn renew_leases(&self, node: &str, until_ms: u64) -> Result<usize, StoreError> {
        self.records.renew_leases(node, until_ms).await
    }

    async fn renew_leases_of(&self, node: &str, task_ids: &[String], until_ms: u64) -> Result<usize, StoreError> {
        self.records.renew_leases_of(node, task_ids, until_ms).await
    }

    async fn claim_node(&self, node: &str) -> Result<(), StoreError> {
        self.records.claim_node(node).await
    }

    async fn lapsed_leases(&self, limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
        self.records.lapsed_leases(limit).await
    }

    async fn leased_to(&self, node: &str, limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
        self.records.leased_to(node, limit).await
    }
}

#[async_trait]
impl LegacyTaskStore for MemoryLegacyStore {
    fn cursor_key(&self) -> &CursorKey {
        &self.key
    }

    async fn list_after(
        &self,
        owner: Option<&str>,
        after: Option<&ListPosition>,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        let owner_key = owner.map(str::to_owned);
        let mut from: Option<(u64, Id)> = after.map(|a| (a.created_at_ms, Arc::from(a.task_id.as_str())));
        let mut out = Vec::new();
        while out.len() < limit {
            let chunk: Vec<(u64, Id)> = {
                let index = lock(&self.index);
                let Some(set) = index.by_owner.get(&owner_key) else { break };
                let lower = match &from {
                    Some(p) => Bound::Excluded(p.clone()),
                    None => Bound::Unbounded,
                };
                set.range((lower, Bound::Unbounded)).take(CHUNK.max(limit - out.len())).cloned().collect()
            };
            let Some(last) = chunk.last().cloned() else { break };
            for (_, id) in &chunk {
                // Expired (not yet swept) tasks read as missing and are skipped.
                match self.records.get(id, Owner::Is(owner)).await {
                    Ok(r) if out.len() < limit => out.push(r),
                    Ok(_) => break,
                    Err(StoreError::NotFound) => {}
                    Err(e) => return Err(e),
                }
            }
            from = Some(last);
        }
        Ok(out)
    }
}
