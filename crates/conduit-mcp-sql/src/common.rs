//! What both engines share: the row layout, the compare-and-swap loop, and
//! the migration list.

use async_trait::async_trait;
use conduit_mcp::clock::Clock;
use conduit_mcp::ext::tasks::{Lease, Owner, StoreError, TaskRecord, TaskStatus};

/// Statuses that still may change, as stored in the `status` column.
pub(crate) const LIVE_STATUSES: &str = "('working', 'input_required')";

/// Rows deleted per statement by `cleanup`, so a large sweep never holds the
/// write lock (SQLite) or a huge transaction (PostgreSQL) for long.
pub(crate) const CLEANUP_BATCH: i64 = 5_000;

/// The columns every write derives from the record.
#[derive(Debug)]
pub(crate) struct Columns {
    pub owner: Option<String>,
    pub status: &'static str,
    pub version: i64,
    pub created_at_ms: i64,
    pub expires_at_ms: Option<i64>,
    pub terminal_at_ms: Option<i64>,
    pub lease_node: Option<String>,
    pub lease_expires_ms: Option<i64>,
    pub doc: String,
}

/// Milliseconds as a SQL `BIGINT` (saturating: no u64 time this crate stores
/// comes near `i64::MAX`, but a `ttl` of `u64::MAX` would).
pub(crate) fn ms(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// The system time in epoch milliseconds (for bookkeeping columns only; task
/// times come from the injected clock).
pub(crate) fn wall_clock_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// `limit` as a SQL `LIMIT`.
pub(crate) fn limit(v: usize) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl Columns {
    pub(crate) fn of(record: &TaskRecord) -> Result<Self, StoreError> {
        let doc = serde_json::to_string(record)
            .map_err(|e| StoreError::Backend(format!("cannot encode the task record as JSON: {e}")))?;
        Ok(Self {
            owner: record.owner.clone(),
            status: record.status.as_str(),
            version: ms(record.version),
            created_at_ms: ms(record.created_at_ms),
            expires_at_ms: record.expires_at_ms().map(ms),
            terminal_at_ms: record.terminal_at_ms.map(ms),
            lease_node: record.lease.as_ref().map(|l| l.node.clone()),
            lease_expires_ms: record.lease.as_ref().map(|l| ms(l.expires_at_ms)),
            doc,
        })
    }
}

/// Rebuilds a record from its row: the document, with `version` and the lease
/// taken from their columns (which are authoritative).
pub(crate) fn decode(
    engine: &str,
    version: i64,
    lease_node: Option<String>,
    lease_expires_ms: Option<i64>,
    doc: &str,
) -> Result<TaskRecord, StoreError> {
    let mut record: TaskRecord = serde_json::from_str(doc)
        .map_err(|e| StoreError::Backend(format!("{engine}: a stored task document is unreadable: {e}")))?;
    record.version = u64::try_from(version).unwrap_or(0);
    record.lease = match (lease_node, lease_expires_ms) {
        (Some(node), Some(exp)) => Some(Lease { node, expires_at_ms: u64::try_from(exp).unwrap_or(0) }),
        _ => None,
    };
    Ok(record)
}

/// The two row operations the compare-and-swap loop needs from an engine.
#[async_trait]
pub(crate) trait Rows: Send + Sync {
    /// The row as it is now, if it exists (expired or not, anyone's).
    async fn read(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError>;

    /// Writes `next` if the row is still at `expected` version; `false` when
    /// another writer got there first (or the row is gone).
    async fn swap(&self, next: &TaskRecord, expected: u64) -> Result<bool, StoreError>;
}

/// Per-task write queues inside one process: writers of the same task take
/// turns (by a hash of its id), so they do not all read the same version and
/// then collide on the compare-and-swap. Writers in other processes are still
/// kept apart by the compare-and-swap itself.
pub(crate) struct Stripes(Box<[tokio::sync::Mutex<()>]>);

impl std::fmt::Debug for Stripes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Stripes").field(&self.0.len()).finish()
    }
}

impl Stripes {
    pub(crate) fn new(n: usize) -> Self {
        Self((0..n.max(1)).map(|_| tokio::sync::Mutex::new(())).collect())
    }

    async fn lock(&self, task_id: &str) -> tokio::sync::MutexGuard<'_, ()> {
        use std::hash::{BuildHasher, BuildHasherDefault};
        let h = BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default().hash_one(task_id);
        self.0[(h % self.0.len() as u64) as usize].lock().await
    }
}

/// An atomic read-modify-write by compare-and-swap on `version`.
///
/// `f` gets the current record and the time, and returns the new record,
/// `None` to leave it as it is, or an error (a refusal), which changes
/// nothing. When another writer changed the row in between, the read and `f`
/// run again on the new state, so no acknowledged write is ever overwritten.
/// Terminal records are returned unchanged whatever `f` returns.
pub(crate) async fn modify<R, F>(
    rows: &R,
    stripes: &Stripes,
    clock: &dyn Clock,
    task_id: &str,
    owner: Owner<'_>,
    f: F,
) -> Result<TaskRecord, StoreError>
where
    R: Rows + ?Sized,
    F: Fn(&TaskRecord, u64) -> Result<Option<TaskRecord>, StoreError>,
{
    let _turn = stripes.lock(task_id).await;
    loop {
        let now = clock.now_ms();
        let cur =
            rows.read(task_id).await?.filter(|r| owner.allows(r) && !r.is_expired(now)).ok_or(StoreError::NotFound)?;
        let Some(mut next) = f(&cur, now)? else {
            return Ok(cur);
        };
        if cur.is_terminal() {
            // Terminal records never change, whatever the function returned.
            return Ok(cur);
        }
        next.task_id.clone_from(&cur.task_id);
        next.version = cur.version + 1;
        if rows.swap(&next, cur.version).await? {
            return Ok(next);
        }
        // Lost the race: another write landed between our read and our swap.
        tracing::trace!("task write lost a compare-and-swap race; retrying");
    }
}

/// `put_status` semantics: `Terminal` for a record that already is.
pub(crate) fn status_change(
    status: TaskStatus,
    fields: &conduit_mcp::ext::tasks::StatusFields,
) -> impl Fn(&TaskRecord, u64) -> Result<Option<TaskRecord>, StoreError> + '_ {
    move |r, now| conduit_mcp::ext::tasks::apply_status(r, status, fields, now).map(Some)
}

/// One schema migration shipped with the crate.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Migration {
    pub version: i64,
    pub description: &'static str,
    pub sql: &'static str,
}

/// The columns `conduit_tasks` must have (a table without them is foreign).
pub(crate) const TASK_COLUMNS: [&str; 10] = [
    "task_id",
    "owner",
    "status",
    "version",
    "created_at_ms",
    "expires_at_ms",
    "terminal_at_ms",
    "lease_node",
    "lease_expires_ms",
    "doc",
];

/// Checks an existing `conduit_tasks` table's column names.
pub(crate) fn check_task_columns(found: &[String]) -> Result<(), crate::OpenError> {
    let missing: Vec<&str> = TASK_COLUMNS.iter().copied().filter(|c| !found.iter().any(|f| f == c)).collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(crate::OpenError::ForeignSchema {
            table: "conduit_tasks".into(),
            detail: format!("it lacks the column(s) {}", missing.join(", ")),
        })
    }
}
