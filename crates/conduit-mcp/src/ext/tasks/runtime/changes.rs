//! The task change log: every status a task was written with, in write order,
//! at a position that names it (the event id of `task.status_changed` is
//! derived from it). A [`Tasks`](super::Tasks) handle and its legacy twin share one,
//! so both eras' changes are on it. This one lives in memory and is bounded (by
//! the Events configuration that asks for it); an older position reads as truncated.

use crate::ext::tasks::store::TaskRecord;
use crate::protocol::tasks::TaskStatus;
use crate::seq_log::{Read, ReadFrom, SeqLog};
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use tokio::sync::watch;

/// What a change log keeps of one write.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) struct TaskChange {
    /// The task.
    pub(crate) task_id: String,
    /// Who owns it (`None`: made without a principal).
    pub(crate) owner: Option<String>,
    /// Its status after the write.
    pub(crate) status: TaskStatus,
    /// Its status message after the write.
    pub(crate) status_message: Option<String>,
    /// When it was written, epoch ms.
    pub(crate) last_updated_at_ms: u64,
    /// The record's version after the write.
    pub(crate) version: u64,
}

impl TaskChange {
    /// What a write of `record` changed.
    pub(crate) fn of(record: &TaskRecord) -> Self {
        Self {
            task_id: record.task_id.clone(),
            owner: record.owner.clone(),
            status: record.status,
            status_message: record.status_message.clone(),
            last_updated_at_ms: record.last_updated_at_ms,
            version: record.version,
        }
    }

    fn weight(&self) -> usize {
        64 + self.task_id.len()
            + self.owner.as_ref().map_or(0, String::len)
            + self.status_message.as_ref().map_or(0, String::len)
    }
}

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
pub(crate) struct TaskChanges {
    log: SeqLog<TaskChange>,
    /// Names this log among others (a restarted process's has another).
    epoch: u64,
    /// What was last logged of each task still on the log: a write reported
    /// late (after a newer one of the same task) is not logged, nor one that
    /// changed neither status nor message (a lease renewal).
    logged: Mutex<HashMap<String, Logged>>,
}

impl TaskChanges {
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
        let change = TaskChange::of(record);
        let weight = change.weight();
        // The map lock is held across the append so that positions follow versions.
        let seq = self.log.append_with(record.last_updated_at_ms, weight, change, |old| {
            if logged.get(&old.item.task_id).is_some_and(|l| l.seq == old.seq) {
                logged.remove(&old.item.task_id);
            }
        });
        let entry =
            Logged { version: record.version, status: record.status, message: record.status_message.clone(), seq };
        logged.insert(record.task_id.clone(), entry);
    }

    /// Which log this is.
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The last position.
    pub(crate) fn head(&self) -> u64 {
        self.log.head()
    }

    /// Woken at every change.
    pub(crate) fn watch(&self) -> watch::Receiver<u64> {
        self.log.watch()
    }

    /// The changes after `from.after` that `keep` accepts.
    pub(crate) fn read(&self, from: ReadFrom, keep: impl FnMut(&TaskChange) -> bool) -> Read<TaskChange> {
        self.log.read(from, keep)
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

    #[test]
    fn a_late_report_of_an_older_write_is_not_logged_and_eviction_forgets_versions() {
        let log = TaskChanges::new(2, usize::MAX);
        log.record(&rec("t1", TaskStatus::Working, 1));
        log.record(&rec("t1", TaskStatus::Completed, 3));
        log.record(&rec("t1", TaskStatus::InputRequired, 2));
        log.record(&rec("t1", TaskStatus::Completed, 4));
        assert_eq!(log.head(), 2);
        let all = ReadFrom { after: 0, floor_ms: None, max_entries: 10, max_bytes: usize::MAX };
        let r = log.read(all, |_| true);
        assert_eq!(
            r.entries.iter().map(|e| e.item.status).collect::<Vec<_>>(),
            [TaskStatus::Working, TaskStatus::Completed]
        );
        log.record(&rec("t2", TaskStatus::Working, 1));
        log.record(&rec("t3", TaskStatus::Working, 1));
        assert!(log.logged.lock().unwrap().len() <= 2);
    }
}
