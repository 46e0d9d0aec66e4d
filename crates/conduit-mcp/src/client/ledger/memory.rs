//! [`MemoryLedger`]: the ledger for tests and for programs that keep none
//! past the process (the default of every client).

use super::{DEFAULT_CAP, LedgerEntry, LedgerError, LedgerFilter, TaskLedger};
use crate::protocol::tasks::TaskStatus;
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// A ledger in memory, capped like the others (see [`DEFAULT_CAP`]).
#[derive(Debug)]
pub struct MemoryLedger {
    cap: usize,
    entries: Mutex<Entries>,
}

/// The entries by `(server, task id)`, each with when it was last recorded
/// (a number that only grows: the order among entries otherwise equal), so
/// recording, reading and updating one costs the same however many there are.
#[derive(Debug, Default)]
struct Entries {
    by_key: HashMap<(String, String), (u64, LedgerEntry)>,
    recorded: u64,
}

impl Entries {
    fn insert(&mut self, entry: &LedgerEntry) {
        self.recorded += 1;
        let key = (entry.server.clone(), entry.task_id.clone());
        self.by_key.insert(key, (self.recorded, entry.clone()));
    }

    fn get_mut(&mut self, server: &str, task_id: &str) -> Option<&mut LedgerEntry> {
        // Borrowed lookups of a tuple key need owned parts; they are short.
        self.by_key.get_mut(&(server.to_owned(), task_id.to_owned())).map(|(_, e)| e)
    }

    /// Drops entries until at most `cap` remain: the oldest ended ones
    /// first, then unfinished ones whose TTL ended before `now_ms` (their
    /// server has forgotten them); `false` when only live unfinished ones
    /// are left and there are still too many.
    fn make_room(&mut self, cap: usize, now_ms: i64) -> bool {
        while self.by_key.len() > cap {
            let gone = |e: &LedgerEntry| e.has_ended() || e.expires_ms.is_some_and(|x| x < now_ms);
            let oldest = self
                .by_key
                .iter()
                .filter(|(_, (_, e))| gone(e))
                .min_by_key(|(_, (n, e))| (e.is_unfinished(), e.updated_ms, *n))
                .map(|(k, _)| k.clone());
            let Some(oldest) = oldest else { return false };
            self.by_key.remove(&oldest);
        }
        true
    }
}

impl Default for MemoryLedger {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryLedger {
    /// An empty ledger holding at most [`DEFAULT_CAP`] entries.
    pub fn new() -> Self {
        Self::with_cap(DEFAULT_CAP)
    }

    /// An empty ledger holding at most `cap` entries (at least one).
    pub fn with_cap(cap: usize) -> Self {
        Self { cap: cap.max(1), entries: Mutex::default() }
    }

    fn entries(&self) -> MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn with_entry(&self, server: &str, task_id: &str, f: impl FnOnce(&mut LedgerEntry)) {
        if let Some(e) = self.entries().get_mut(server, task_id) {
            f(e);
        }
    }
}

#[async_trait]
impl TaskLedger for MemoryLedger {
    async fn record(&self, entry: &LedgerEntry) -> Result<(), LedgerError> {
        let mut entries = self.entries();
        entries.insert(entry);
        if entries.make_room(self.cap, entry.updated_ms) {
            Ok(())
        } else {
            entries.by_key.remove(&(entry.server.clone(), entry.task_id.clone()));
            Err(LedgerError::Full { cap: self.cap })
        }
    }

    async fn replace(&self, call_key: &str, entry: &LedgerEntry) -> Result<(), LedgerError> {
        {
            let mut entries = self.entries();
            let key = (entry.server.clone(), call_key.to_owned());
            if entries.by_key.get(&key).is_some_and(|(_, e)| e.in_flight) {
                entries.by_key.remove(&key);
            }
        }
        self.record(entry).await
    }

    async fn set_status(
        &self,
        server: &str,
        task_id: &str,
        status: TaskStatus,
        now_ms: i64,
    ) -> Result<(), LedgerError> {
        self.with_entry(server, task_id, |e| {
            // A terminal status is final: a late, stale read never undoes it.
            if !e.status.is_terminal() {
                e.status = status;
                e.updated_ms = now_ms;
            }
        });
        Ok(())
    }

    async fn mark_lost(&self, server: &str, task_id: &str, reason: &str, now_ms: i64) -> Result<(), LedgerError> {
        self.with_entry(server, task_id, |e| {
            e.lost = Some(reason.to_owned());
            e.updated_ms = now_ms;
        });
        Ok(())
    }

    async fn list(&self, filter: &LedgerFilter) -> Result<Vec<LedgerEntry>, LedgerError> {
        let entries = self.entries();
        let mut out: Vec<&(u64, LedgerEntry)> = entries.by_key.values().filter(|(_, e)| filter.admits(e)).collect();
        out.sort_by_key(|(n, e)| (e.created_ms, *n));
        Ok(out.into_iter().map(|(_, e)| e.clone()).collect())
    }

    async fn forget(&self, task_id: &str) -> Result<usize, LedgerError> {
        let mut entries = self.entries();
        let before = entries.by_key.len();
        entries.by_key.retain(|(_, id), _| id != task_id);
        Ok(before - entries.by_key.len())
    }

    async fn prune(&self, now_ms: i64, retention: Duration) -> Result<usize, LedgerError> {
        let cutoff = now_ms.saturating_sub(i64::try_from(retention.as_millis()).unwrap_or(i64::MAX));
        let mut entries = self.entries();
        let before = entries.by_key.len();
        entries.by_key.retain(|_, (_, e)| {
            let ended = e.updated_ms < cutoff && (e.has_ended() || e.expires_ms.is_some_and(|x| x < cutoff));
            let stale_call = e.in_flight && e.created_ms < cutoff;
            !(ended || stale_call)
        });
        Ok(before - entries.by_key.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, at: i64) -> LedgerEntry {
        LedgerEntry::new("http://h/mcp", "anonymous", id, "2026-07-28", "t", "d", at)
    }

    #[tokio::test]
    async fn the_cap_drops_ended_entries_first_and_never_an_unfinished_one() {
        let l = MemoryLedger::with_cap(2);
        l.record(&entry("a", 1)).await.unwrap();
        l.record(&entry("b", 2)).await.unwrap();
        assert!(matches!(l.record(&entry("c", 3)).await, Err(LedgerError::Full { cap: 2 })));
        l.set_status("http://h/mcp", "a", TaskStatus::Completed, 4).await.unwrap();
        l.record(&entry("c", 5)).await.unwrap();
        let ids: Vec<String> = l.list(&LedgerFilter::all()).await.unwrap().into_iter().map(|e| e.task_id).collect();
        assert_eq!(ids, ["b", "c"]);
        // An unfinished task whose TTL has ended makes room; one within it never does.
        let mut expired = entry("d", 6);
        expired.expires_ms = Some(7);
        assert!(matches!(l.record(&expired).await, Err(LedgerError::Full { .. })));
        let mut b = entry("b", 8);
        b.expires_ms = Some(9);
        l.record(&b).await.unwrap();
        l.record(&entry("e", 10)).await.unwrap();
        let ids: Vec<String> = l.list(&LedgerFilter::all()).await.unwrap().into_iter().map(|e| e.task_id).collect();
        assert_eq!(ids, ["c", "e"]);
    }

    #[tokio::test]
    async fn terminal_is_final_and_prune_keeps_what_is_recent() {
        let l = MemoryLedger::new();
        l.record(&entry("a", 1)).await.unwrap();
        l.record(&entry("b", 1)).await.unwrap();
        l.set_status("http://h/mcp", "a", TaskStatus::Failed, 2).await.unwrap();
        l.set_status("http://h/mcp", "a", TaskStatus::Working, 3).await.unwrap();
        let open = l.list(&LedgerFilter::unfinished("http://h/mcp", "anonymous")).await.unwrap();
        assert_eq!(open.len(), 1);
        assert_eq!(open[0].task_id, "b");
        assert_eq!(l.prune(10_000, Duration::from_secs(1)).await.unwrap(), 1);
        assert_eq!(l.forget("b").await.unwrap(), 1);
        assert!(l.list(&LedgerFilter::all()).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_call_whose_answer_never_came_goes_after_the_retention() {
        let l = MemoryLedger::new();
        let old = LedgerEntry::call_in_flight("http://h/mcp", "anonymous", "2026-07-28", "t", "d", 1_000);
        let recent = LedgerEntry::call_in_flight("http://h/mcp", "anonymous", "2026-07-28", "t", "d", 9_500);
        l.record(&old).await.unwrap();
        l.record(&recent).await.unwrap();
        assert_eq!(l.prune(10_000, Duration::from_secs(1)).await.unwrap(), 1);
        let left: Vec<String> = l.list(&LedgerFilter::all()).await.unwrap().into_iter().map(|e| e.task_id).collect();
        assert_eq!(left, [recent.task_id]);
    }
}
