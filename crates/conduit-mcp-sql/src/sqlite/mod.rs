//! `SqliteStore`: tasks in one SQLite file (WAL), for one node that must
//! survive restarts.
//!
//! `options` says which file and how; `open` connects, migrates and
//! checks it; `group_commit` batches creates; this module is the store and
//! its [`TaskStore`] implementation.

mod changes;
#[cfg(feature = "oauth")]
mod dpop_replay;
mod events_key;
mod group_commit;
mod legacy_sessions;
mod legacy_store;
mod node;
mod open;
mod options;
mod table_sql;
mod terminal;
mod webhooks;

#[cfg(feature = "oauth")]
pub use dpop_replay::SqliteDpopReplay;
pub use legacy_sessions::SqliteSessionStore;
pub use legacy_store::SqliteLegacyStore;
pub use options::SqliteOptions;
pub use webhooks::SqliteWebhookStore;

use crate::common::{
    self, CLEANUP_BATCH, Engine, GroupCommit, Hooked, Page, RowWrite, SqlStore, Swap, Sweep, TableKind, run_hooked,
};
use crate::error::OpenError;
use crate::pool::{Checkout, ConnPool, bounded};
use async_trait::async_trait;
use conduit_mcp::clock::Clock;
use conduit_mcp::ext::tasks::{CreateCaps, TaskRecord, TerminalBound};
use conduit_mcp::task::{StoreError, TransactionHook};
use sqlx::sqlite::{SqliteConnection, SqliteRow};
use sqlx::{SqlSafeStr, Sqlite};
use std::sync::Arc;
use table_sql::TableSql;

const ENGINE: &str = "sqlite";

/// Tasks in an SQLite database: one file in WAL mode, or `:memory:` for tests.
///
/// Reads run in parallel on a few connections; writes go through one
/// connection in order, each a compare-and-swap on `version`. `create`
/// commits before it returns; creates that queue up behind the writer are
/// committed together, in one transaction (each still checked against its
/// own cap, and failing alone on a duplicate id). Cheap to clone (the clones share the pools).
///
/// For several nodes, use [`PostgresStore`](crate::PostgresStore): an SQLite
/// file belongs to one machine.
pub type SqliteStore = SqlStore<SqliteEngine>;

/// The SQLite engine of a [`SqliteStore`]: its writer and reader pools.
#[derive(Debug)]
pub struct SqliteEngine {
    writer: Arc<ConnPool<SqliteConnection>>,
    reader: Arc<ConnPool<SqliteConnection>>,
    path: String,
    commits: Arc<GroupCommit<group_commit::Writer>>,
    /// The lock file holding this process's node id (see [`TaskStore::claim_node`](conduit_mcp::ext::tasks::TaskStore::claim_node)).
    node: std::sync::Mutex<Option<node::Hold>>,
}

impl SqliteEngine {
    /// The engine over its two pools (the same pool twice for `:memory:`).
    fn new(writer: Arc<ConnPool<SqliteConnection>>, reader: Arc<ConnPool<SqliteConnection>>, path: String) -> Self {
        let commits = Arc::new(GroupCommit::new(group_commit::Writer(writer.clone()), 1));
        Self { writer, reader, path, commits, node: Default::default() }
    }
}

impl SqliteStore {
    /// Opens the store at a file path, a `sqlite:` URL, or `:memory:`, with
    /// default [`SqliteOptions`]; time comes from `clock`.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), conduit_mcp_sql::OpenError> {
    /// use conduit_mcp::clock::SystemClock;
    /// use std::sync::Arc;
    /// let store = conduit_mcp_sql::SqliteStore::open("tasks.db", Arc::new(SystemClock)).await?;
    /// # let _ = store; Ok(()) }
    /// ```
    pub async fn open(path_or_url: &str, clock: Arc<dyn Clock>) -> Result<Self, OpenError> {
        SqliteOptions::new(path_or_url).open(clock).await
    }

    /// The database file (`file:sqlx-in-memory-…` for `:memory:`).
    pub fn path(&self) -> &str {
        &self.engine().path
    }

    /// Closes every connection (checkpointing the WAL into the file); every
    /// later operation fails with [`StoreError::Backend`].
    pub async fn close(&self) {
        self.engine().release_node();
        self.engine().reader.close().await;
        self.engine().writer.close().await;
    }
}

impl SqliteEngine {
    async fn reader(&self) -> Result<Checkout<'_, SqliteConnection>, StoreError> {
        self.reader.get().await.map_err(|e| backend("open a connection", e))
    }

    async fn writer(&self) -> Result<Checkout<'_, SqliteConnection>, StoreError> {
        self.writer.get().await.map_err(|e| backend("open a connection", e))
    }

    async fn select<'q>(
        &self,
        sql: impl SqlSafeStr,
        bind: impl FnOnce(SqlQuery<'q>) -> SqlQuery<'q>,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        let mut c = self.reader().await?;
        let rows = bounded(c.deadline(), bind(sqlx::query(sql)).fetch_all(c.conn())).await;
        let rows = c.finish(rows, broken).map_err(|e| backend("read tasks", e))?;
        rows.iter().map(decode_row).collect()
    }

    /// Runs one write statement on the writer connection.
    async fn write(&self, what: &str, query: SqlQuery<'_>) -> Result<u64, StoreError> {
        let mut c = self.writer().await?;
        let done = bounded(c.deadline(), query.execute(c.conn())).await.map(|r| r.rows_affected());
        c.finish(done, broken).map_err(|e| backend(what, e))
    }
}

type SqlQuery<'q> = common::Query<'q, Sqlite>;

#[async_trait]
impl RowWrite<SqliteConnection> for Swap<'_> {
    async fn write(&self, conn: &mut SqliteConnection) -> Hooked<bool> {
        Ok(Ok(self.query::<Sqlite>().execute(conn).await?.rows_affected() == 1))
    }
}

/// Whether an error may have left the connection unusable (anything but an
/// error the database reported about the statement).
fn broken(e: &sqlx::Error) -> bool {
    !matches!(e, sqlx::Error::Database(_))
}

fn backend(what: &str, e: sqlx::Error) -> StoreError {
    common::backend(ENGINE, what, e)
}

fn decode_row(row: &SqliteRow) -> Result<TaskRecord, StoreError> {
    common::decode_row(ENGINE, row)
}

#[async_trait]
impl Engine for SqliteEngine {
    const NAME: &'static str = ENGINE;

    type Sql = TableSql;

    fn change_feed(engine: &Arc<Self>) -> Option<Arc<dyn conduit_mcp::ext::tasks::TaskChangeFeed>> {
        Some(Arc::new(changes::SqliteChanges::new(engine.clone())))
    }

    fn sql(kind: TableKind) -> &'static TableSql {
        table_sql::of(kind)
    }

    fn store_name(kind: TableKind) -> &'static str {
        match kind {
            TableKind::Tasks => ENGINE,
            TableKind::Legacy => "sqlite-legacy",
        }
    }

    async fn insert(&self, record: TaskRecord, caps: CreateCaps) -> Result<TaskRecord, StoreError> {
        self.commits.insert(record, caps).await
    }

    async fn insert_with(
        &self,
        record: TaskRecord,
        caps: CreateCaps,
        hook: &dyn TransactionHook,
    ) -> Result<TaskRecord, StoreError> {
        self.commits.insert_with(record, caps, hook).await
    }

    async fn insert_legacy(&self, record: TaskRecord, caps: CreateCaps) -> Result<TaskRecord, StoreError> {
        self.write_legacy(record, caps).await
    }

    async fn insert_legacy_with(
        &self,
        record: TaskRecord,
        caps: CreateCaps,
        hook: &dyn TransactionHook,
    ) -> Result<TaskRecord, StoreError> {
        self.write_legacy_with(record, caps, hook).await
    }

    async fn read(&self, sql: &'static TableSql, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        let mut c = self.reader().await?;
        let q = sqlx::query(sql.read.as_str()).bind(task_id);
        let row = bounded(c.deadline(), q.fetch_optional(c.conn())).await;
        let row = c.finish(row, broken).map_err(|e| backend("read a task", e))?;
        row.as_ref().map(decode_row).transpose()
    }

    /// Runs the compare-and-swap on the writer; with `hook`, the write and
    /// the hook share one `BEGIN IMMEDIATE` transaction.
    async fn swap(
        &self,
        sql: &'static TableSql,
        next: &TaskRecord,
        expected: u64,
        hook: Option<&dyn TransactionHook>,
    ) -> Result<bool, StoreError> {
        let swap = Swap::new(sql.swap.as_str(), next, expected)?.with_change_columns();
        match hook {
            None => Ok(self.write("write a task", swap.query()).await? == 1),
            Some(hook) => {
                run_hooked(self.writer().await?, "BEGIN IMMEDIATE", ENGINE, swap.record(), hook, &swap, broken)
                    .await
                    .map_err(|e| backend("write a task", e))?
            }
        }
    }

    async fn delete_batch(&self, sql: &'static TableSql, sweep: Sweep, bound: i64) -> Result<u64, StoreError> {
        // The delete trigger lowers the row counter in the same statement.
        self.write("delete expired tasks", sqlx::query(sql.delete(sweep)).bind(bound).bind(CLEANUP_BATCH)).await
    }

    async fn trim_terminal(
        &self,
        sql: &'static TableSql,
        owner: &str,
        bound: TerminalBound,
    ) -> Result<usize, StoreError> {
        self.trim_terminal_in(&sql.terminal, owner, bound).await
    }

    async fn evict_oldest_terminal(&self, sql: &'static TableSql, owner: &str) -> Result<bool, StoreError> {
        self.evict_oldest_terminal_in(&sql.terminal, owner).await
    }

    async fn renew_leases(&self, sql: &'static TableSql, node: &str, until_ms: u64) -> Result<usize, StoreError> {
        let q = sqlx::query(sql.renew.as_str()).bind(common::ms(until_ms)).bind(node);
        let done = self.write("renew leases", q).await?;
        Ok(usize::try_from(done).unwrap_or(usize::MAX))
    }

    async fn renew_leases_of(
        &self,
        sql: &'static TableSql,
        node: &str,
        task_ids: &[String],
        until_ms: u64,
    ) -> Result<usize, StoreError> {
        let mut renewed = 0;
        for chunk in task_ids.chunks(1000) {
            let ids = serde_json::to_string(chunk).map_err(|e| StoreError::backend("sqlite: encode task ids", e))?;
            let q = sqlx::query(sql.renew_of.as_str()).bind(common::ms(until_ms)).bind(node).bind(ids);
            renewed += self.write("renew leases", q).await?;
        }
        Ok(usize::try_from(renewed).unwrap_or(usize::MAX))
    }

    async fn claim_node(&self, node: &str) -> Result<(), StoreError> {
        self.hold_node(node)
    }

    async fn lapsed_leases(
        &self,
        sql: &'static TableSql,
        now_ms: u64,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        let now = common::ms(now_ms);
        self.select(sql.lapsed.as_str(), |q| q.bind(now).bind(common::limit(limit))).await
    }

    async fn leased_to(
        &self,
        sql: &'static TableSql,
        node: &str,
        now_ms: u64,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        let now = common::ms(now_ms);
        let node = node.to_owned();
        self.select(sql.leased_to.as_str(), move |q| q.bind(node).bind(now).bind(common::limit(limit))).await
    }

    async fn list_after(&self, sql: &'static TableSql, page: Page, now_ms: u64) -> Result<Vec<TaskRecord>, StoreError> {
        let Page { list_owner, after: (created, id), limit } = page;
        let now = common::ms(now_ms);
        self.select(sql.list_after.as_str(), move |q| q.bind(list_owner).bind(created).bind(id).bind(now).bind(limit))
            .await
    }
}
