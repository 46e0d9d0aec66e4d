//! `PostgresStore`: tasks in PostgreSQL, shared by every node of a service.

use crate::common::{self, CLEANUP_BATCH, Columns, LIVE_STATUSES, Migration, Rows, Stripes};
use crate::pool::{Checkout, ConnPool, Setup};
use crate::{OpenError, SCHEMA_VERSION};
use async_trait::async_trait;
use conduit_mcp::clock::Clock;
use conduit_mcp::ext::tasks::{
    Owner, StatusFields, StoreError, TaskRecord, TaskStatus, TaskStore, UpdateFn, apply_cancel,
};
use futures_util::future::BoxFuture;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgRow};
use sqlx::{Connection, Postgres, Row};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

const ENGINE: &str = "postgres";

const MIGRATIONS: &[Migration] = &[Migration {
    version: 1,
    description: "conduit_tasks and conduit_task_count",
    sql: include_str!("../migrations/postgres/0001_conduit_tasks.sql"),
}];

/// The advisory lock key under which nodes migrate one at a time ("conduit!").
const MIGRATION_LOCK: i64 = 0x636f_6e64_7569_7421;

const SELECT_ROW: &str = "SELECT version, lease_node, lease_expires_ms, doc::text FROM conduit_tasks";

/// How to connect a [`PostgresStore`]: the URL, and the few knobs worth turning.
///
/// ```no_run
/// # async fn run() -> Result<(), conduit_mcp_sql::OpenError> {
/// use conduit_mcp::clock::SystemClock;
/// use conduit_mcp_sql::PostgresOptions;
/// use std::sync::Arc;
///
/// let store = PostgresOptions::new("postgres://app@db.internal/app")
///     .schema("mcp")                 // keep the tables out of `public`
///     .max_connections(16)
///     .application_name("mcp-node-a")
///     .connect(Arc::new(SystemClock))
///     .await?;
/// # let _ = store; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct PostgresOptions {
    url: String,
    schema: Option<String>,
    max_connections: u32,
    connect_timeout: Duration,
    application_name: Option<String>,
}

impl PostgresOptions {
    /// Options for a `postgres://` URL (any form `libpq` accepts as a URL).
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            schema: None,
            max_connections: 10,
            connect_timeout: Duration::from_secs(10),
            application_name: None,
        }
    }

    /// Keeps the tables in this schema (created if missing) instead of the
    /// connection's default (`public`): every pooled connection sets its
    /// `search_path` to it.
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = Some(schema.into());
        self
    }

    /// The most connections the pool opens (default 10; at least 1).
    pub fn max_connections(mut self, n: u32) -> Self {
        self.max_connections = n.max(1);
        self
    }

    /// How long an operation waits to (re)connect before it fails with
    /// [`StoreError::Backend`] (default 10 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The `application_name` the connections report (`pg_stat_activity`).
    pub fn application_name(mut self, name: impl Into<String>) -> Self {
        self.application_name = Some(name.into());
        self
    }

    /// Connects, creates or upgrades the schema (one node at a time, under an
    /// advisory lock), and checks it.
    ///
    /// Refused with [`OpenError::ForeignSchema`] when the schema has a
    /// `conduit_tasks` table this crate did not create.
    pub async fn connect(self, clock: Arc<dyn Clock>) -> Result<PostgresStore, OpenError> {
        let mut opts = PgConnectOptions::from_str(&self.url)
            .map_err(|e| OpenError::InvalidAddress { address: redact(&self.url), detail: e.to_string() })?;
        if let Some(name) = &self.application_name {
            opts = opts.application_name(name);
        }
        let search_path = self.schema.as_deref().map(|s| format!("SET search_path TO {}", quote_ident(s)));
        let setup = search_path.map(|sql| -> Setup<PgConnection> {
            let sql: Arc<str> = sql.into();
            Box::new(move |conn| run_setup(conn, sql.clone()))
        });
        let pool = ConnPool::new(opts, self.max_connections, self.connect_timeout, setup, false);
        let prepared = async {
            let mut c =
                pool.get().await.map_err(|e| OpenError::Database(format!("postgres `{}`: {e}", redact(&self.url))))?;
            let r = prepare(c.conn(), self.schema.as_deref()).await;
            if r.is_ok() {
                c.release();
            }
            r
        }
        .await;
        if let Err(e) = prepared {
            pool.close().await;
            return Err(e);
        }
        Ok(PostgresStore {
            inner: Arc::new(Inner {
                pool,
                stripes: Stripes::new(1024),
                clock,
                retries: self.max_connections as usize + 1,
                schema: self.schema,
            }),
        })
    }
}

/// Runs `sql` (a `SET`) on a new connection.
fn run_setup(conn: &mut PgConnection, sql: Arc<str>) -> BoxFuture<'_, Result<(), sqlx::Error>> {
    Box::pin(async move { sqlx::Executor::execute(conn, &*sql).await.map(|_| ()) })
}

/// `"name"`, with embedded quotes doubled.
fn quote_ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// The URL without its password, for messages.
fn redact(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else { return url.to_owned() };
    let rest = &url[scheme_end + 3..];
    let Some(at) = rest.find('@') else { return url.to_owned() };
    match rest[..at].find(':') {
        Some(colon) => format!("{}{}:***{}", &url[..scheme_end + 3], &rest[..colon], &rest[at..]),
        None => url.to_owned(),
    }
}

async fn prepare(conn: &mut PgConnection, schema: Option<&str>) -> Result<(), OpenError> {
    let db = |e: sqlx::Error| OpenError::Database(format!("postgres: {e}"));
    let mut tx = conn.begin().await.map_err(db)?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)").bind(MIGRATION_LOCK).execute(&mut *tx).await.map_err(db)?;
    if let Some(s) = schema {
        sqlx::raw_sql(&format!("CREATE SCHEMA IF NOT EXISTS {}", quote_ident(s)))
            .execute(&mut *tx)
            .await
            .map_err(db)?;
    }
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT table_name::text FROM information_schema.tables WHERE table_schema = current_schema() \
         AND table_name IN ('conduit_tasks', 'conduit_task_count', 'conduit_schema_migrations')",
    )
    .fetch_all(&mut *tx)
    .await
    .map_err(db)?;
    let has = |t: &str| tables.iter().any(|n| n == t);
    if has("conduit_tasks") {
        let columns: Vec<String> = sqlx::query_scalar(
            "SELECT column_name::text FROM information_schema.columns \
             WHERE table_schema = current_schema() AND table_name = 'conduit_tasks'",
        )
        .fetch_all(&mut *tx)
        .await
        .map_err(db)?;
        common::check_task_columns(&columns)?;
        if !has("conduit_schema_migrations") {
            return Err(OpenError::ForeignSchema {
                table: "conduit_tasks".into(),
                detail: "it was not created by conduit-mcp-sql (there is no conduit_schema_migrations table)".into(),
            });
        }
    }
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS conduit_schema_migrations (\
         version BIGINT NOT NULL PRIMARY KEY, description TEXT NOT NULL, applied_at_ms BIGINT NOT NULL)",
    )
    .execute(&mut *tx)
    .await
    .map_err(db)?;
    let applied: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(version), 0)::bigint FROM conduit_schema_migrations")
        .fetch_one(&mut *tx)
        .await
        .map_err(db)?;
    if applied > SCHEMA_VERSION {
        return Err(OpenError::NewerSchema { found: applied, supported: SCHEMA_VERSION });
    }
    if applied == 0 && has("conduit_tasks") {
        return Err(OpenError::ForeignSchema {
            table: "conduit_tasks".into(),
            detail: "it was not created by conduit-mcp-sql (no migration is recorded)".into(),
        });
    }
    for m in MIGRATIONS.iter().filter(|m| m.version > applied) {
        sqlx::raw_sql(m.sql).execute(&mut *tx).await.map_err(|e| {
            OpenError::Database(format!("postgres: migration {} ({}) failed: {e}", m.version, m.description))
        })?;
        sqlx::query("INSERT INTO conduit_schema_migrations (version, description, applied_at_ms) VALUES ($1, $2, $3)")
            .bind(m.version)
            .bind(m.description)
            .bind(common::wall_clock_ms())
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        tracing::info!(version = m.version, "applied task store migration");
    }
    tx.commit().await.map_err(db)
}

/// Tasks in PostgreSQL: every node of a service on one database sees the
/// same tasks, so a `tasks/get` can land on any of them.
///
/// A pool of connections; every write is a compare-and-swap on `version`,
/// `create` is one statement that also claims a slot under the row cap
/// (a one-row counter whose row lock orders concurrent creates, on every
/// node, until each commits). Cheap to clone (the clones share the pool).
///
/// When the database drops connections (a restart, `pg_terminate_backend`,
/// a proxy timing out idle sessions), a read retries on a fresh connection;
/// a write fails with [`StoreError::Backend`] — whether it landed is then
/// unknown, and nothing acknowledged earlier is affected — and the next
/// operation reconnects.
#[derive(Debug, Clone)]
pub struct PostgresStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    pool: ConnPool<PgConnection>,
    stripes: Stripes,
    clock: Arc<dyn Clock>,
    /// How many times a read is retried on a broken connection: enough to
    /// drain every dead connection the pool may hold, plus one.
    retries: usize,
    schema: Option<String>,
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
        self.inner.schema.as_deref()
    }

    /// Closes every connection; later operations fail with [`StoreError::Backend`].
    pub async fn close(&self) {
        self.inner.pool.close().await;
    }

    async fn conn(&self) -> Result<Checkout<'_, PgConnection>, StoreError> {
        self.inner.pool.get().await.map_err(|e| backend("connect", e))
    }

    /// Runs an idempotent read, again on a fresh connection when the one it
    /// got turns out to be dead (the database restarted, or an administrator
    /// ended the session).
    async fn read_rows<'q>(
        &self,
        what: &str,
        sql: &'q str,
        bind: impl Fn(PgQuery<'q>) -> PgQuery<'q>,
    ) -> Result<Vec<PgRow>, StoreError> {
        let mut attempt = 0;
        loop {
            // A failure to connect is not retried: the database is away.
            let mut c = self.conn().await?;
            let rows = bind(sqlx::query(sql)).fetch_all(c.conn()).await;
            let result = c.finish(rows, is_connection_error);
            match result {
                Ok(rows) => return Ok(rows),
                Err(e) if attempt < self.inner.retries && is_connection_error(&e) => {
                    tracing::debug!(error = %e, "postgres read on a broken connection; retrying");
                    attempt += 1;
                }
                Err(e) => return Err(backend(what, e)),
            }
        }
    }

    async fn write(&self, what: &str, query: PgQuery<'_>) -> Result<u64, StoreError> {
        let mut c = self.conn().await?;
        let done = query.execute(c.conn()).await.map(|r| r.rows_affected());
        c.finish(done, is_connection_error).map_err(|e| backend(what, e))
    }
}

type PgQuery<'q> = sqlx::query::Query<'q, Postgres, sqlx::postgres::PgArguments>;

fn backend(what: &str, e: sqlx::Error) -> StoreError {
    StoreError::Backend(format!("postgres: cannot {what}: {e}"))
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

/// Binds a row's nine columns after the id, in table order (`owner` … `doc`).
fn bind_columns(q: PgQuery<'_>, c: Columns) -> PgQuery<'_> {
    q.bind(c.owner)
        .bind(c.status)
        .bind(c.version)
        .bind(c.created_at_ms)
        .bind(c.expires_at_ms)
        .bind(c.terminal_at_ms)
        .bind(c.lease_node)
        .bind(c.lease_expires_ms)
        .bind(c.doc)
}

fn decode_row(row: &PgRow) -> Result<TaskRecord, StoreError> {
    let get = |e: sqlx::Error| backend("decode a task row", e);
    let version: i64 = row.try_get(0).map_err(get)?;
    let lease_node: Option<String> = row.try_get(1).map_err(get)?;
    let lease_expires: Option<i64> = row.try_get(2).map_err(get)?;
    let doc: &str = row.try_get(3).map_err(get)?;
    common::decode(ENGINE, version, lease_node, lease_expires, doc)
}

#[async_trait]
impl Rows for PostgresStore {
    async fn read(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        let rows = self
            .read_rows(
                "read a task",
                "SELECT version, lease_node, lease_expires_ms, doc::text FROM conduit_tasks WHERE task_id = $1",
                |q| q.bind(task_id.to_owned()),
            )
            .await?;
        rows.first().map(decode_row).transpose()
    }

    async fn swap(&self, next: &TaskRecord, expected: u64) -> Result<bool, StoreError> {
        let c = Columns::of(next)?;
        let q = bind_columns(
            sqlx::query(
                "UPDATE conduit_tasks SET owner = $1, status = $2, version = $3, created_at_ms = $4, \
             expires_at_ms = $5, terminal_at_ms = $6, lease_node = $7, lease_expires_ms = $8, doc = $9::json \
             WHERE task_id = $10 AND version = $11",
            ),
            c,
        )
        .bind(next.task_id.clone())
        .bind(common::ms(expected));
        Ok(self.write("write a task", q).await? == 1)
    }
}

#[async_trait]
impl TaskStore for PostgresStore {
    fn name(&self) -> &'static str {
        ENGINE
    }

    async fn create(&self, mut record: TaskRecord, max_rows: Option<usize>) -> Result<(), StoreError> {
        record.version = 1;
        let c = Columns::of(&record)?;
        // One statement, one implicit transaction: claim a slot under the cap
        // (the counter row's lock orders concurrent creates), then insert. A
        // duplicate id aborts the statement, so the slot is given back.
        let q = sqlx::query(
            "WITH slot AS (UPDATE conduit_task_count SET n = n + 1 \
                           WHERE id = 1 AND ($1::bigint IS NULL OR n < $1::bigint) RETURNING 1) \
             INSERT INTO conduit_tasks (task_id, owner, status, version, created_at_ms, expires_at_ms, \
                                        terminal_at_ms, lease_node, lease_expires_ms, doc) \
             SELECT $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::json FROM slot",
        )
        .bind(max_rows.map(common::limit))
        .bind(record.task_id.clone());
        let q = bind_columns(q, c);
        let mut conn = self.conn().await?;
        let done = q.execute(conn.conn()).await;
        match conn.finish(done, is_connection_error) {
            Ok(r) if r.rows_affected() == 1 => Ok(()),
            Ok(_) => Err(StoreError::TaskLimitReached),
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => Err(StoreError::Duplicate),
            Err(e) => Err(backend("insert a task", e)),
        }
    }

    async fn get(&self, task_id: &str, owner: Owner<'_>) -> Result<TaskRecord, StoreError> {
        let now = self.inner.clock.now_ms();
        self.read(task_id).await?.filter(|r| owner.allows(r) && !r.is_expired(now)).ok_or(StoreError::NotFound)
    }

    async fn update(&self, task_id: &str, owner: Owner<'_>, f: UpdateFn<'_>) -> Result<TaskRecord, StoreError> {
        common::modify(self, &self.inner.stripes, &*self.inner.clock, task_id, owner, |r, _| f(r).map(Some)).await
    }

    async fn cancel(
        &self,
        task_id: &str,
        owner: Owner<'_>,
        status_message: Option<&str>,
    ) -> Result<TaskRecord, StoreError> {
        common::modify(self, &self.inner.stripes, &*self.inner.clock, task_id, owner, |r, now| {
            Ok(apply_cancel(r, status_message, now))
        })
        .await
    }

    async fn put_status(
        &self,
        task_id: &str,
        status: TaskStatus,
        fields: StatusFields,
    ) -> Result<TaskRecord, StoreError> {
        common::modify(
            self,
            &self.inner.stripes,
            &*self.inner.clock,
            task_id,
            Owner::Any,
            common::status_change(status, &fields),
        )
        .await
    }

    async fn cleanup(&self, terminal_ttl_ms: u64) -> Result<usize, StoreError> {
        let now = self.inner.clock.now_ms();
        let cutoff = now.saturating_sub(terminal_ttl_ms);
        // Each batch deletes and lowers the counter in one statement; rows
        // another node's janitor deleted first are simply not counted here.
        let sweeps = [("expires_at_ms < $1", now), ("expires_at_ms IS NULL AND terminal_at_ms < $1", cutoff)];
        let mut removed = 0usize;
        for (condition, bound) in sweeps {
            let sql = format!(
                "WITH gone AS (DELETE FROM conduit_tasks WHERE {condition} AND task_id = ANY(ARRAY(\
                     SELECT task_id FROM conduit_tasks WHERE {condition} LIMIT $2)) RETURNING 1), \
                      k AS (SELECT count(*) AS k FROM gone) \
                 UPDATE conduit_task_count SET n = GREATEST(n - (SELECT k FROM k), 0) WHERE id = 1 \
                 RETURNING (SELECT k FROM k)"
            );
            loop {
                let gone: i64 = {
                    let mut c = self.conn().await?;
                    let q = sqlx::query_scalar(&sql).bind(common::ms(bound)).bind(CLEANUP_BATCH);
                    let gone = q.fetch_one(c.conn()).await;
                    c.finish(gone, is_connection_error).map_err(|e| backend("delete expired tasks", e))?
                };
                removed += usize::try_from(gone).unwrap_or(0);
                if gone < CLEANUP_BATCH {
                    break;
                }
            }
        }
        Ok(removed)
    }

    async fn renew_leases(&self, node: &str, until_ms: u64) -> Result<usize, StoreError> {
        // The version moves too, so a compare-and-swap that read the old
        // lease (a recovery that judged it lapsed) fails and looks again.
        let sql = format!(
            "UPDATE conduit_tasks SET lease_expires_ms = GREATEST(lease_expires_ms, $1), version = version + 1 \
             WHERE lease_node = $2 AND status IN {LIVE_STATUSES}"
        );
        let q = sqlx::query(&sql).bind(common::ms(until_ms)).bind(node.to_owned());
        let n = self.write("renew leases", q).await?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    async fn lapsed_leases(&self, limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
        let now = common::ms(self.inner.clock.now_ms());
        let sql = format!(
            "{SELECT_ROW} WHERE lease_expires_ms < $1 AND status IN {LIVE_STATUSES} \
             AND (expires_at_ms IS NULL OR expires_at_ms >= $1) ORDER BY lease_expires_ms LIMIT $2"
        );
        let rows = self.read_rows("list lapsed leases", &sql, |q| q.bind(now).bind(common::limit(limit))).await?;
        rows.iter().map(decode_row).collect()
    }

    async fn leased_to(&self, node: &str, limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
        let now = common::ms(self.inner.clock.now_ms());
        let sql = format!(
            "{SELECT_ROW} WHERE lease_node = $1 AND status IN {LIVE_STATUSES} \
             AND (expires_at_ms IS NULL OR expires_at_ms >= $2) LIMIT $3"
        );
        let rows = self
            .read_rows("list a node's leases", &sql, |q| q.bind(node.to_owned()).bind(now).bind(common::limit(limit)))
            .await?;
        rows.iter().map(decode_row).collect()
    }
}
