//! [`TaskChangeFeed`]: a durable store's log of task changes, read by
//! position. A store whose writes record every status (and status message) a
//! task is written with, in the write's own transaction, offers one through
//! [`TaskStore::change_feed`](super::TaskStore::change_feed); the Events
//! extension's `task.status_changed` reads it, so a position means the same
//! change on every node and after a restart. Without one, the Tasks handle
//! keeps a bounded log in memory.

use crate::protocol::tasks::TaskStatus;
use crate::task::StoreError;
use async_trait::async_trait;

/// One change of a task, at its position in the log.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskChange {
    /// Its position (positions grow with commit order).
    pub seq: u64,
    /// The task.
    pub task_id: String,
    /// Who owns it (`None`: made without a principal).
    pub owner: Option<String>,
    /// Its status after the write.
    pub status: TaskStatus,
    /// Its status message after the write.
    pub status_message: Option<String>,
    /// When it was written, epoch ms.
    pub last_updated_at_ms: u64,
}

impl TaskChange {
    /// A change at position `seq`.
    pub fn new(
        seq: u64,
        task_id: impl Into<String>,
        owner: Option<String>,
        status: TaskStatus,
        status_message: Option<String>,
        last_updated_at_ms: u64,
    ) -> Self {
        Self { seq, task_id: task_id.into(), owner, status, status_message, last_updated_at_ms }
    }
}

/// What one read asks for: the changes after a position, of one owner's
/// tasks, optionally of one task and some statuses, not older than a floor.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct ChangeQuery<'a> {
    /// The position after which to read.
    pub after: u64,
    /// Whose tasks.
    pub owner: &'a str,
    /// Only this task.
    pub task_id: Option<&'a str>,
    /// Only these statuses.
    pub statuses: &'a [TaskStatus],
    /// Skip changes written before this time (epoch ms).
    pub floor_ms: Option<u64>,
    /// Most changes returned.
    pub limit: usize,
}

impl<'a> ChangeQuery<'a> {
    /// Changes after `after` of `owner`'s tasks in `statuses`, at most `limit`.
    pub fn new(after: u64, owner: &'a str, statuses: &'a [TaskStatus], limit: usize) -> Self {
        Self { after, owner, task_id: None, statuses, floor_ms: None, limit }
    }

    /// Only task `id`.
    #[must_use]
    pub fn task(mut self, id: Option<&'a str>) -> Self {
        self.task_id = id;
        self
    }

    /// Skip changes written before `floor_ms`.
    #[must_use]
    pub fn floor(mut self, floor_ms: Option<u64>) -> Self {
        self.floor_ms = floor_ms;
        self
    }

    /// Whether `c` is one of the changes asked for (position and floor aside).
    pub fn keeps(&self, c: &TaskChange) -> bool {
        c.owner.as_deref() == Some(self.owner)
            && self.statuses.contains(&c.status)
            && self.task_id.is_none_or(|id| id == c.task_id)
    }
}

/// What one read found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChangePage {
    /// The changes, oldest first.
    pub changes: Vec<TaskChange>,
    /// The position read through: the next read starts after it.
    pub through: u64,
    /// The read started later than asked (the position is no longer kept, or
    /// the floor skipped changes).
    pub truncated: bool,
    /// The read stopped at its limit before the end.
    pub more: bool,
    /// Changes that committed have no position yet (a log that numbers them
    /// after commit waits for older transactions still running): nothing will
    /// wake a reader for them, so it reads again soon.
    pub settling: bool,
}

impl ChangePage {
    /// A page of these parts.
    pub fn new(changes: Vec<TaskChange>, through: u64, truncated: bool, more: bool) -> Self {
        Self { changes, through, truncated, more, settling: false }
    }

    /// The page, saying whether committed changes still wait for a position.
    #[must_use]
    pub fn settling(mut self, settling: bool) -> Self {
        self.settling = settling;
        self
    }
}

/// A log of task changes, read by position.
#[async_trait]
pub trait TaskChangeFeed: std::fmt::Debug + Send + Sync + 'static {
    /// Which log this is: positions of another epoch are not this log's (a
    /// memory log after a restart; another database).
    fn epoch(&self) -> u64;

    /// The last position (where reading "from now" starts).
    async fn head(&self) -> Result<u64, StoreError>;

    /// The changes `query` asks for.
    async fn read(&self, query: ChangeQuery<'_>) -> Result<ChangePage, StoreError>;
}
