//! `SqliteStore`: tasks in one SQLite file (WAL), for one node that must
//! survive restarts.

use crate::common::{self, CLEANUP_BATCH, Columns, LIVE_STATUSES, Migration, Rows, Stripes};
use crate::pool::{Checkout, ConnPool};
use crate::{OpenError, SCHEMA_VERSION};
use async_trait::async_trait;
use conduit_mcp::clock::Clock;
use conduit_mcp::ext::tasks::{
    Owner, StatusFields, StoreError, TaskRecord, TaskStatus, TaskStore, UpdateFn, apply_cancel,
};
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqliteRow, SqliteSynchronous};
use sqlx::{Connection, Row, Sqlite};
use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;

const ENGINE: &str = "sqlite";

const MIGRATIONS: &[Migration] = &[Migration {
    version: 1,
    description: "conduit_tasks and conduit_task_count",
    sql: include_str!("../migrations/sqlite/0001_conduit_tasks.sql"),
}];

const SELECT_ROW: &str = "SELECT version, lease_node, lease_expires_ms, doc FROM conduit_tasks";

// SQLite primary result codes (the low byte of an extended code).
const SQLITE_CORRUPT: i64 = 11;
const SQLITE_NOTADB: i64 = 26;

/// How to open a [`SqliteStore`]: the file, and the few knobs worth turning.
///
/// ```no_run
/// # async fn run() -> Result<(), conduit_mcp_sql::OpenError> {
/// use conduit_mcp::clock::SystemClock;
/// use conduit_mcp_sql::SqliteOptions;
/// use std::{sync::Arc, time::Duration};
///
/// let store = SqliteOptions::new("/var/lib/my-server/tasks.db")
///     .full_sync(true)                       // survive power loss, not just a crash
///     .busy_timeout(Duration::from_secs(10))
///     .open(Arc::new(SystemClock))
///     .await?;
/// # let _ = store; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SqliteOptions {
    target: String,
    readers: u32,
    busy_timeout: Duration,
    full_sync: bool,
    check_integrity: bool,
}

impl SqliteOptions {
    /// Options for a file path, a `sqlite:` URL (`sqlite://tasks.db?mode=rwc`),
    /// or `:memory:` (a private database that lives as long as the store: for tests).
    ///
    /// A missing file is created.
    pub fn new(path_or_url: impl Into<String>) -> Self {
        Self {
            target: path_or_url.into(),
            readers: 4,
            busy_timeout: Duration::from_secs(5),
            full_sync: false,
            check_integrity: true,
        }
    }

    /// Connections that serve reads in parallel (default 4; at least 1).
    /// Writes always go through one connection, in order. A `:memory:`
    /// database is one connection for everything, whatever this says.
    pub fn readers(mut self, readers: u32) -> Self {
        self.readers = readers.max(1);
        self
    }

    /// How long a statement waits for a lock held by another process on the
    /// same file before it fails with [`StoreError::Backend`] (default 5 s).
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    /// `synchronous = FULL`: every commit reaches the disk before it is
    /// acknowledged, so acknowledged tasks survive power loss. The default
    /// (`NORMAL`, in WAL mode) survives any crash of the process — the write
    /// is in the operating system's hands before `create` returns — but the
    /// last commits may roll back if the machine loses power.
    pub fn full_sync(mut self, on: bool) -> Self {
        self.full_sync = on;
        self
    }

    /// Whether `open` runs `PRAGMA quick_check` over the task table and its
    /// indexes (default on; it reads the whole table once).
    pub fn check_integrity(mut self, on: bool) -> Self {
        self.check_integrity = on;
        self
    }

    fn is_memory(&self) -> bool {
        let t = self.target.trim();
        t == ":memory:" || t == "sqlite::memory:" || t.contains("mode=memory")
    }

    fn connect_options(&self) -> Result<SqliteConnectOptions, OpenError> {
        let invalid =
            |e: sqlx::Error| OpenError::InvalidAddress { address: self.target.clone(), detail: e.to_string() };
        let base = if self.is_memory() {
            SqliteConnectOptions::from_str("sqlite::memory:").map_err(invalid)?
        } else if self.target.starts_with("sqlite:") {
            SqliteConnectOptions::from_str(&self.target).map_err(invalid)?
        } else if self.target.trim().is_empty() {
            return Err(OpenError::InvalidAddress { address: self.target.clone(), detail: "empty path".into() });
        } else {
            SqliteConnectOptions::new().filename(&self.target)
        };
        let sync = if self.full_sync { SqliteSynchronous::Full } else { SqliteSynchronous::Normal };
        // A 16 MiB page cache per connection (the default is 2 MiB): reads of a
        // working set of tens of thousands of tasks stay in memory.
        let opts = base
            .create_if_missing(true)
            .busy_timeout(self.busy_timeout)
            .synchronous(sync)
            .pragma("cache_size", "-16384");
        Ok(if self.is_memory() { opts } else { opts.journal_mode(SqliteJournalMode::Wal) })
    }

    /// Opens (creating or upgrading the schema) and checks the database.
    ///
    /// Refused with a clear [`OpenError`] when the file is not an SQLite
    /// database, is corrupted, or has a `conduit_tasks` table this crate did
    /// not create.
    pub async fn open(self, clock: Arc<dyn Clock>) -> Result<SqliteStore, OpenError> {
        let opts = self.connect_options()?;
        let path = opts.get_filename().display().to_string();
        let memory = self.is_memory();
        // One connection writes, in order: SQLite takes one writer at a time
        // anyway, and queueing here is fairer and faster than its busy-wait.
        // An in-memory database is one connection for everything (a second
        // connection would see another database), never closed before the store.
        let timeout = self.busy_timeout.max(Duration::from_secs(5));
        let writer = Arc::new(ConnPool::new(opts.clone(), 1, timeout, None, memory));
        let mut conn = writer.get().await.map_err(|e| classify_open_error(&path, e))?;
        let prepared = prepare(conn.conn(), &path, self.check_integrity).await;
        conn.release();
        if let Err(e) = prepared {
            writer.close().await;
            return Err(e);
        }
        let reader =
            if memory { writer.clone() } else { Arc::new(ConnPool::new(opts, self.readers, timeout, None, false)) };
        tracing::debug!(path = %path, memory, "sqlite task store open");
        let stripes = Stripes::new(1024);
        let creates = Mutex::new(Vec::new());
        let in_flight = AtomicUsize::new(0);
        Ok(SqliteStore { inner: Arc::new(Inner { writer, reader, stripes, clock, path, creates, in_flight }) })
    }
}

fn classify_open_error(path: &str, e: sqlx::Error) -> OpenError {
    if let sqlx::Error::Database(db) = &e {
        let primary = db.code().and_then(|c| c.parse::<i64>().ok()).map(|c| c & 0xff);
        match primary {
            Some(SQLITE_NOTADB) => {
                return OpenError::NotADatabase { path: path.into(), detail: db.message().into() };
            }
            Some(SQLITE_CORRUPT) => return OpenError::Corrupt { path: path.into(), detail: db.message().into() },
            _ => {}
        }
    }
    OpenError::Database(format!("sqlite `{path}`: {e}"))
}

/// Checks what is already in the file, then applies pending migrations, all
/// in one `BEGIN IMMEDIATE` transaction (so two processes opening the same
/// new file cannot both migrate it).
async fn prepare(conn: &mut SqliteConnection, path: &str, check_integrity: bool) -> Result<(), OpenError> {
    let classify = |e: sqlx::Error| classify_open_error(path, e);
    let mut tx = conn.begin_with("BEGIN IMMEDIATE").await.map_err(classify)?;
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'table' \
         AND name IN ('conduit_tasks', 'conduit_task_count', 'conduit_schema_migrations')",
    )
    .fetch_all(&mut *tx)
    .await
    .map_err(classify)?;
    let has = |t: &str| tables.iter().any(|n| n == t);
    if has("conduit_tasks") {
        let columns: Vec<String> = sqlx::query_scalar("SELECT name FROM pragma_table_info('conduit_tasks')")
            .fetch_all(&mut *tx)
            .await
            .map_err(classify)?;
        common::check_task_columns(&columns)?;
        if !has("conduit_schema_migrations") {
            return Err(OpenError::ForeignSchema {
                table: "conduit_tasks".into(),
                detail: "it was not created by conduit-mcp-sql (there is no conduit_schema_migrations table)".into(),
            });
        }
        if check_integrity {
            let report: Vec<String> =
                sqlx::query_scalar("PRAGMA quick_check(conduit_tasks)").fetch_all(&mut *tx).await.map_err(classify)?;
            if report.iter().any(|l| l != "ok") {
                return Err(OpenError::Corrupt { path: path.into(), detail: report.join("; ") });
            }
        }
    }
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS conduit_schema_migrations (\
         version INTEGER NOT NULL PRIMARY KEY, description TEXT NOT NULL, applied_at_ms INTEGER NOT NULL)",
    )
    .execute(&mut *tx)
    .await
    .map_err(classify)?;
    let applied: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(version), 0) FROM conduit_schema_migrations")
        .fetch_one(&mut *tx)
        .await
        .map_err(classify)?;
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
            OpenError::Database(format!("sqlite `{path}`: migration {} ({}) failed: {e}", m.version, m.description))
        })?;
        sqlx::query(
            "INSERT INTO conduit_schema_migrations (version, description, applied_at_ms) \
             VALUES (?1, ?2, ?3)",
        )
        .bind(m.version)
        .bind(m.description)
        .bind(common::wall_clock_ms())
        .execute(&mut *tx)
        .await
        .map_err(classify)?;
        tracing::info!(path = %path, version = m.version, "applied task store migration");
    }
    // The row counter heals itself here if anything deleted rows behind the
    // store's back (the write lock is held, so the count is exact).
    sqlx::query("UPDATE conduit_task_count SET n = (SELECT count(*) FROM conduit_tasks) WHERE id = 1")
        .execute(&mut *tx)
        .await
        .map_err(classify)?;
    tx.commit().await.map_err(classify)
}

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
#[derive(Debug, Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    writer: Arc<ConnPool<SqliteConnection>>,
    reader: Arc<ConnPool<SqliteConnection>>,
    stripes: Stripes,
    clock: Arc<dyn Clock>,
    path: String,
    /// Creates waiting for the writer; whoever gets it next commits them all.
    creates: Mutex<Vec<Pending>>,
    /// Creates under way (queued or running); a create that finds none runs
    /// on its own, without the queue.
    in_flight: AtomicUsize,
}

/// A row to create, and the cap it must fit under.
#[derive(Debug)]
struct NewRow {
    task_id: String,
    columns: Columns,
    max_rows: Option<i64>,
}

/// A `create` waiting in the queue, and where its result goes.
#[derive(Debug)]
struct Pending {
    row: NewRow,
    done: oneshot::Sender<Result<(), StoreError>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
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
        &self.inner.path
    }

    /// Closes every connection (checkpointing the WAL into the file); every
    /// later operation fails with [`StoreError::Backend`].
    pub async fn close(&self) {
        self.inner.reader.close().await;
        self.inner.writer.close().await;
    }

    async fn reader(&self) -> Result<Checkout<'_, SqliteConnection>, StoreError> {
        self.inner.reader.get().await.map_err(|e| backend("open a connection", e))
    }

    async fn writer(&self) -> Result<Checkout<'_, SqliteConnection>, StoreError> {
        self.inner.writer.get().await.map_err(|e| backend("open a connection", e))
    }

    async fn select<'q>(
        &self,
        sql: &'q str,
        bind: impl FnOnce(SqlQuery<'q>) -> SqlQuery<'q>,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        let mut c = self.reader().await?;
        let rows = bind(sqlx::query(sql)).fetch_all(c.conn()).await;
        let rows = c.finish(rows, broken).map_err(|e| backend("read tasks", e))?;
        rows.iter().map(decode_row).collect()
    }

    /// Runs one write statement on the writer connection.
    async fn write(&self, what: &str, query: SqlQuery<'_>) -> Result<u64, StoreError> {
        let mut c = self.writer().await?;
        let done = query.execute(c.conn()).await.map(|r| r.rows_affected());
        c.finish(done, broken).map_err(|e| backend(what, e))
    }

    /// Takes the writer, then commits every create queued at that moment
    /// (group commit): one statement for a lone create, one transaction for
    /// several. Each create's result goes back through its channel.
    async fn flush_creates(&self) {
        let conn = self.inner.writer.get().await;
        let mut batch: Vec<_> = {
            // At most `MAX_BATCH` at once, oldest first: the write lock is held until
            // the batch commits, and every create left queued has a flush of its own
            // still to come.
            let mut queue = lock(&self.inner.creates);
            let n = queue.len().min(MAX_BATCH);
            queue.drain(..n).collect()
        };
        if batch.is_empty() {
            // An earlier flush took this create along with its own.
            if let Ok(c) = conn {
                c.release();
            }
            return;
        }
        let mut conn = match conn {
            Ok(c) => c,
            Err(e) => {
                let err = backend("open a connection", e);
                for p in batch {
                    let _ = p.done.send(Err(err.clone()));
                }
                return;
            }
        };
        if let [one] = batch.as_slice() {
            let done = insert_one(&one.row).execute(conn.conn()).await;
            let result = created(conn.finish(done, broken));
            if let Some(p) = batch.pop() {
                let _ = p.done.send(result);
            }
            return;
        }
        let ran = insert_batch(conn.conn(), &batch).await;
        match conn.finish(ran, broken) {
            Ok(results) => {
                for (p, r) in batch.into_iter().zip(results) {
                    let _ = p.done.send(r);
                }
            }
            Err(e) => {
                let err = backend("insert tasks", e);
                for p in batch {
                    let _ = p.done.send(Err(err.clone()));
                }
            }
        }
    }
}

/// A lone create's result from its statement's.
fn created(done: Result<sqlx::sqlite::SqliteQueryResult, sqlx::Error>) -> Result<(), StoreError> {
    match done {
        Ok(r) if r.rows_affected() == 1 => Ok(()),
        Ok(_) => Err(StoreError::TaskLimitReached),
        Err(sqlx::Error::Database(e)) if e.is_unique_violation() => Err(StoreError::Duplicate),
        Err(e) => Err(backend("insert a task", e)),
    }
}

/// Counts the creates under way while it lives (also when its future is dropped).
struct InFlight<'a> {
    count: &'a AtomicUsize,
    /// No other create was under way when this one began.
    alone: bool,
}

impl<'a> InFlight<'a> {
    fn enter(count: &'a AtomicUsize) -> Self {
        Self { count, alone: count.fetch_add(1, Ordering::AcqRel) == 0 }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Creates committed by one transaction at most.
const MAX_BATCH: usize = 512;

/// Rows per multi-row `INSERT` (10 parameters each: far below SQLite's
/// parameter limit, and few enough statement shapes for the statement cache).
const INSERT_CHUNK: usize = 64;

const INSERT_COLUMNS: &str = "INSERT INTO conduit_tasks (task_id, owner, status, version, created_at_ms, \
     expires_at_ms, terminal_at_ms, lease_node, lease_expires_ms, doc)";

/// One create as one statement: the cap check and the insert (whose trigger
/// bumps the counter) run under SQLite's write lock as one atomic step.
fn insert_one(p: &NewRow) -> SqlQuery<'_> {
    let q = sqlx::query(
        "INSERT INTO conduit_tasks (task_id, owner, status, version, created_at_ms, expires_at_ms, \
         terminal_at_ms, lease_node, lease_expires_ms, doc) \
         SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10 \
         WHERE ?11 IS NULL OR (SELECT n FROM conduit_task_count WHERE id = 1) < ?11",
    );
    bind_row(q, p).bind(p.max_rows)
}

/// Binds a new row's ten columns, in `INSERT_COLUMNS` order.
fn bind_row<'q>(q: SqlQuery<'q>, p: &'q NewRow) -> SqlQuery<'q> {
    let c = &p.columns;
    q.bind(p.task_id.as_str())
        .bind(c.owner.as_deref())
        .bind(c.status)
        .bind(c.version)
        .bind(c.created_at_ms)
        .bind(c.expires_at_ms)
        .bind(c.terminal_at_ms)
        .bind(c.lease_node.as_deref())
        .bind(c.lease_expires_ms)
        .bind(c.doc.as_str())
}

/// Several creates in one `BEGIN IMMEDIATE` transaction. The counter is read
/// once (the write lock keeps it still) to decide, in queue order, which
/// creates fit under their cap; those go in as multi-row inserts. Should an
/// insert hit a duplicate id, the creates not yet written go one by one
/// instead, so that only the duplicate fails. `Err` (the transaction rolled
/// back, or the commit failed) is every create's result.
async fn insert_batch(
    conn: &mut SqliteConnection,
    batch: &[Pending],
) -> Result<Vec<Result<(), StoreError>>, sqlx::Error> {
    let mut tx = conn.begin_with("BEGIN IMMEDIATE").await?;
    let mut n: i64 = if batch.iter().any(|p| p.row.max_rows.is_some()) {
        sqlx::query_scalar("SELECT n FROM conduit_task_count WHERE id = 1").fetch_one(&mut *tx).await?
    } else {
        0
    };
    let mut results: Vec<Option<Result<(), StoreError>>> = vec![None; batch.len()];
    let mut admitted = Vec::with_capacity(batch.len());
    for (i, p) in batch.iter().enumerate() {
        if p.row.max_rows.is_none_or(|max| n < max) {
            admitted.push(i);
            n += 1;
        }
    }
    let mut one_by_one = false;
    for chunk in admitted.chunks(INSERT_CHUNK) {
        let mut sql = String::with_capacity(INSERT_COLUMNS.len() + chunk.len() * 24);
        sql.push_str(INSERT_COLUMNS);
        sql.push_str(" VALUES ");
        for k in 0..chunk.len() {
            sql.push_str(if k == 0 { "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)" } else { ", (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)" });
        }
        let mut q = sqlx::query(&sql);
        for &i in chunk {
            q = bind_row(q, &batch[i].row);
        }
        match q.execute(&mut *tx).await {
            Ok(_) => {
                for &i in chunk {
                    results[i] = Some(Ok(()));
                }
            }
            // The failed statement alone is undone; the transaction goes on.
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
                one_by_one = true;
                break;
            }
            Err(e) => return Err(e),
        }
    }
    if one_by_one {
        // Everything not yet written, in queue order, each checked against
        // the live counter (a duplicate frees its slot for a later create).
        for (i, p) in batch.iter().enumerate() {
            if results[i].is_some() {
                continue;
            }
            results[i] = Some(match insert_one(&p.row).execute(&mut *tx).await {
                Ok(r) if r.rows_affected() == 1 => Ok(()),
                Ok(_) => Err(StoreError::TaskLimitReached),
                Err(sqlx::Error::Database(e)) if e.is_unique_violation() => Err(StoreError::Duplicate),
                Err(e) => return Err(e),
            });
        }
    }
    tx.commit().await?;
    Ok(results.into_iter().map(|r| r.unwrap_or(Err(StoreError::TaskLimitReached))).collect())
}

type SqlQuery<'q> = sqlx::query::Query<'q, Sqlite, sqlx::sqlite::SqliteArguments<'q>>;

/// Whether an error may have left the connection unusable (anything but an
/// error the database reported about the statement).
fn broken(e: &sqlx::Error) -> bool {
    !matches!(e, sqlx::Error::Database(_))
}

fn backend(what: &str, e: sqlx::Error) -> StoreError {
    StoreError::Backend(format!("sqlite: cannot {what}: {e}"))
}

fn decode_row(row: &SqliteRow) -> Result<TaskRecord, StoreError> {
    let get = |e: sqlx::Error| backend("decode a task row", e);
    let version: i64 = row.try_get(0).map_err(get)?;
    let lease_node: Option<String> = row.try_get(1).map_err(get)?;
    let lease_expires: Option<i64> = row.try_get(2).map_err(get)?;
    let doc: &str = row.try_get(3).map_err(get)?;
    common::decode(ENGINE, version, lease_node, lease_expires, doc)
}

#[async_trait]
impl Rows for SqliteStore {
    async fn read(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        let mut c = self.reader().await?;
        let row =
            sqlx::query("SELECT version, lease_node, lease_expires_ms, doc FROM conduit_tasks WHERE task_id = ?1")
                .bind(task_id)
                .fetch_optional(c.conn())
                .await;
        let row = c.finish(row, broken).map_err(|e| backend("read a task", e))?;
        row.as_ref().map(decode_row).transpose()
    }

    async fn swap(&self, next: &TaskRecord, expected: u64) -> Result<bool, StoreError> {
        let c = Columns::of(next)?;
        let q = sqlx::query(
            "UPDATE conduit_tasks SET owner = ?1, status = ?2, version = ?3, created_at_ms = ?4, expires_at_ms = ?5, \
             terminal_at_ms = ?6, lease_node = ?7, lease_expires_ms = ?8, doc = ?9 \
             WHERE task_id = ?10 AND version = ?11",
        )
        .bind(c.owner)
        .bind(c.status)
        .bind(c.version)
        .bind(c.created_at_ms)
        .bind(c.expires_at_ms)
        .bind(c.terminal_at_ms)
        .bind(c.lease_node)
        .bind(c.lease_expires_ms)
        .bind(c.doc)
        .bind(next.task_id.as_str())
        .bind(common::ms(expected));
        Ok(self.write("write a task", q).await? == 1)
    }
}

#[async_trait]
impl TaskStore for SqliteStore {
    fn name(&self) -> &'static str {
        ENGINE
    }

    async fn create(&self, mut record: TaskRecord, max_rows: Option<usize>) -> Result<(), StoreError> {
        record.version = 1;
        let columns = Columns::of(&record)?;
        let row = NewRow { task_id: record.task_id, columns, max_rows: max_rows.map(common::limit) };
        let in_flight = InFlight::enter(&self.inner.in_flight);
        if in_flight.alone {
            // No other create under way: nothing to batch with, so no queue.
            let mut conn = self.writer().await?;
            let done = insert_one(&row).execute(conn.conn()).await;
            return created(conn.finish(done, broken));
        }
        let (done, outcome) = oneshot::channel();
        lock(&self.inner.creates).push(Pending { row, done });
        // The flush runs in a task of its own, so a caller that gives up
        // (its future dropped) never strands the batch it would have led.
        let store = self.clone();
        tokio::spawn(async move { store.flush_creates().await });
        outcome.await.unwrap_or_else(|_| Err(StoreError::Backend("sqlite: the task insert was abandoned".into())))
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
        let sweeps = [
            (
                "DELETE FROM conduit_tasks WHERE task_id IN \
                 (SELECT task_id FROM conduit_tasks WHERE expires_at_ms < ?1 LIMIT ?2) AND expires_at_ms < ?1",
                now,
            ),
            (
                "DELETE FROM conduit_tasks WHERE task_id IN (SELECT task_id FROM conduit_tasks \
                 WHERE expires_at_ms IS NULL AND terminal_at_ms < ?1 LIMIT ?2) \
                 AND expires_at_ms IS NULL AND terminal_at_ms < ?1",
                cutoff,
            ),
        ];
        let mut removed = 0usize;
        for (sql, bound) in sweeps {
            loop {
                // The delete trigger lowers the row counter in the same statement.
                let q = sqlx::query(sql).bind(common::ms(bound)).bind(CLEANUP_BATCH);
                let gone = self.write("delete expired tasks", q).await?;
                removed += usize::try_from(gone).unwrap_or(usize::MAX);
                if gone < CLEANUP_BATCH as u64 {
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
            "UPDATE conduit_tasks SET lease_expires_ms = MAX(COALESCE(lease_expires_ms, 0), ?1), \
             version = version + 1 WHERE lease_node = ?2 AND status IN {LIVE_STATUSES}"
        );
        let done = self.write("renew leases", sqlx::query(&sql).bind(common::ms(until_ms)).bind(node)).await?;
        Ok(usize::try_from(done).unwrap_or(usize::MAX))
    }

    async fn lapsed_leases(&self, limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
        let now = common::ms(self.inner.clock.now_ms());
        let sql = format!(
            "{SELECT_ROW} WHERE lease_expires_ms < ?1 AND status IN {LIVE_STATUSES} \
             AND (expires_at_ms IS NULL OR expires_at_ms >= ?1) ORDER BY lease_expires_ms LIMIT ?2"
        );
        self.select(&sql, |q| q.bind(now).bind(common::limit(limit))).await
    }

    async fn leased_to(&self, node: &str, limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
        let now = common::ms(self.inner.clock.now_ms());
        let sql = format!(
            "{SELECT_ROW} WHERE lease_node = ?1 AND status IN {LIVE_STATUSES} \
             AND (expires_at_ms IS NULL OR expires_at_ms >= ?2) LIMIT ?3"
        );
        let node = node.to_owned();
        self.select(&sql, move |q| q.bind(node).bind(now).bind(common::limit(limit))).await
    }
}
