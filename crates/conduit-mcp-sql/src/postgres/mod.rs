//! `PostgresStore`: tasks in PostgreSQL, shared by every node of a service.
//!
//! `options` says which database and how; `open` connects and migrates it;
//! this module is the store and its [`TaskStore`] implementation.

mod changes;
#[cfg(feature = "oauth")]
mod dpop_replay;
mod events_key;
mod group_commit;
mod group_read;
mod legacy_sessions;
mod legacy_store;
mod node;
mod open;
mod options;
mod shards;
mod table_sql;
mod terminal;
mod webhooks;

#[cfg(feature = "oauth")]
pub use dpop_replay::PostgresDpopReplay;
pub use legacy_sessions::PostgresSessionStore;
pub use legacy_store::PostgresLegacyStore;
pub use options::PostgresOptions;
pub use webhooks::PostgresWebhookStore;

use crate::common::{
    self, CLEANUP_BATCH, Engine, GroupCommit, Hooked, Page, RowWrite, SqlStore, Swap, Sweep, TableKind, run_hooked,
};
use crate::error::OpenError;
use crate::pool::{Checkout, ConnPool, bounded, is_timeout};
use async_trait::async_trait;
use conduit_mcp::clock::Clock;
use conduit_mcp::ext::tasks::{CreateCaps, TaskRecord, TerminalBound};
use conduit_mcp::task::{StoreError, TransactionHook};
use sqlx::postgres::{PgConnection, PgRow};
use sqlx::{Postgres, SqlSafeStr};
use std::sync::Arc;
use table_sql::TableSql;

const ENGINE: &str = "postgres";

/// Batches of creates one node writes at once: they take room from
/// different shards of the row counter, so they commit side by side. Two:
/// on a machine whose CPUs PostgreSQL shares, more flushers only make smaller
/// batches (more commits, more CPU per create; measured in docs/benchmarks.md).
const FLUSHERS: usize = 2;

/// Task ids per lease-renewal statement.
const RENEW_CHUNK: usize = 1000;

/// Tasks in PostgreSQL: every node of a service on one database sees the
/// same tasks, so a `tasks/get` can land on any of them.
///
/// A pool of connections; every write is a compare-and-swap on `version`.
/// Creates are committed in groups: those that queue up behind the batches
/// in flight go together in one statement (one round trip, one commit), which
/// takes their slots under the row cap from one shard of a sharded counter
/// (so batches of every node commit side by side; the cap stays exact across
/// nodes) and inserts them; each create still gets its own answer (a
/// duplicate id fails alone). Cheap to clone
/// (the clones share the pool).
///
/// When the database drops connections (a restart, `pg_terminate_backend`,
/// a proxy timing out idle sessions), a read and a create retry on a fresh
/// connection (a create that had landed is found by its id and answered as
/// written); any other write fails with [`StoreError::Backend`] — whether it
/// landed is then unknown, and nothing acknowledged earlier is affected — and
/// the next operation reconnects.
pub type PostgresStore = SqlStore<PgEngine>;

/// The PostgreSQL engine of a [`PostgresStore`]: its pool and statements.
#[derive(Debug)]
pub struct PgEngine {
    pool: Arc<ConnPool<PgConnection>>,
    commits: Arc<GroupCommit<group_commit::Writer>>,
    reads: Arc<group_read::GroupRead>,
    /// How many times a read is retried on a broken connection: enough to
    /// drain every dead connection the pool may hold, plus one.
    retries: usize,
    schema: Option<String>,
    /// The session holding this process's node id (see [`TaskStore::claim_node`](conduit_mcp::ext::tasks::TaskStore::claim_node)).
    node: tokio::sync::Mutex<Option<node::Hold>>,
}

impl PgEngine {
    /// The engine over its pool; a read is retried up to `retries` times on
    /// a broken connection.
    fn new(pool: ConnPool<PgConnection>, retries: usize, schema: Option<String>) -> Self {
        let pool = Arc::new(pool);
        let commits = Arc::new(GroupCommit::new(group_commit::Writer::new(pool.clone(), retries), FLUSHERS));
        let reads = Arc::new(group_read::GroupRead::new(pool.clone(), retries));
        Self { pool, commits, reads, retries, schema, node: Default::default() }
    }
}

impl PostgresStore {
    /// Connects with a pool of default size (see [`PostgresOptions`]); time
    /// comes from `clock`.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), conduit_mcp_sql::OpenError> {
    /// use conduit_mcp::clock::SystemClock;
    /// use std::sync::Arc;
    /// let url = "postgres://postgres@127.0.0.1:5432/app";
    /// let store = conduit_mcp_sql::PostgresStore::connect(url, Arc::new(SystemClock)).await?;
    /// # let _ = store; Ok(()) }
    /// ```
    pub async fn connect(url: &str, clock: Arc<dyn Clock>) -> Result<Self, OpenError> {
        PostgresOptions::new(url).connect(clock).await
    }

    /// Connects with the tables in `schema` (created if missing), so several
    /// stores — tests, tenants — can share one database.
    pub async fn with_schema(url: &str, schema: &str, clock: Arc<dyn Clock>) -> Result<Self, OpenError> {
        PostgresOptions::new(url).schema(schema).connect(clock).await
    }

    /// The schema given to [`PostgresOptions::schema`], if any.
    pub fn schema(&self) -> Option<&str> {
        self.engine().schema.as_deref()
    }

    /// Closes every connection; later operations fail with [`StoreError::Backend`].
    pub async fn close(&self) {
        self.engine().release_node().await;
        self.engine().pool.close().await;
    }
}

impl PgEngine {
    async fn conn(&self) -> Result<Checkout<'_, PgConnection>, StoreError> {
        self.pool.get().await.map_err(|e| backend("connect", e))
    }

    /// Runs an idempotent read (see [`read_rows`]).
    async fn read_rows<'q>(
        &self,
        what: &str,
        sql: impl SqlSafeStr,
        bind: impl Fn(PgQuery<'q>) -> PgQuery<'q>,
    ) -> Result<Vec<PgRow>, StoreError> {
        read_rows(&self.pool, self.retries, what, sql, bind).await
    }

    async fn write(&self, what: &str, query: PgQuery<'_>) -> Result<u64, StoreError> {
        let mut c = self.conn().await?;
        let done = bounded(c.deadline(), query.execute(c.conn())).await.map(|r| r.rows_affected());
        c.finish(done, is_connection_error).map_err(|e| backend(what, e))
    }
}

type PgQuery<'q> = common::Query<'q, Postgres>;

#[async_trait]
impl RowWrite<PgConnection> for Swap<'_> {
    async fn write(&self, conn: &mut PgConnection) -> Hooked<bool> {
        Ok(Ok(self.query::<Postgres>().execute(conn).await?.rows_affected() == 1))
    }
}

/// Runs an idempotent read on a connection of `pool`, again on a fresh
/// connection (up to `retries` times) when the one it got turns out to be
/// dead (the database restarted, or an administrator ended the session).
async fn read_rows<'q>(
    pool: &ConnPool<PgConnection>,
    retries: usize,
    what: &str,
    sql: impl SqlSafeStr,
    bind: impl Fn(PgQuery<'q>) -> PgQuery<'q>,
) -> Result<Vec<PgRow>, StoreError> {
    let sql = sql.into_sql_str();
    let mut attempt = 0;
    loop {
        // A failure to connect is not retried: the database is away.
        let mut c = pool.get().await.map_err(|e| backend("connect", e))?;
        let rows = bounded(c.deadline(), bind(sqlx::query(sql.clone())).fetch_all(c.conn())).await;
        match c.finish(rows, is_connection_error) {
            Ok(rows) => return Ok(rows),
            // A read that ran out of time is not retried either: the
            // database is not answering, and the caller's time is spent.
            Err(e) if attempt < retries && is_connection_error(&e) && !is_timeout(&e) => {
                tracing::debug!(error = %e, "postgres read on a broken connection; retrying");
                attempt += 1;
            }
            Err(e) => return Err(backend(what, e)),
        }
    }
}

fn backend(what: &str, e: sqlx::Error) -> StoreError {
    common::backend(ENGINE, what, e)
}

/// Whether the error means the connection, not the statement, failed.
fn is_connection_error(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_) | sqlx::Error::Protocol(_) | sqlx::Error::WorkerCrashed => true,
        // 08xxx: connection exception; 57P01..57P03: the server is shutting
        // down or an administrator ended the session.
        sqlx::Error::Database(db) => db.code().is_some_and(|c| c.starts_with("08") || c.starts_with("57P0")),
        _ => false,
    }
}

fn decode_row(row: &PgRow) -> Result<TaskRecord, StoreError> {
    common::decode_row(ENGINE, row)
}

#[async_trait]
impl Engine for PgEngine {
    const NAME: &'static str = ENGINE;

    type Sql = TableSql;

    fn change_feed(engine: &Arc<Self>) -> Option<Arc<dyn conduit_mcp::ext::tasks::TaskChangeFeed>> {
        Some(Arc::new(changes::PgChanges::new(engine.clone())))
    }

    fn sql(kind: TableKind) -> &'static TableSql {
        table_sql::of(kind)
    }

    fn store_name(kind: TableKind) -> &'static str {
        match kind {
            TableKind::Tasks => ENGINE,
            TableKind::Legacy => "postgres-legacy",
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

    /// The extension's tasks are read in groups (`group_read`); the legacy ones one by one.
    async fn read(&self, sql: &'static TableSql, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        match sql.kind {
            TableKind::Tasks => self.reads.read(task_id).await,
            TableKind::Legacy => {
                let rows = self.read_rows("read a task", sql.read.as_str(), |q| q.bind(task_id.to_owned())).await?;
                rows.first().map(decode_row).transpose()
            }
        }
    }

    /// With `hook`, the write and the hook share one transaction.
    async fn swap(
        &self,
        sql: &'static TableSql,
        next: &TaskRecord,
        expected: u64,
        hook: Option<&dyn TransactionHook>,
    ) -> Result<bool, StoreError> {
        let swap = Swap::new(sql.swap.as_str(), next, expected)?;
        match hook {
            None => Ok(self.write("write a task", swap.query()).await? == 1),
            Some(hook) => {
                run_hooked(self.conn().await?, "BEGIN", ENGINE, swap.record(), hook, &swap, is_connection_error)
                    .await
                    .map_err(|e| backend("write a task", e))?
            }
        }
    }

    /// Rows another node's janitor deleted first are simply not counted here.
    async fn delete_batch(&self, sql: &'static TableSql, sweep: Sweep, bound: i64) -> Result<u64, StoreError> {
        let q = sqlx::query_as(sql.delete(sweep)).bind(bound).bind(CLEANUP_BATCH);
        self.delete_rows(sql.sharded, "delete expired tasks", q).await
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
        let q = sqlx::query(sql.renew.as_str()).bind(common::ms(until_ms)).bind(node.to_owned());
        let n = self.write("renew leases", q).await?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    async fn renew_leases_of(
        &self,
        sql: &'static TableSql,
        node: &str,
        task_ids: &[String],
        until_ms: u64,
    ) -> Result<usize, StoreError> {
        let mut renewed = 0;
        for chunk in task_ids.chunks(RENEW_CHUNK) {
            let q = sqlx::query(sql.renew_of.as_str()).bind(common::ms(until_ms)).bind(node.to_owned());
            renewed += self.write("renew leases", q.bind(chunk.to_vec())).await?;
        }
        Ok(usize::try_from(renewed).unwrap_or(usize::MAX))
    }

    async fn claim_node(&self, node: &str) -> Result<(), StoreError> {
        self.hold_node(node).await
    }

    async fn lapsed_leases(
        &self,
        sql: &'static TableSql,
        now_ms: u64,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        let now = common::ms(now_ms);
        let rows = self
            .read_rows("list lapsed leases", sql.lapsed.as_str(), |q| q.bind(now).bind(common::limit(limit)))
            .await?;
        rows.iter().map(decode_row).collect()
    }

    async fn leased_to(
        &self,
        sql: &'static TableSql,
        node: &str,
        now_ms: u64,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        let now = common::ms(now_ms);
        let rows = self
            .read_rows("list a node's leases", sql.leased_to.as_str(), |q| {
                q.bind(node.to_owned()).bind(now).bind(common::limit(limit))
            })
            .await?;
        rows.iter().map(decode_row).collect()
    }

    async fn list_after(&self, sql: &'static TableSql, page: Page, now_ms: u64) -> Result<Vec<TaskRecord>, StoreError> {
        let now = common::ms(now_ms);
        let rows = self
            .read_rows("list legacy tasks", sql.list_after.as_str(), |q| {
                q.bind(page.list_owner.clone()).bind(page.after.0).bind(page.after.1.clone()).bind(now).bind(page.limit)
            })
            .await?;
        rows.iter().map(decode_row).collect()
    }
}
