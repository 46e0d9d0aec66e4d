//! [`MemoryLedger`]: the ledger for tests and for programs that keep none
//! past the process (the default of every client).

use super::{DEFAULT_CAP, LedgerEntry, LedgerError, LedgerFilter, TaskLedger};
use crate::protocol::tasks::TaskStatus;
use async_trait::async_trait;
use std::sync::Mutex;
use std::time::Duration;

/// A ledger in memory, capped like the others (see [`DEFAULT_CAP`]).
#[derive(Debug)]
pub struct MemoryLedger {
    cap: usize,
    /// In the order recorded (a re-record moves an entry to the end).
    entries: Mutex<Vec<LedgerEntry>>,
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
        Self { cap: cap.max(1), entries: Mutex::new(Vec::new()) }
    }

    fn with_entry(&self, server: &str, task_id: &str, f: impl FnOnce(&mut LedgerEntry)) {
        let mut entries = self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(e) = entries.iter_mut().find(|e| e.server == server && e.task_id == task_id) {
            f(e);
        }
    }
}

/// Drops entries until at most `cap` remain: the oldest ended ones first,
/// then unfinished ones whose TTL ended before `now_ms` (their server has
/// forgotten them); `false` when only live unfinished ones are left and
/// there are still too many.
fn make_room(entries: &mut Vec<LedgerEntry>, cap: usize, now_ms: i64) -> bool {
    while entries.len() > cap {
        let gone = |e: &LedgerEntry| e.has_ended() || e.expires_ms.is_some_and(|x| x < now_ms);
        let Some(oldest) =
            entries.iter().enumerate().filter(|(_, e)| gone(e)).min_by_key(|(_, e)| (e.is_unfinished(), e.updated_ms))
        else {
            return false;
        };
        entries.remove(oldest.0);
    }
    true
}

#[async_trait]
impl TaskLedger for MemoryLedger {
    async fn record(&self, entry: &LedgerEntry) -> Result<(), LedgerError> {
        let mut entries = self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        entries.retain(|e| !(e.server == entry.server && e.task_id == entry.task_id));
        entries.push(entry.clone());
        if make_room(&mut entries, self.cap, entry.updated_ms) {
            Ok(())
        } else {
            entries.pop();
            Err(LedgerError::Full { cap: self.cap })
        }
    }

    async fn replace(&self, call_key: &str, entry: &LedgerEntry) -> Result<(), LedgerError> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .retain(|e| !(e.in_flight && e.server == entry.server && e.task_id == call_key));
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
        let entries = self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut out: Vec<LedgerEntry> = entries.iter().filter(|e| filter.admits(e)).cloned().collect();
        out.sort_by_key(|e| e.created_ms);
        Ok(out)
    }

    async fn forget(&self, task_id: &str) -> Result<usize, LedgerError> {
        let mut entries = self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let before = entries.len();
        entries.retain(|e| e.task_id != task_id);
        Ok(before - entries.len())
    }

    async fn prune(&self, now_ms: i64, retention: Duration) -> Result<usize, LedgerError> {
        let cutoff = now_ms.saturating_sub(i64::try_from(retention.as_millis()).unwrap_or(i64::MAX));
        let mut entries = self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let before = entries.len();
        entries.retain(|e| {
            let ended = e.updated_ms < cutoff && (e.has_ended() || e.expires_ms.is_some_and(|x| x < cutoff));
            let stale_call = e.in_flight && e.created_ms < cutoff;
            !(ended || stale_call)
        });
        Ok(before - entries.len())
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
