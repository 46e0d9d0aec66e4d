//! [`SqliteLedger`] (feature `ledger-sqlite`): the ledger in one SQLite
//! file, for a client whose tasks must outlive it.

use super::{DEFAULT_CAP, LedgerEntry, LedgerError, LedgerFilter, TaskLedger};
use crate::protocol::tasks::TaskStatus;
use async_trait::async_trait;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteRow, SqliteSynchronous,
};
use sqlx::{Row, Sqlite, Transaction};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The file's `PRAGMA application_id`: "CMTL" (conduit-mcp task ledger).
const APPLICATION_ID: i64 = 0x434d_544c;
/// The schema version this code writes (`PRAGMA user_version`).
const SCHEMA_VERSION: i64 = 1;
/// How long a write waits for another process's.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS tasks (
    server TEXT NOT NULL,
    task_id TEXT NOT NULL,
    principal TEXT NOT NULL,
    version TEXT NOT NULL,
    tool TEXT NOT NULL,
    args_digest TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    expires_ms INTEGER,
    status TEXT NOT NULL,
    updated_ms INTEGER NOT NULL,
    lost TEXT,
    resumable INTEGER NOT NULL,
    in_flight INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (server, task_id)
) WITHOUT ROWID";

const COLUMNS: &str = "server, task_id, principal, version, tool, args_digest, created_ms, expires_ms, status, \
                       updated_ms, lost, resumable, in_flight";

/// The task ledger in an SQLite file.
///
/// - **Crash-safe:** each write is one transaction in WAL mode. With
///   `synchronous = NORMAL` a commit is not synced on its own (a power cut
///   may undo the last few; a killed process loses none, since the WAL is in
///   the OS's hands once written); the WAL is synced at each checkpoint, so a
///   thousand records cost a thousand appends, not a thousand `fsync`s.
/// - **Shared:** several processes may write at once; a writer waits for
///   the lock up to the busy timeout (5 s), and every write takes the lock
///   with its first statement, so none fails half way.
/// - **Owner-only:** the file is created `0600` (its `-wal` and `-shm` take
///   the same mode) in a directory made `0700`.
/// - **Its own:** the file carries an application id; a file that is not
///   SQLite, is damaged, or is another program's database is refused
///   ([`LedgerError::Unreadable`]) and never written to.
#[derive(Debug, Clone)]
pub struct SqliteLedger {
    path: PathBuf,
    pool: SqlitePool,
    cap: usize,
}

impl SqliteLedger {
    /// Opens the ledger at `path`, creating it (and its directory) when
    /// missing. A file that is not a ledger is [`LedgerError::Unreadable`]
    /// and is left exactly as it was.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, LedgerError> {
        let path = path.as_ref().to_path_buf();
        let shown = path.display().to_string();
        prepare_file(&path)?;
        let options = SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(false)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(BUSY_TIMEOUT);
        // One connection: this process's writes queue here, other processes' at the file lock.
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options)
            .await
            .map_err(|e| sql_error(&shown, e))?;
        let ledger = Self { path, pool, cap: DEFAULT_CAP };
        ledger.init().await?;
        Ok(ledger)
    }

    /// Holds at most `cap` entries (at least one; default [`DEFAULT_CAP`]).
    #[must_use]
    pub fn cap(mut self, cap: usize) -> Self {
        self.cap = cap.max(1);
        self
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Moves the file at `path` (and its `-wal` and `-shm`) aside, to
    /// `PATH.unreadable-MS`, so a new ledger can start there; returns where it went.
    pub fn move_aside(path: impl AsRef<Path>, now_ms: i64) -> std::io::Result<PathBuf> {
        let path = path.as_ref();
        let mut aside = path.as_os_str().to_owned();
        aside.push(format!(".unreadable-{now_ms}"));
        let aside = PathBuf::from(aside);
        std::fs::rename(path, &aside)?;
        for suffix in ["-wal", "-shm"] {
            let mut from = path.as_os_str().to_owned();
            from.push(suffix);
            let mut to = aside.as_os_str().to_owned();
            to.push(suffix);
            match std::fs::rename(&from, &to) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        Ok(aside)
    }

    fn shown(&self) -> String {
        self.path.display().to_string()
    }

    fn err(&self) -> impl Fn(sqlx::Error) -> LedgerError + '_ {
        move |e| sql_error(&self.shown(), e)
    }

    /// A write transaction holding the file's write lock from its start.
    async fn write(&self) -> Result<Transaction<'static, Sqlite>, LedgerError> {
        self.pool.begin_with("BEGIN IMMEDIATE").await.map_err(self.err())
    }

    /// Checks the file is ours (or new, then makes it ours), in one write transaction.
    async fn init(&self) -> Result<(), LedgerError> {
        let unreadable = |why: String| LedgerError::Unreadable { path: self.shown(), why };
        let mut tx = self.write().await?;
        let app: i64 = sqlx::query_scalar("PRAGMA application_id").fetch_one(&mut *tx).await.map_err(self.err())?;
        let version: i64 = sqlx::query_scalar("PRAGMA user_version").fetch_one(&mut *tx).await.map_err(self.err())?;
        let tables: i64 =
            sqlx::query_scalar("SELECT count(*) FROM sqlite_schema").fetch_one(&mut *tx).await.map_err(self.err())?;
        match (app, version) {
            (0, 0) if tables == 0 => {
                sqlx::query(sqlx::AssertSqlSafe(format!("PRAGMA application_id = {APPLICATION_ID}")))
                    .execute(&mut *tx)
                    .await
                    .map_err(self.err())?;
                sqlx::query(sqlx::AssertSqlSafe(format!("PRAGMA user_version = {SCHEMA_VERSION}")))
                    .execute(&mut *tx)
                    .await
                    .map_err(self.err())?;
                sqlx::query(SCHEMA).execute(&mut *tx).await.map_err(self.err())?;
            }
            (APPLICATION_ID, SCHEMA_VERSION) => {}
            (APPLICATION_ID, v) => {
                return Err(unreadable(format!("schema version {v}, which this conduit-mcp does not read")));
            }
            _ => return Err(unreadable("another program's SQLite database".into())),
        }
        tx.commit().await.map_err(self.err())
    }

    /// Records `e` (in place of the call in flight `replaced`, if any) in one write transaction.
    async fn record_in_place_of(&self, replaced: Option<&str>, e: &LedgerEntry) -> Result<(), LedgerError> {
        let mut tx = self.write().await?;
        // The call it answers gives up its place first, so the cap counts one entry.
        if let Some(key) = replaced {
            sqlx::query("DELETE FROM tasks WHERE server = ? AND task_id = ? AND in_flight = 1")
                .bind(&e.server)
                .bind(key)
                .execute(&mut *tx)
                .await
                .map_err(self.err())?;
        }
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "INSERT OR REPLACE INTO tasks ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        )))
        .bind(&e.server)
        .bind(&e.task_id)
        .bind(&e.principal)
        .bind(&e.version)
        .bind(&e.tool)
        .bind(&e.args_digest)
        .bind(e.created_ms)
        .bind(e.expires_ms)
        .bind(e.status.as_str())
        .bind(e.updated_ms)
        .bind(e.lost.as_deref())
        .bind(i64::from(e.resumable))
        .bind(i64::from(e.in_flight))
        .execute(&mut *tx)
        .await
        .map_err(self.err())?;
        let n = self.count(&mut tx).await?;
        if n > self.cap {
            // Over the cap: the oldest ended entries go first, then unfinished ones
            // whose TTL has ended; an unfinished task within its TTL never goes.
            let excess = i64::try_from(n - self.cap).unwrap_or(i64::MAX);
            sqlx::query(
                "DELETE FROM tasks WHERE (server, task_id) IN (SELECT server, task_id FROM tasks
                 WHERE lost IS NOT NULL OR status IN ('completed', 'failed', 'cancelled') OR expires_ms < ?1
                 ORDER BY lost IS NULL AND status NOT IN ('completed', 'failed', 'cancelled'), updated_ms
                 LIMIT ?2)",
            )
            .bind(e.updated_ms)
            .bind(excess)
            .execute(&mut *tx)
            .await
            .map_err(self.err())?;
            if self.count(&mut tx).await? > self.cap {
                // Nothing is written: the transaction rolls back when dropped.
                return Err(LedgerError::Full { cap: self.cap });
            }
        }
        tx.commit().await.map_err(self.err())
    }

    async fn count(&self, tx: &mut Transaction<'static, Sqlite>) -> Result<usize, LedgerError> {
        let n: i64 = sqlx::query_scalar("SELECT count(*) FROM tasks").fetch_one(&mut **tx).await.map_err(self.err())?;
        Ok(usize::try_from(n).unwrap_or(0))
    }
}

/// Creates the directory (`0700`) and the file (`0600`) when missing,
/// tightens an existing file to `0600`, and refuses a file that does not
/// start like an SQLite database (SQLite would not touch it either, but the
/// error then says what it is).
fn prepare_file(path: &Path) -> Result<(), LedgerError> {
    use std::io::Read;
    let shown = path.display().to_string();
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        private_dir(dir).map_err(|e| LedgerError::io(dir.display(), e))?;
    }
    let mut file = private_file(path).map_err(|e| LedgerError::io(&shown, e))?;
    let mut head = Vec::with_capacity(16);
    (&mut file).take(16).read_to_end(&mut head).map_err(|e| LedgerError::io(&shown, e))?;
    if !head.is_empty() && head != b"SQLite format 3\0" {
        return Err(LedgerError::Unreadable { path: shown, why: "not an SQLite database".into() });
    }
    Ok(())
}

#[cfg(unix)]
fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if dir.exists() {
        return Ok(());
    }
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

#[cfg(not(unix))]
fn private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

#[cfg(unix)]
fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let f = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).mode(0o600).open(path)?;
    f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    Ok(f)
}

#[cfg(not(unix))]
fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)
}

/// A database error as a ledger error: a damaged or foreign file is `Unreadable`.
fn sql_error(path: &str, e: sqlx::Error) -> LedgerError {
    let primary = match &e {
        sqlx::Error::Database(d) => d.code().and_then(|c| c.parse::<i32>().ok()).map(|c| c & 0xff),
        _ => None,
    };
    match primary {
        // SQLITE_CORRUPT, SQLITE_NOTADB.
        Some(11 | 26) => LedgerError::Unreadable { path: path.to_owned(), why: e.to_string() },
        _ => LedgerError::io(path, e),
    }
}

/// Reads a row of [`COLUMNS`]; a row this code did not write is refused.
fn entry(path: &str, row: &SqliteRow) -> Result<LedgerEntry, LedgerError> {
    let unreadable = |why: String| LedgerError::Unreadable { path: path.to_owned(), why };
    let get = |e: sqlx::Error| unreadable(format!("a row that cannot be read: {e}"));
    let status: String = row.try_get(8).map_err(get)?;
    let status = TaskStatus::parse(&status).ok_or_else(|| unreadable(format!("an unknown task status {status:?}")))?;
    let mut e = LedgerEntry::new(
        row.try_get::<String, _>(0).map_err(get)?,
        row.try_get::<String, _>(2).map_err(get)?,
        row.try_get::<String, _>(1).map_err(get)?,
        row.try_get::<String, _>(3).map_err(get)?,
        row.try_get::<String, _>(4).map_err(get)?,
        row.try_get::<String, _>(5).map_err(get)?,
        row.try_get(6).map_err(get)?,
    );
    e.expires_ms = row.try_get(7).map_err(get)?;
    e.status = status;
    e.updated_ms = row.try_get(9).map_err(get)?;
    e.lost = row.try_get(10).map_err(get)?;
    e.resumable = row.try_get::<i64, _>(11).map_err(get)? != 0;
    e.in_flight = row.try_get::<i64, _>(12).map_err(get)? != 0;
    Ok(e)
}

#[async_trait]
impl TaskLedger for SqliteLedger {
    async fn record(&self, e: &LedgerEntry) -> Result<(), LedgerError> {
        self.record_in_place_of(None, e).await
    }

    async fn replace(&self, call_key: &str, entry: &LedgerEntry) -> Result<(), LedgerError> {
        self.record_in_place_of(Some(call_key), entry).await
    }

    async fn set_status(
        &self,
        server: &str,
        task_id: &str,
        status: TaskStatus,
        now_ms: i64,
    ) -> Result<(), LedgerError> {
        // A terminal status is final: a late, stale read never undoes it.
        sqlx::query(
            "UPDATE tasks SET status = ?, updated_ms = ? WHERE server = ? AND task_id = ?
             AND status NOT IN ('completed', 'failed', 'cancelled') AND status <> ?",
        )
        .bind(status.as_str())
        .bind(now_ms)
        .bind(server)
        .bind(task_id)
        .bind(status.as_str())
        .execute(&self.pool)
        .await
        .map(drop)
        .map_err(self.err())
    }

    async fn mark_lost(&self, server: &str, task_id: &str, reason: &str, now_ms: i64) -> Result<(), LedgerError> {
        sqlx::query("UPDATE tasks SET lost = ?, updated_ms = ? WHERE server = ? AND task_id = ?")
            .bind(reason)
            .bind(now_ms)
            .bind(server)
            .bind(task_id)
            .execute(&self.pool)
            .await
            .map(drop)
            .map_err(self.err())
    }

    async fn list(&self, filter: &LedgerFilter) -> Result<Vec<LedgerEntry>, LedgerError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM tasks WHERE (?1 IS NULL OR server = ?1) AND (?2 IS NULL OR principal = ?2)
             ORDER BY created_ms, task_id"
        )))
        .bind(filter.server.as_deref())
        .bind(filter.principal.as_deref())
        .fetch_all(&self.pool)
        .await
        .map_err(self.err())?;
        let shown = self.shown();
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            let e = entry(&shown, row)?;
            if filter.admits(&e) {
                out.push(e);
            }
        }
        Ok(out)
    }

    async fn forget(&self, task_id: &str) -> Result<usize, LedgerError> {
        let done = sqlx::query("DELETE FROM tasks WHERE task_id = ?")
            .bind(task_id)
            .execute(&self.pool)
            .await
            .map_err(self.err())?;
        Ok(usize::try_from(done.rows_affected()).unwrap_or(usize::MAX))
    }

    async fn prune(&self, now_ms: i64, retention: Duration) -> Result<usize, LedgerError> {
        let cutoff = now_ms.saturating_sub(i64::try_from(retention.as_millis()).unwrap_or(i64::MAX));
        let done = sqlx::query(
            "DELETE FROM tasks WHERE updated_ms < ?1 AND (lost IS NOT NULL
             OR status IN ('completed', 'failed', 'cancelled') OR expires_ms < ?1)",
        )
        .bind(cutoff)
        .execute(&self.pool)
        .await
        .map_err(self.err())?;
        Ok(usize::try_from(done.rows_affected()).unwrap_or(usize::MAX))
    }
}

#[cfg(test)]
mod tests;
