//! [`SqliteLedger`] (feature `ledger-sqlite`): the ledger in one SQLite
//! file, for a client whose tasks must outlive it.

use super::{DEFAULT_CAP, LedgerEntry, LedgerError, LedgerFilter, TaskLedger};
use crate::protocol::tasks::TaskStatus;
use async_trait::async_trait;
use conn::Shared;
use fold::{Folder, fold};
use journal::Journal;
use rusqlite::{Connection, Row, TransactionBehavior, params};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The file's `PRAGMA application_id`: "CMTL" (conduit-mcp task ledger).
const APPLICATION_ID: i64 = 0x434d_544c;
/// The schema version this code writes (`PRAGMA user_version`).
const SCHEMA_VERSION: i64 = 1;

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

/// The highest line of each journal folded (see `journal`); added to
/// version 1 files as they are opened (older readers ignore it).
const JOURNAL_FOLDS: &str =
    "CREATE TABLE IF NOT EXISTS journal_folds (journal TEXT PRIMARY KEY, seq INTEGER NOT NULL) WITHOUT ROWID";

const COLUMNS: &str = "server, task_id, principal, version, tool, args_digest, created_ms, expires_ms, status, \
                       updated_ms, lost, resumable, in_flight";

/// The task ledger in an SQLite file.
///
/// - **Cheap to record:** [`record`](TaskLedger::record) (and
///   [`replace`](TaskLedger::replace)) append one JSON line to this
///   process's journal beside the file, `FILE.pending-PID-RANDOM` (one
///   `pwrite(2)`), and return; a thread of the ledger's own folds what
///   gathered into the file in one transaction once a burst of records
///   ends (20 ms without one), at 512 KiB of journal, or a second after
///   the first record waiting. Every other method folds first, so this
///   process always reads what it wrote; **other processes see a record
///   once it is folded** (within a second, at the latest when the ledger
///   is dropped).
/// - **Crash-safe:** a line written is in the OS's hands, so a process
///   killed right after `record` returns loses nothing: the next
///   [`open`](Self::open) (of any process) folds the journals whose process
///   has ended (their lock is free), skipping a torn last line and never
///   putting back an older status over a newer one, then removes them.
///   Each fold is one transaction in WAL mode. With `synchronous = NORMAL`
///   neither the journal nor a commit is synced on its own (a power cut may
///   undo the last few); the WAL is synced at each checkpoint.
/// - **Bounded:** past 1 MiB of journal (the folds falling behind), records
///   go to the file at once until a fold lets the journal start over.
///   Dropping the last
///   clone folds what is left and removes the journal.
/// - **Shared:** several processes may write at once; a writer waits for
///   the lock up to the busy timeout (5 s), and every write takes the lock
///   with its first statement, so none fails half way.
/// - **Owner-only:** the file is created `0600` (its `-wal`, `-shm` and
///   journals take the same mode) in a directory made `0700`. A journal
///   holds the columns of the entries it records and nothing else.
/// - **Its own:** the file carries an application id; a file that is not
///   SQLite, is damaged, or is another program's database is refused
///   ([`LedgerError::Unreadable`]) and never written to.
///
/// Needs a Tokio runtime to open and to use; it may be dropped anywhere.
#[derive(Debug, Clone)]
pub struct SqliteLedger {
    path: PathBuf,
    conn: Shared,
    cap: usize,
    /// Entries in the file as this process last counted them, plus its own
    /// records since (see `record::Count`).
    count: Arc<record::Count>,
    /// The journal and the thread folding it (dropped with the last clone).
    folder: Arc<Folder>,
}

impl SqliteLedger {
    /// Opens the ledger at `path`, creating it (and its directory) when
    /// missing. A file that is not a ledger is [`LedgerError::Unreadable`]
    /// and is left exactly as it was.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, LedgerError> {
        Self::open_folding(path.as_ref(), Some(fold::PACE)).await
    }

    /// [`open`](Self::open), its thread folding the journal at `pace`
    /// (`None`: only reads and the drop fold).
    async fn open_folding(path: &Path, pace: Option<fold::Pace>) -> Result<Self, LedgerError> {
        let path = path.to_path_buf();
        prepare_file(&path)?;
        let conn = Shared::open(&path).await?;
        Self::init(&conn, &path).await?;
        let (at, shared) = (path.clone(), conn.clone());
        let count = Arc::new(record::Count::default());
        let counting = count.clone();
        let journal = tokio::task::spawn_blocking(move || {
            orphans::fold_all(&shared, &at);
            // Counted now, so that the first records go to the journal too
            // (uncounted, a record takes the exact path).
            match shared.run_blocking(|c| record::entries(c)) {
                Ok(n) => counting.counted(n),
                Err(e) => tracing::debug!(error = %e, "the task ledger's entries were not counted at opening"),
            }
            Journal::create(&at)
        })
        .await
        .map_err(|e| LedgerError::io(path.display(), std::io::Error::other(e)))?
        .map_err(|e| LedgerError::io(path.display(), e))?;
        let folder = Folder::start(Arc::new(journal), conn.clone(), count.clone(), pace)
            .map_err(|e| LedgerError::io(path.display(), e))?;
        Ok(Self { path, conn, cap: DEFAULT_CAP, count, folder: Arc::new(folder) })
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

    /// Checks the file is ours (or new, then makes it ours), in one write transaction.
    async fn init(conn: &Shared, path: &Path) -> Result<(), LedgerError> {
        let shown = path.display().to_string();
        let verdict = conn
            .run(|c| {
                let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
                let app: i64 = tx.query_row("PRAGMA application_id", [], |r| r.get(0))?;
                let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
                let tables: i64 = tx.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))?;
                let verdict = match (app, version) {
                    (0, 0) if tables == 0 => {
                        tx.execute_batch(&format!(
                            "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = {SCHEMA_VERSION}; \
                             {SCHEMA}; {JOURNAL_FOLDS}"
                        ))?;
                        None
                    }
                    (APPLICATION_ID, SCHEMA_VERSION) => {
                        tx.execute_batch(JOURNAL_FOLDS)?;
                        None
                    }
                    (APPLICATION_ID, v) => Some(format!("schema version {v}, which this conduit-mcp does not read")),
                    _ => Some("another program's SQLite database".to_owned()),
                };
                tx.commit()?;
                Ok(verdict)
            })
            .await
            .map_err(|e| conn::ledger_error(&shown, e))?;
        match verdict {
            None => Ok(()),
            Some(why) => Err(LedgerError::Unreadable { path: shown, why }),
        }
    }

    /// Runs `op` on the connection; its error as a ledger error naming the file.
    async fn run<T: Send + 'static>(
        &self,
        op: impl Fn(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, LedgerError> {
        self.conn.run(op).await.map_err(|e| conn::ledger_error(&self.shown(), e))
    }

    /// [`run`](Self::run) once the journal is folded: `op` sees every
    /// record this process made.
    async fn run_folded<T: Send + 'static>(
        &self,
        op: impl Fn(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, LedgerError> {
        let (journal, count) = (self.folder.journal().clone(), self.count.clone());
        self.run(move |c| {
            fold(c, &journal, &count)?;
            op(c)
        })
        .await
    }

    /// Ends the folding thread without a fold and lets the journal go as a
    /// killed process leaves it (no fold, no removal).
    #[cfg(test)]
    fn abandon(self) {
        self.folder.abandon();
        std::mem::forget(self);
    }

    /// [`open`](Self::open) with no folding in the background: what is
    /// recorded stays in the journal until read.
    #[cfg(test)]
    async fn open_unfolded(path: impl AsRef<Path>) -> Result<Self, LedgerError> {
        Self::open_folding(path.as_ref(), None).await
    }

    /// This process's journal.
    #[cfg(test)]
    fn journal_path(&self) -> PathBuf {
        self.folder.journal().path().to_path_buf()
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

/// Reads a row of [`COLUMNS`]; a row this code did not write is refused
/// (as `Err(why)`).
fn entry(row: &Row<'_>) -> rusqlite::Result<Result<LedgerEntry, String>> {
    let status: String = row.get(8)?;
    let Some(status) = TaskStatus::parse(&status) else {
        return Ok(Err(format!("an unknown task status {status:?}")));
    };
    let mut e = LedgerEntry::new(
        row.get::<_, String>(0)?,
        row.get::<_, String>(2)?,
        row.get::<_, String>(1)?,
        row.get::<_, String>(3)?,
        row.get::<_, String>(4)?,
        row.get::<_, String>(5)?,
        row.get(6)?,
    );
    e.expires_ms = row.get(7)?;
    e.status = status;
    e.updated_ms = row.get(9)?;
    e.lost = row.get(10)?;
    e.resumable = row.get::<_, i64>(11)? != 0;
    e.in_flight = row.get::<_, i64>(12)? != 0;
    Ok(Ok(e))
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
        let (server, task_id) = (server.to_owned(), task_id.to_owned());
        // A terminal status is final: a late, stale read never undoes it.
        self.run_folded(move |c| {
            c.prepare_cached(
                "UPDATE tasks SET status = ?1, updated_ms = ?2 WHERE server = ?3 AND task_id = ?4
                 AND status NOT IN ('completed', 'failed', 'cancelled') AND status <> ?1",
            )?
            .execute(params![status.as_str(), now_ms, server, task_id])
            .map(drop)
        })
        .await
    }

    async fn mark_lost(&self, server: &str, task_id: &str, reason: &str, now_ms: i64) -> Result<(), LedgerError> {
        let (server, task_id, reason) = (server.to_owned(), task_id.to_owned(), reason.to_owned());
        self.run_folded(move |c| {
            c.prepare_cached("UPDATE tasks SET lost = ?1, updated_ms = ?2 WHERE server = ?3 AND task_id = ?4")?
                .execute(params![reason, now_ms, server, task_id])
                .map(drop)
        })
        .await
    }

    async fn list(&self, filter: &LedgerFilter) -> Result<Vec<LedgerEntry>, LedgerError> {
        let (server, principal) = (filter.server.clone(), filter.principal.clone());
        let rows = self
            .run_folded(move |c| {
                let mut q = c.prepare_cached(&format!(
                    "SELECT {COLUMNS} FROM tasks WHERE (?1 IS NULL OR server = ?1) AND (?2 IS NULL OR principal = ?2)
                     ORDER BY created_ms, task_id"
                ))?;
                q.query_map(params![server, principal], entry)?.collect::<rusqlite::Result<Vec<_>>>()
            })
            .await?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let e = row.map_err(|why| LedgerError::Unreadable { path: self.shown(), why })?;
            if filter.admits(&e) {
                out.push(e);
            }
        }
        Ok(out)
    }

    async fn forget(&self, task_id: &str) -> Result<usize, LedgerError> {
        let task_id = task_id.to_owned();
        self.run_folded(move |c| c.prepare_cached("DELETE FROM tasks WHERE task_id = ?1")?.execute([&task_id])).await
    }

    async fn prune(&self, now_ms: i64, retention: Duration) -> Result<usize, LedgerError> {
        let cutoff = now_ms.saturating_sub(i64::try_from(retention.as_millis()).unwrap_or(i64::MAX));
        self.run_folded(move |c| {
            c.prepare_cached(
                "DELETE FROM tasks WHERE (updated_ms < ?1 AND (lost IS NOT NULL
                 OR status IN ('completed', 'failed', 'cancelled') OR expires_ms < ?1))
                 OR (in_flight = 1 AND created_ms < ?1)",
            )?
            .execute([cutoff])
        })
        .await
    }
}

mod conn;
mod fold;
mod journal;
#[cfg(test)]
mod journal_tests;
mod line;
mod orphans;
mod record;
#[cfg(test)]
mod tests;
