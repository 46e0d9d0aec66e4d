//! [`SqlStore`]: the one [`TaskStore`] implementation both engines and both
//! task tables share — `get`'s filter, `update`'s compare-and-swap loop,
//! `cleanup`'s sweeps, the per-task write queues — over the statements an
//! [`Engine`] makes once for each [`Table`]. The legacy table's store adds
//! only what the legacy era adds: `list_after` and its cursor key.

use super::table::{LegacyTable, Table, TableKind, TaskTable};
use super::{CLEANUP_BATCH, ms};
use async_trait::async_trait;
use conduit_mcp::clock::Clock;
use conduit_mcp::ext::tasks::legacy_store::{CursorKey, LegacyTaskStore, ListPosition};
use conduit_mcp::ext::tasks::{CreateCaps, Owner, TaskChangeFeed, TaskRecord, TaskStore, TerminalBound, UpdateFn};
use conduit_mcp::task::{StoreError, TransactionHook};
use std::sync::Arc;

/// The row operations of one database engine (SQLite, PostgreSQL), each on
/// the table whose statements it is handed: all a [`SqlStore`] needs to meet
/// the store contract.
///
/// Sealed: the trait is not reachable from outside this crate.
#[async_trait]
pub trait Engine: std::fmt::Debug + Send + Sync + 'static {
    /// The engine's name (`sqlite`, `postgres`): the prefix of its error messages.
    const NAME: &'static str;

    /// The engine's statements on one task table.
    type Sql: Send + Sync + 'static;

    /// The statements on table `kind`, made once per process.
    fn sql(kind: TableKind) -> &'static Self::Sql;

    /// The store's name for logs: the engine's, with `-legacy` for the legacy table.
    fn store_name(kind: TableKind) -> &'static str;

    /// Inserts `record` (already at version 1) into the extension's table under `caps`,
    /// committed before this returns (batched with other creates); the record as stored.
    async fn insert(&self, record: TaskRecord, caps: CreateCaps) -> Result<TaskRecord, StoreError>;

    /// Inserts `record` (version 1) into the extension's table under `caps` and runs `hook`,
    /// in one transaction of its own (never batched); the record as stored.
    async fn insert_with(
        &self,
        record: TaskRecord,
        caps: CreateCaps,
        hook: &dyn TransactionHook,
    ) -> Result<TaskRecord, StoreError>;

    /// [`insert`](Self::insert) into the legacy table (its own row counter).
    async fn insert_legacy(&self, record: TaskRecord, caps: CreateCaps) -> Result<TaskRecord, StoreError>;

    /// [`insert_with`](Self::insert_with) into the legacy table.
    async fn insert_legacy_with(
        &self,
        record: TaskRecord,
        caps: CreateCaps,
        hook: &dyn TransactionHook,
    ) -> Result<TaskRecord, StoreError>;

    /// The row as it is now, if it exists (expired or not, anyone's).
    async fn read(&self, sql: &'static Self::Sql, task_id: &str) -> Result<Option<TaskRecord>, StoreError>;

    /// Writes `next` if the row is still at `expected` version; `false` when
    /// another writer got there first (or the row is gone). With `hook`, the
    /// write and the hook share one transaction.
    async fn swap(
        &self,
        sql: &'static Self::Sql,
        next: &TaskRecord,
        expected: u64,
        hook: Option<&dyn TransactionHook>,
    ) -> Result<bool, StoreError>;

    /// Deletes up to [`CLEANUP_BATCH`] rows of `sweep` below `bound` (epoch
    /// milliseconds), lowering the row counter with them; returns how many.
    async fn delete_batch(&self, sql: &'static Self::Sql, sweep: Sweep, bound: i64) -> Result<u64, StoreError>;

    /// [`TaskStore::trim_terminal`].
    async fn trim_terminal(
        &self,
        sql: &'static Self::Sql,
        owner: &str,
        bound: TerminalBound,
    ) -> Result<usize, StoreError>;

    /// [`TaskStore::evict_oldest_terminal`].
    async fn evict_oldest_terminal(&self, sql: &'static Self::Sql, owner: &str) -> Result<bool, StoreError>;

    /// [`TaskStore::renew_leases`].
    async fn renew_leases(&self, sql: &'static Self::Sql, node: &str, until_ms: u64) -> Result<usize, StoreError>;

    /// [`TaskStore::renew_leases_of`].
    async fn renew_leases_of(
        &self,
        sql: &'static Self::Sql,
        node: &str,
        task_ids: &[String],
        until_ms: u64,
    ) -> Result<usize, StoreError>;

    /// [`TaskStore::claim_node`] (for the whole database: the task table's store claims it).
    async fn claim_node(&self, node: &str) -> Result<(), StoreError>;

    /// [`TaskStore::lapsed_leases`], judged at `now_ms`.
    async fn lapsed_leases(
        &self,
        sql: &'static Self::Sql,
        now_ms: u64,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, StoreError>;

    /// [`TaskStore::leased_to`], judged at `now_ms`.
    async fn leased_to(
        &self,
        sql: &'static Self::Sql,
        node: &str,
        now_ms: u64,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, StoreError>;

    /// The database's durable task change log, if this engine keeps one
    /// ([`TaskStore::change_feed`]). Default: none.
    fn change_feed(engine: &Arc<Self>) -> Option<Arc<dyn TaskChangeFeed>> {
        let _ = engine;
        None
    }

    /// [`LegacyTaskStore::list_after`] on the legacy table, judged at `now_ms`.
    async fn list_after(&self, sql: &'static Self::Sql, page: Page, now_ms: u64)
    -> Result<Vec<TaskRecord>, StoreError>;
}

/// One page of the legacy table's keyset listing, as bound.
#[derive(Debug)]
pub struct Page {
    /// The `list_owner` column's value (see [`list_owner`](super::list_owner)).
    pub(crate) list_owner: String,
    /// The last `(created_at_ms, task_id)` seen; `(-1, "")` from the start.
    pub(crate) after: (i64, String),
    /// `LIMIT`.
    pub(crate) limit: i64,
}

/// The two kinds of row `cleanup` deletes.
#[derive(Debug, Clone, Copy)]
pub enum Sweep {
    /// Rows whose TTL ran out: `expires_at_ms < bound`.
    Expired,
    /// Terminal rows with unlimited TTL: `expires_at_ms IS NULL AND terminal_at_ms < bound`.
    FinishedUnlimited,
}

/// A task store in a SQL database: one engine's connections, one task
/// table's statements, the injected clock, and per-task write queues. Use it
/// as [`SqliteStore`](crate::SqliteStore), [`PostgresStore`](crate::PostgresStore)
/// and their legacy stores ([`SqliteLegacyStore`](crate::SqliteLegacyStore),
/// [`PostgresLegacyStore`](crate::PostgresLegacyStore)). Cheap to clone (the
/// clones share the connections).
pub struct SqlStore<E: Engine, T: Table = TaskTable> {
    inner: Arc<Shared<E, T>>,
}

struct Shared<E: Engine, T> {
    engine: Arc<E>,
    sql: &'static E::Sql,
    table: T,
    stripes: Stripes,
    clock: Arc<dyn Clock>,
    /// The engine's change log, made on first use.
    feed: std::sync::OnceLock<Option<Arc<dyn TaskChangeFeed>>>,
}

impl<E: Engine, T: Table> Clone for SqlStore<E, T> {
    fn clone(&self) -> Self {
        Self { inner: self.inner.clone() }
    }
}

impl<E: Engine, T: Table> std::fmt::Debug for SqlStore<E, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlStore")
            .field("engine", &self.inner.engine)
            .field("table", &self.inner.table)
            .finish_non_exhaustive()
    }
}

impl<E: Engine> SqlStore<E> {
    /// The store of the extension's tasks over `engine`, its time from `clock`.
    pub(crate) fn new(engine: E, clock: Arc<dyn Clock>) -> Self {
        Self::over(Arc::new(engine), TaskTable, clock, 1024)
    }

    /// The legacy era's store beside this one: the same connections and
    /// clock, its cursors sealed with `key`.
    pub(crate) fn legacy_with(&self, key: CursorKey) -> SqlStore<E, LegacyTable> {
        SqlStore::over(self.inner.engine.clone(), LegacyTable { key }, self.inner.clock.clone(), 256)
    }
}

impl<E: Engine, T: Table> SqlStore<E, T> {
    fn over(engine: Arc<E>, table: T, clock: Arc<dyn Clock>, stripes: usize) -> Self {
        let sql = E::sql(T::KIND);
        let feed = std::sync::OnceLock::new();
        Self { inner: Arc::new(Shared { engine, sql, table, stripes: Stripes::new(stripes), clock, feed }) }
    }

    /// The engine's connections and statements.
    pub(crate) fn engine(&self) -> &E {
        &self.inner.engine
    }

    fn sql(&self) -> &'static E::Sql {
        self.inner.sql
    }
}

#[async_trait]
impl<E: Engine, T: Table> TaskStore for SqlStore<E, T> {
    fn name(&self) -> &'static str {
        E::store_name(T::KIND)
    }

    fn now_ms(&self) -> u64 {
        self.inner.clock.now_ms()
    }

    async fn create(&self, mut record: TaskRecord, caps: CreateCaps) -> Result<TaskRecord, StoreError> {
        record.version = 1;
        match T::KIND {
            TableKind::Tasks => self.engine().insert(record, caps).await,
            TableKind::Legacy => self.engine().insert_legacy(record, caps).await,
        }
    }

    async fn create_with(
        &self,
        mut record: TaskRecord,
        caps: CreateCaps,
        hook: &dyn TransactionHook,
    ) -> Result<TaskRecord, StoreError> {
        record.version = 1;
        match T::KIND {
            TableKind::Tasks => self.engine().insert_with(record, caps, hook).await,
            TableKind::Legacy => self.engine().insert_legacy_with(record, caps, hook).await,
        }
    }

    /// `NotFound` when the row is missing, another owner's, or expired.
    async fn get(&self, task_id: &str, owner: Owner<'_>) -> Result<TaskRecord, StoreError> {
        let now = self.now_ms();
        let row = self.engine().read(self.sql(), task_id).await?;
        row.filter(|r| owner.allows(r) && !r.is_expired(now)).ok_or(StoreError::NotFound)
    }

    /// An atomic read-modify-write: a compare-and-swap on the row's `version`, read
    /// again and re-applied when another writer won; terminal rows never change.
    async fn update(&self, task_id: &str, owner: Owner<'_>, f: UpdateFn<'_>) -> Result<TaskRecord, StoreError> {
        self.modify(task_id, owner, f, None).await
    }

    /// As `update`, with `hook` in each attempt's transaction (run only on the attempt that wins).
    async fn update_with(
        &self,
        task_id: &str,
        owner: Owner<'_>,
        f: UpdateFn<'_>,
        hook: &dyn TransactionHook,
    ) -> Result<TaskRecord, StoreError> {
        self.modify(task_id, owner, f, Some(hook)).await
    }

    /// Rows expired before now, then terminal unlimited-TTL rows finished
    /// more than `terminal_ttl_ms` ago, each in batches until a batch comes
    /// back short (so a large sweep never holds a lock for long).
    async fn cleanup(&self, terminal_ttl_ms: u64) -> Result<usize, StoreError> {
        let now = self.now_ms();
        let sweeps = [(Sweep::Expired, now), (Sweep::FinishedUnlimited, now.saturating_sub(terminal_ttl_ms))];
        let mut removed = 0usize;
        for (sweep, bound) in sweeps {
            loop {
                let gone = self.engine().delete_batch(self.sql(), sweep, ms(bound)).await?;
                removed = removed.saturating_add(usize::try_from(gone).unwrap_or(usize::MAX));
                if gone < CLEANUP_BATCH as u64 {
                    break;
                }
            }
        }
        Ok(removed)
    }

    async fn trim_terminal(&self, owner: &str, bound: TerminalBound) -> Result<usize, StoreError> {
        self.engine().trim_terminal(self.sql(), owner, bound).await
    }

    async fn evict_oldest_terminal(&self, owner: &str) -> Result<bool, StoreError> {
        self.engine().evict_oldest_terminal(self.sql(), owner).await
    }

    async fn renew_leases(&self, node: &str, until_ms: u64) -> Result<usize, StoreError> {
        self.engine().renew_leases(self.sql(), node, until_ms).await
    }

    async fn renew_leases_of(&self, node: &str, task_ids: &[String], until_ms: u64) -> Result<usize, StoreError> {
        self.engine().renew_leases_of(self.sql(), node, task_ids, until_ms).await
    }

    /// The task table's store holds the database's one node claim; the
    /// legacy store claims nothing of its own (give the legacy runtime the
    /// same `node_id`, whose claim then covers both).
    async fn claim_node(&self, node: &str) -> Result<(), StoreError> {
        match T::KIND {
            TableKind::Tasks => self.engine().claim_node(node).await,
            TableKind::Legacy => Ok(()),
        }
    }

    async fn lapsed_leases(&self, limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
        self.engine().lapsed_leases(self.sql(), self.now_ms(), limit).await
    }

    async fn leased_to(&self, node: &str, limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
        self.engine().leased_to(self.sql(), node, self.now_ms(), limit).await
    }

    /// The database's change log, shared by both task tables.
    fn change_feed(&self) -> Option<Arc<dyn TaskChangeFeed>> {
        self.inner.feed.get_or_init(|| E::change_feed(&self.inner.engine)).clone()
    }
}

impl<E: Engine, T: Table> SqlStore<E, T> {
    /// `update`: an atomic read-modify-write by compare-and-swap on `version`.
    ///
    /// `f` gets the current record and returns the new one or an error (a
    /// refusal), which changes nothing. When another writer changed the row in
    /// between, the read and `f` run again on the new state, so no acknowledged
    /// write is ever overwritten. Terminal records are returned unchanged
    /// whatever `f` returns. With `hook`, each write attempt and the hook share
    /// one transaction (the hook runs only on the attempt that wins).
    async fn modify(
        &self,
        task_id: &str,
        owner: Owner<'_>,
        f: UpdateFn<'_>,
        hook: Option<&dyn TransactionHook>,
    ) -> Result<TaskRecord, StoreError> {
        let _turn = self.inner.stripes.lock(task_id).await;
        loop {
            let cur = self.get(task_id, owner).await?;
            let mut next = f(&cur)?;
            if cur.is_terminal() {
                // Terminal records never change, whatever the function returned.
                return Ok(cur);
            }
            next.task_id.clone_from(&cur.task_id);
            // A task's creation time is fixed: its change log rows are found by it.
            next.created_at_ms = cur.created_at_ms;
            next.version = cur.version + 1;
            if self.engine().swap(self.sql(), &next, cur.version, hook).await? {
                return Ok(next);
            }
            // Lost the race: another write landed between our read and our swap.
            tracing::trace!("task write lost a compare-and-swap race; retrying");
        }
    }
}

/// The legacy era's store: what it adds to the task store is its listing.
#[async_trait]
impl<E: Engine> LegacyTaskStore for SqlStore<E, LegacyTable> {
    fn cursor_key(&self) -> &CursorKey {
        &self.inner.table.key
    }

    async fn list_after(
        &self,
        owner: Option<&str>,
        after: Option<&ListPosition>,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        let after = after.map_or((-1, String::new()), |a| (ms(a.created_at_ms), a.task_id.clone()));
        let page = Page { list_owner: super::list_owner(owner), after, limit: super::limit(limit) };
        self.engine().list_after(self.sql(), page, self.now_ms()).await
    }
}

/// Per-task write queues inside one process: writers of the same task take
/// turns (by a hash of its id), so they do not all read the same version and
/// then collide on the compare-and-swap. Writers in other processes are still
/// kept apart by the compare-and-swap itself.
struct Stripes(Box<[tokio::sync::Mutex<()>]>);

impl Stripes {
    fn new(n: usize) -> Self {
        Self((0..n.max(1)).map(|_| tokio::sync::Mutex::new(())).collect())
    }

    async fn lock(&self, task_id: &str) -> tokio::sync::MutexGuard<'_, ()> {
        use std::hash::{BuildHasher, BuildHasherDefault};
        let h = BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default().hash_one(task_id);
        self.0[(h % self.0.len() as u64) as usize].lock().await
    }
}
