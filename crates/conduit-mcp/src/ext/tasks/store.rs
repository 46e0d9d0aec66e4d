//! The `TaskStore` trait: the storage contract every backend meets.

use super::task::{TaskRecord, TaskStatus};
use async_trait::async_trait;

/// Whose task an operation may touch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner<'a> {
    /// Only a task owned by exactly this principal id (`None` = unauthenticated).
    Is(Option<&'a str>),
    /// Any task (server-side callers only: workers, the janitor).
    Any,
}

impl Owner<'_> {
    /// Whether `record` may be touched.
    pub fn allows(&self, record: &TaskRecord) -> bool {
        match self {
            Owner::Any => true,
            Owner::Is(o) => record.owner.as_deref() == *o,
        }
    }
}

/// Why a store operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No such task, not the caller's, or expired. Deliberately one variant.
    #[error("task not found")]
    NotFound,
    /// The task is terminal and cannot change.
    #[error("task is terminal")]
    Terminal,
    /// `create` hit the row cap.
    #[error("task limit reached")]
    TaskLimitReached,
    /// A task with this id exists already.
    #[error("task id already exists")]
    Duplicate,
    /// The update function refused the change (its reason).
    #[error("update refused: {0}")]
    Refused(String),
    /// The backend failed (database down, I/O, ...).
    #[error("store backend error: {0}")]
    Backend(String),
}

/// An update function: gets the current record, returns the new one or refuses.
pub type UpdateFn<'a> = &'a (dyn Fn(&TaskRecord) -> Result<TaskRecord, StoreError> + Send + Sync);

/// Fields merged by [`TaskStore::put_status`].
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct StatusFields {
    /// New status message (`None` keeps the old one).
    pub status_message: Option<String>,
    /// The result (for `completed`).
    pub result: Option<serde_json::Value>,
    /// The error (for `failed`).
    pub error: Option<super::task::TaskFailure>,
}

/// Where tasks live.
///
/// The contract (proved for any implementation by `conduit_mcp::testing::store_contract`):
/// - `create` returns only once a `get` on any connection finds the record, and
///   fails with `TaskLimitReached` when `max_rows` records exist (checked atomically).
/// - `get`, `update`, `cancel` answer `NotFound` for a missing id, another owner's
///   task, and an expired task alike.
/// - `update`, `cancel` and `put_status` are atomic read-modify-writes
///   (compare-and-swap on `version`, or a row lock).
/// - Terminal records never change: `put_status` answers `Terminal`, `cancel`
///   returns them unchanged, and `update` functions see them and may refuse.
/// - There is no listing.
#[async_trait]
pub trait TaskStore: Send + Sync + 'static {
    /// A short name for logs and the janitor's event (`memory`, `sqlite`, ...).
    fn name(&self) -> &'static str;

    /// Stores a new record (`version` is set by the store).
    async fn create(&self, record: TaskRecord, max_rows: Option<usize>) -> Result<(), StoreError>;

    /// Reads a record.
    async fn get(&self, task_id: &str, owner: Owner<'_>) -> Result<TaskRecord, StoreError>;

    /// Atomically replaces the record with `f(record)`; a refusal leaves it unchanged.
    async fn update(&self, task_id: &str, owner: Owner<'_>, f: UpdateFn<'_>) -> Result<TaskRecord, StoreError>;

    /// Moves a non-terminal record to `cancelled`; returns a terminal one unchanged.
    async fn cancel(
        &self,
        task_id: &str,
        owner: Owner<'_>,
        status_message: Option<&str>,
    ) -> Result<TaskRecord, StoreError>;

    /// Worker side: moves a non-terminal record to `status`, merging `fields`.
    async fn put_status(
        &self,
        task_id: &str,
        status: TaskStatus,
        fields: StatusFields,
    ) -> Result<TaskRecord, StoreError>;

    /// Evicts expired records, and terminal unlimited-TTL records older than
    /// `terminal_ttl_ms`; returns how many were removed.
    async fn cleanup(&self, _terminal_ttl_ms: u64) -> Result<usize, StoreError> {
        Ok(0)
    }

    /// Extends, until `until_ms`, the lease of every non-terminal task whose work
    /// runs on `node` (`record.lease.node == node`); returns how many. A store
    /// that keeps leases outside the record must report them back in
    /// `record.lease` on every read.
    async fn renew_leases(&self, _node: &str, _until_ms: u64) -> Result<usize, StoreError> {
        Ok(0)
    }

    /// Up to `limit` non-terminal tasks whose lease expired before now (the node
    /// running their work stopped renewing it). Default: none.
    async fn lapsed_leases(&self, _limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
        Ok(Vec::new())
    }

    /// Up to `limit` non-terminal tasks leased to `node` (to recover a node's own
    /// tasks when it restarts under the same id). Default: none.
    async fn leased_to(&self, _node: &str, _limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
        Ok(Vec::new())
    }
}

/// Applies `put_status` semantics to a record (shared by every backend).
pub fn apply_status(
    record: &TaskRecord,
    status: TaskStatus,
    fields: &StatusFields,
    now_ms: u64,
) -> Result<TaskRecord, StoreError> {
    if record.is_terminal() {
        return Err(StoreError::Terminal);
    }
    let mut r = record.clone();
    if let Some(m) = &fields.status_message {
        r.status_message = Some(m.clone());
    }
    if fields.result.is_some() {
        r.result = fields.result.clone();
    }
    if fields.error.is_some() {
        r.error = fields.error.clone();
    }
    r.transition(status, now_ms);
    Ok(r)
}

/// Applies `cancel` semantics to a record: `None` when it is already terminal.
pub fn apply_cancel(record: &TaskRecord, status_message: Option<&str>, now_ms: u64) -> Option<TaskRecord> {
    if record.is_terminal() {
        return None;
    }
    let mut r = record.clone();
    r.status_message = Some(status_message.unwrap_or("Cancelled by client request").to_owned());
    r.transition(TaskStatus::Cancelled, now_ms);
    Some(r)
}
