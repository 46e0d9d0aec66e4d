//! The `TaskStore` trait: the storage contract every backend meets.

use super::limits::bound_status_message;
use super::record::TaskRecord;
use crate::protocol::tasks::TaskStatus;
use crate::task::{StoreError, TransactionHook};
use async_trait::async_trait;
use std::sync::OnceLock;

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

/// The caps a new task must fit under, checked atomically by
/// [`TaskStore::create`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CreateCaps {
    /// At most this many tasks in the store, live and terminal (`None`: no
    /// cap). A create the cap refuses may take the place of one of its
    /// owner's terminal tasks: see [`TaskStore::evict_oldest_terminal`].
    pub max_rows: Option<usize>,
    /// At most this many *live* tasks (`working`, `input_required`) of the
    /// new task's owner (`None`: no cap): its terminal tasks do not count, so
    /// ending tasks never locks an owner out (they are bounded by
    /// [`TerminalBound`] instead). A task without an owner (no
    /// authentication) is under the row cap only.
    pub max_rows_per_owner: Option<usize>,
}

/// What one owner's terminal tasks may hold, kept by
/// [`TaskStore::trim_terminal`] each time one of its tasks ends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TerminalBound {
    /// At most this many terminal tasks (`None`: no count bound).
    pub max_rows: Option<usize>,
    /// At most this many bytes of terminal tasks, a task counting as its
    /// record's JSON ([`TaskRecord::stored_len`]; `None`: no byte bound).
    pub max_bytes: Option<usize>,
}

impl TerminalBound {
    /// A bound of `max_rows` tasks and `max_bytes` bytes.
    pub fn new(max_rows: Option<usize>, max_bytes: Option<usize>) -> Self {
        Self { max_rows, max_bytes }
    }

    /// Whether `rows` terminal tasks of `bytes` in all are past the bound.
    pub fn exceeded_by(&self, rows: usize, bytes: usize) -> bool {
        self.max_rows.is_some_and(|m| rows > m) || self.max_bytes.is_some_and(|m| bytes > m)
    }
}

impl CreateCaps {
    /// The row cap alone.
    pub fn rows(max_rows: Option<usize>) -> Self {
        Self { max_rows, max_rows_per_owner: None }
    }

    /// The row cap and the per-owner cap.
    pub fn new(max_rows: Option<usize>, max_rows_per_owner: Option<usize>) -> Self {
        Self { max_rows, max_rows_per_owner }
    }
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
    pub error: Option<super::record::TaskFailure>,
}

/// Where tasks live.
///
/// A store implements `name`, `now_ms`, `create`, `get` and `update`;
/// `cancel` and `put_status` are provided, built once on `update`, so every
/// store gets the same semantics. The lease and cleanup methods default to a
/// store that keeps no leases and never expires anything.
///
/// The contract (proved for any implementation by `conduit_mcp::testing::store_contract`):
/// - `create` returns the record as stored (at `version` 1) only once a `get`
///   on any connection finds it, and fails with `TaskLimitReached` when
///   `max_rows` records exist (checked atomically).
/// - `create` counts only the owner's live tasks against
///   `max_rows_per_owner`; [`trim_terminal`](Self::trim_terminal) and
///   [`evict_oldest_terminal`](Self::evict_oldest_terminal) remove one
///   owner's terminal tasks oldest first (by `terminal_at_ms`, then id),
///   before their TTL, and nothing else.
/// - `get`, `update`, `cancel` answer `NotFound` for a missing id, another owner's
///   task, and an expired task alike (expired by [`now_ms`](Self::now_ms)).
/// - `update` is an atomic read-modify-write (compare-and-swap on `version`, or
///   a row lock), and so are `cancel` and `put_status`, which go through it.
/// - `update` hands its function the current record, terminal ones included,
///   and returns the function's refusal as it is; the provided methods rely on both.
/// - Terminal records never change: `put_status` answers `Terminal`, `cancel`
///   returns them unchanged, and `update` functions see them and may refuse.
/// - There is no listing.
#[async_trait]
pub trait TaskStore: Send + Sync + 'static {
    /// A short name for logs and the janitor's event (`memory`, `sqlite`, ...).
    fn name(&self) -> &'static str;

    /// Now, in milliseconds since the epoch, from the store's injected clock:
    /// the time it judges expiry by, and the time the provided `cancel` and
    /// `put_status` stamp their transitions with.
    fn now_ms(&self) -> u64;

    /// Stores a new record under both caps and returns it as stored (at
    /// `version` 1, which the store sets): `TaskLimitReached` at the row cap,
    /// `OwnerLimitReached` when its owner holds `max_rows_per_owner` live
    /// tasks (both checked atomically, across every node sharing the store),
    /// `Duplicate` when its id is taken.
    async fn create(&self, record: TaskRecord, caps: CreateCaps) -> Result<TaskRecord, StoreError>;

    /// Stores a new record under `caps` and runs `hook` in the same
    /// database transaction, after the row is written: both commit or
    /// neither does. A failing hook is [`StoreError::Hook`] with nothing
    /// written; a cap or a duplicate id refuses the create before the hook
    /// runs; returns the record as stored, as [`create`](Self::create) does.
    /// Such creates are written one by one, outside any batching of
    /// plain creates.
    ///
    /// Default: [`StoreError::Unsupported`] — a store without transactions
    /// cannot promise that the task and the hook's rows commit together.
    async fn create_with(
        &self,
        record: TaskRecord,
        caps: CreateCaps,
        hook: &dyn TransactionHook,
    ) -> Result<TaskRecord, StoreError> {
        let _ = (record, caps, hook);
        Err(StoreError::no_transactions(self.name()))
    }

    /// [`update`](Self::update), with `hook` run on the record as written in
    /// the same transaction as the write: both commit or neither does (a
    /// failing hook is [`StoreError::Hook`], the record unchanged). The hook
    /// runs only when something is written: not for a refusal, nor for a
    /// terminal record.
    ///
    /// Default: [`StoreError::Unsupported`].
    async fn update_with(
        &self,
        task_id: &str,
        owner: Owner<'_>,
        f: UpdateFn<'_>,
        hook: &dyn TransactionHook,
    ) -> Result<TaskRecord, StoreError> {
        let _ = (task_id, owner, f, hook);
        Err(StoreError::no_transactions(self.name()))
    }

    /// Reads a record.
    async fn get(&self, task_id: &str, owner: Owner<'_>) -> Result<TaskRecord, StoreError>;

    /// Atomically replaces the record with `f(record)`; a refusal leaves it unchanged.
    async fn update(&self, task_id: &str, owner: Owner<'_>, f: UpdateFn<'_>) -> Result<TaskRecord, StoreError>;

    /// Moves a non-terminal record to `cancelled`; returns a terminal one unchanged.
    ///
    /// Provided: one [`update`](Self::update) whose function refuses a terminal
    /// record, which is then returned as the function saw it.
    async fn cancel(
        &self,
        task_id: &str,
        owner: Owner<'_>,
        status_message: Option<&str>,
    ) -> Result<TaskRecord, StoreError> {
        // Terminal records never change, so the one the function refused is
        // still the stored one.
        let seen = OnceLock::new();
        let f = |r: &TaskRecord| {
            if r.is_terminal() {
                let _ = seen.set(r.clone());
                return Err(StoreError::Terminal);
            }
            Ok(cancelled(r, status_message, self.now_ms()))
        };
        match self.update(task_id, owner, &f).await {
            Err(StoreError::Terminal) => match seen.into_inner() {
                Some(record) => Ok(record),
                // The store refused before showing the record to the function.
                None => self.get(task_id, owner).await,
            },
            done => done,
        }
    }

    /// Worker side: moves a non-terminal record to `status`, merging `fields`.
    ///
    /// Provided: one [`update`](Self::update) (owner [`Owner::Any`]) that
    /// answers `Terminal` for a terminal record.
    async fn put_status(
        &self,
        task_id: &str,
        status: TaskStatus,
        fields: StatusFields,
    ) -> Result<TaskRecord, StoreError> {
        let f = |r: &TaskRecord| with_status(r, status, &fields, self.now_ms());
        self.update(task_id, Owner::Any, &f).await
    }

    /// Removes `owner`'s oldest terminal tasks (by `terminal_at_ms`, then
    /// id), before their TTL, until what it keeps is within `bound` — but
    /// never its newest terminal task, which stays whatever its size; live
    /// tasks and other owners' are untouched. Returns how many went.
    ///
    /// The runtime calls it each time one of `owner`'s tasks ends, so an
    /// owner's terminal tasks hold at most `bound` (plus its newest one).
    /// Default: none go (a store that keeps no such bound).
    async fn trim_terminal(&self, owner: &str, bound: TerminalBound) -> Result<usize, StoreError> {
        let _ = (owner, bound);
        Ok(0)
    }

    /// Removes `owner`'s oldest terminal task (by `terminal_at_ms`, then
    /// id) before its TTL, to make room under the row cap; whether one went
    /// (`false`: every task of `owner` is live). Never another owner's.
    ///
    /// The runtime calls it when a create of `owner` finds the row cap full,
    /// then creates again: a principal's own terminal tasks never stop its
    /// creates. Default: none go.
    async fn evict_oldest_terminal(&self, owner: &str) -> Result<bool, StoreError> {
        let _ = owner;
        Ok(false)
    }

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

    /// Extends, until `until_ms`, the lease of those of `task_ids` that are
    /// non-terminal and leased to `node`; returns how many. A node renews only
    /// the work it still runs (or is still recording the end of), so a task
    /// whose work ended without its final write lapses and is recovered.
    /// Default: [`renew_leases`](Self::renew_leases) of the whole node.
    async fn renew_leases_of(&self, node: &str, task_ids: &[String], until_ms: u64) -> Result<usize, StoreError> {
        let _ = task_ids;
        self.renew_leases(node, until_ms).await
    }

    /// Up to `limit` non-terminal tasks whose lease expired before now (the node
    /// running their work stopped renewing it). Default: none.
    async fn lapsed_leases(&self, _limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
        Ok(Vec::new())
    }

    /// Claims node id `node` for this process, for as long as the store lives;
    /// called again, checks that the claim still holds (and takes it again if
    /// the store lost it, say on a reconnect).
    ///
    /// Answers [`StoreError::Refused`] when another live process holds `node`
    /// on the same data: two live nodes with one id would renew each other's
    /// leases and recover each other's running work. The claim ends with the
    /// process (a crashed node's id is free at once), so a restart under the
    /// same id is admitted. Default: a store no other process can open has
    /// nothing to claim.
    async fn claim_node(&self, _node: &str) -> Result<(), StoreError> {
        Ok(())
    }

    /// Up to `limit` non-terminal tasks leased to `node` (to recover a node's own
    /// tasks when it restarts under the same id). Default: none.
    async fn leased_to(&self, _node: &str, _limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
        Ok(Vec::new())
    }

    /// The store's durable log of task changes, written in each write's own
    /// transaction, if it keeps one (both eras' tables of one database share
    /// it). Default: none; the Tasks handle then keeps a bounded log in memory.
    fn change_feed(&self) -> Option<std::sync::Arc<dyn super::changes::TaskChangeFeed>> {
        None
    }
}

/// `put_status` on one record: `Terminal` for a record that already is.
fn with_status(
    record: &TaskRecord,
    status: TaskStatus,
    fields: &StatusFields,
    now_ms: u64,
) -> Result<TaskRecord, StoreError> {
    if record.is_terminal() {
        return Err(StoreError::Terminal);
    }
    let mut r = record.clone();
    match &fields.status_message {
        Some(m) => r.status_message = Some(bound_status_message(m.clone())),
        // A completed task's last progress message would describe work that is done.
        None if status == TaskStatus::Completed => r.status_message = None,
        None => {}
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

/// `cancel` on one live record.
fn cancelled(record: &TaskRecord, status_message: Option<&str>, now_ms: u64) -> TaskRecord {
    let mut r = record.clone();
    r.status_message = Some(bound_status_message(status_message.unwrap_or("Cancelled by client request").to_owned()));
    r.transition(TaskStatus::Cancelled, now_ms);
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn a_backend_error_carries_its_source_and_compares_by_message() {
        let io = std::io::Error::other("disk on fire");
        let e = StoreError::backend("sqlite: cannot write a task: disk on fire", io);
        assert_eq!(e.to_string(), "store backend error: sqlite: cannot write a task: disk on fire");
        let source = e.source().expect("the source is kept");
        assert_eq!(source.downcast_ref::<std::io::Error>().map(|s| s.to_string()).as_deref(), Some("disk on fire"));
        assert_eq!(e.clone(), StoreError::backend_message("sqlite: cannot write a task: disk on fire"));
        assert_ne!(e, StoreError::backend_message("another failure"));
        assert!(StoreError::backend_message("x").source().is_none());
        assert!(StoreError::NotFound.source().is_none());
        assert_eq!(StoreError::Refused("no".into()), StoreError::Refused("no".into()));
        assert_ne!(StoreError::NotFound, StoreError::Terminal);
    }
}
