//! The memory change log: every status (or status message) a task is
//! written with, in write order, at a position that names it. A
//! [`Tasks`](super::Tasks) handle and its legacy twin share one when their
//! store keeps no durable feed ([`TaskStore::change_feed`](crate::ext::tasks::TaskStore::change_feed));
//! it is bounded (by the Events configuration that asks for it), and an
//! older position reads as truncated.

use crate::ext::tasks::store::{ChangePage, ChangeQuery, TaskChange, TaskChangeFeed, TaskRecord};
use crate::protocol::tasks::TaskStatus;
use crate::seq_log::{ReadFrom, SeqLog};
use crate::task::StoreError;
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

/// What was last logged of a task still on the log.
#[derive(Debug)]
struct Logged {
    version: u64,
    status: TaskStatus,
    message: Option<String>,
    /// The position of its last entry on the log.
    seq: u64,
}

/// The in-memory change log of a [`Tasks`](super::Tasks) handle and its twin.
#[derive(Debug)]
pub(crate) struct MemoryChanges {
    log: SeqLog<TaskChange>,
    /// Names this log among others (a restarted process's has another).
    epoch: u64,
    /// A write reported late (after a newer one of the same task) is not
    /// logged, nor one that changed neither status nor message (a lease renewal).
    logged: Mutex<HashMap<String, Logged>>,
}

fn weight(c: &TaskChange) -> usize {
    64 + c.task_id.len() + c.owner.as_ref().map_or(0, String::len) + c.status_message.as_ref().map_or(0, String::len)
}

impl MemoryChanges {
    pub(crate) fn new(max_changes: usize, max_bytes: usize) -> Self {
        Self { log: SeqLog::new(max_changes, max_bytes), epoch: rand::random(), logged: Mutex::default() }
    }

    /// Logs the status `record` was written with, unless a newer write of the
    /// same task is logged already, or the write changed neither status nor message.
    pub(crate) fn record(&self, record: &TaskRecord) {
        let mut logged = self.logged.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(last) = logged.get_mut(&record.task_id) {
            if last.version >= record.version {
                return;
            }
            last.version = record.version;
            if last.status == record.status && last.message == record.status_message {
                return;
            }
        }
        let change = TaskChange::new(
            0,
            record.task_id.clone(),
            record.owner.clone(),
            record.status,
            record.status_message.clone(),
            record.last_updated_at_ms,
        );
        let bytes = weight(&change);
        // The map lock is held across the append so that positions follow versions.
        let seq = self.log.append_with(record.last_updated_at_ms, bytes, change, |old| {
            if logged.get(&old.item.task_id).is_some_and(|l| l.seq == old.seq) {
                logged.remove(&old.item.task_id);
            }
        });
        let entry =
            Logged { version: record.version, status: record.status, message: record.status_message.clone(), seq };
        logged.insert(record.task_id.clone(), entry);
    }
}

#[async_trait]
impl TaskChangeFeed for MemoryChanges {
    fn epoch(&self) -> u64 {
        self.epoch
    }

    async fn head(&self) -> Result<u64, StoreError> {
        Ok(self.log.head())
    }

    async fn read(&self, q: ChangeQuery<'_>) -> Result<ChangePage, StoreError> {
        let from = ReadFrom { after: q.after, floor_ms: q.floor_ms, max_entries: q.limit, max_bytes: usize::MAX };
        let r = self.log.read(from, |c| q.keeps(c));
        let changes = r
            .entries
            .into_iter()
            .map(|e| {
                let mut c = (*e.item).clone();
                c.seq = e.seq;
                c
            })
            .collect();
        Ok(ChangePage::new(changes, r.through, r.truncated, r.more))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: &str, status: TaskStatus, version: u64) -> TaskRecord {
        let mut r = TaskRecord::new(id.into(), Some("alice".into()), 1_000, None);
        r.status = status;
        r.version = version;
        r
    }

    #[tokio::test]
    async fn a_late_report_of_an_older_write_is_not_logged_and_eviction_forgets_versions() {
        let log = MemoryChanges::new(2, usize::MAX);
        log.record(&rec("t1", TaskStatus::Working, 1));
        log.record(&rec("t1", TaskStatus::Completed, 3));
        log.record(&rec("t1", TaskStatus::InputRequired, 2));
        log.record(&rec("t1", TaskStatus::Completed, 4));
        assert_eq!(log.head().await.unwrap(), 2);
        let statuses = [TaskStatus::Working, TaskStatus::Completed, TaskStatus::InputRequired];
        let page = log.read(ChangeQuery::new(0, "alice", &statuses, 10)).await.unwrap();
        let got: Vec<(u64, TaskStatus)> = page.changes.iter().map(|c| (c.seq, c.status)).collect();
        assert_eq!(got, [(1, TaskStatus::Working), (2, TaskStatus::Completed)]);
        assert!(log.read(ChangeQuery::new(0, "bob", &statuses, 10)).await.unwrap().changes.is_empty());
        log.record(&rec("t2", TaskStatus::Working, 1));
        log.record(&rec("t3", TaskStatus::Working, 1));
        assert!(log.logged.lock().unwrap().len() <= 2);
        assert!(log.read(ChangeQuery::new(0, "alice", &statuses, 10)).await.unwrap().truncated);
    }
}
