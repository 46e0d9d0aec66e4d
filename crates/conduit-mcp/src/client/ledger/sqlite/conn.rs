//! The ledger's one connection, and where its statements run.
//!
//! A statement runs on the calling task's thread when nothing else holds
//! the connection and no other process holds the file's write lock: the
//! connection's busy timeout is zero there, so it never blocks on another
//! process, and a read costs one SQLite call, not a trip to another
//! thread. Otherwise it runs on a blocking thread with the busy timeout
//! ([`BUSY_TIMEOUT`]), where waiting for the lock harms no one. The
//! ledger's folding thread and its opening run statements on their own
//! thread ([`Shared::run_blocking`]).
//!
//! SQLite's own checkpoints are off on this connection: one would run
//! inside whichever write crossed the WAL's size and `fsync` there. Instead
//! every [`CHECKPOINT_EVERY`] statements (records folded count one each) a
//! passive checkpoint runs on a second connection, on a blocking thread or
//! on the folding thread after its fold, beside the writes.

use super::super::LedgerError;
use rusqlite::{Connection, ErrorCode, OpenFlags};
use std::path::Path;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, TryLockError};
use std::time::Duration;

/// Statements between two background checkpoints.
const CHECKPOINT_EVERY: usize = 1024;

/// How long a write waits for another process's.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// One connection to the ledger's file, shared by the ledger's clones.
#[derive(Clone)]
pub(super) struct Shared(Arc<Inner>);

struct Inner {
    conn: Arc<Mutex<Connection>>,
    path: PathBuf,
    /// Statements run, for the checkpoint's turn.
    runs: AtomicUsize,
    /// Whether a checkpoint is running.
    checkpointing: Arc<AtomicBool>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Shared(..)")
    }
}

impl Shared {
    /// Opens `path` (which exists) in WAL mode with `synchronous = NORMAL`.
    pub(super) async fn open(path: &Path) -> Result<Self, LedgerError> {
        let shown = path.display().to_string();
        let path = path.to_path_buf();
        let file = path.clone();
        let opened = tokio::task::spawn_blocking(move || -> rusqlite::Result<Connection> {
            let c = connect(&file)?;
            let _mode: String = c.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
            c.pragma_update(None, "synchronous", "NORMAL")?;
            c.pragma_update(None, "wal_autocheckpoint", 0)?;
            c.busy_timeout(Duration::ZERO)?;
            Ok(c)
        })
        .await
        .map_err(|e| LedgerError::io(&shown, std::io::Error::other(e)))?;
        let conn = opened.map_err(|e| ledger_error(&shown, e))?;
        Ok(Self(Arc::new(Inner {
            conn: Arc::new(Mutex::new(conn)),
            path,
            runs: AtomicUsize::new(1),
            checkpointing: Arc::new(AtomicBool::new(false)),
        })))
    }

    /// Counts `writes` statements and says whether a checkpoint is due
    /// now (every [`CHECKPOINT_EVERY`], one at a time): the caller then runs
    /// [`checkpoint`](Self::checkpoint), which clears the turn.
    fn checkpoint_due(&self, writes: usize) -> bool {
        let before = self.0.runs.fetch_add(writes, Ordering::Relaxed);
        before / CHECKPOINT_EVERY != (before + writes) / CHECKPOINT_EVERY
            && !self.0.checkpointing.swap(true, Ordering::AcqRel)
    }

    /// A passive checkpoint on a connection of its own, here (a failure is
    /// left for the next turn: the WAL keeps everything).
    fn checkpoint(path: &Path, running: &AtomicBool) {
        let done = connect(path).and_then(|c| c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())));
        if let Err(e) = done {
            tracing::debug!(error = %e, "the task ledger's checkpoint did not run");
        }
        running.store(false, Ordering::Release);
    }

    /// Every [`CHECKPOINT_EVERY`] statements, a passive checkpoint on a
    /// blocking thread, beside the writes.
    fn checkpoint_in_turn(&self) {
        if !self.checkpoint_due(1) {
            return;
        }
        let (path, running) = (self.0.path.clone(), self.0.checkpointing.clone());
        tokio::task::spawn_blocking(move || Self::checkpoint(&path, &running));
    }

    /// Runs `op` on this thread, waiting for the connection and for
    /// another process's lock (up to [`BUSY_TIMEOUT`]): for the ledger's
    /// own thread, for opening, and for a drop outside any runtime.
    pub(super) fn run_blocking<T>(
        &self,
        op: impl FnOnce(&mut Connection) -> rusqlite::Result<T>,
    ) -> rusqlite::Result<T> {
        let mut c = self.0.conn.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        c.busy_timeout(BUSY_TIMEOUT)?;
        let done = op(&mut c);
        c.busy_timeout(Duration::ZERO)?;
        done
    }

    /// `writes` statements ran on [`run_blocking`](Self::run_blocking)'s
    /// thread: the checkpoint runs there too when they make its turn.
    pub(super) fn wrote(&self, writes: usize) {
        if writes > 0 && self.checkpoint_due(writes) {
            Self::checkpoint(&self.0.path, &self.0.checkpointing);
        }
    }

    /// Runs `op`: here when the connection is free and the file's lock
    /// answers at once, on a blocking thread otherwise. `op` may run twice
    /// when the first try found the file busy (it changed nothing then).
    pub(super) async fn run<T: Send + 'static>(
        &self,
        op: impl Fn(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> rusqlite::Result<T> {
        self.checkpoint_in_turn();
        let here = match self.0.conn.try_lock() {
            Ok(mut c) => Some(op(&mut c)),
            Err(TryLockError::Poisoned(p)) => Some(op(&mut p.into_inner())),
            Err(TryLockError::WouldBlock) => None,
        };
        match here {
            Some(Err(e)) if e.sqlite_error_code() == Some(ErrorCode::DatabaseBusy) => {}
            Some(done) => return done,
            None => {}
        }
        let shared = self.0.conn.clone();
        tokio::task::spawn_blocking(move || {
            let mut c = shared.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            c.busy_timeout(BUSY_TIMEOUT)?;
            let done = op(&mut c);
            c.busy_timeout(Duration::ZERO)?;
            done
        })
        .await
        .unwrap_or_else(|_| {
            let aborted = rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ABORT);
            Err(rusqlite::Error::SqliteFailure(aborted, Some("the ledger's thread ended".into())))
        })
    }
}

/// A connection to the ledger's file (which exists), waiting for the lock
/// up to [`BUSY_TIMEOUT`].
fn connect(path: &Path) -> rusqlite::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let c = Connection::open_with_flags(path, flags)?;
    c.busy_timeout(BUSY_TIMEOUT)?;
    Ok(c)
}

/// A database error as a ledger error: a damaged or foreign file is `Unreadable`.
pub(super) fn ledger_error(path: &str, e: rusqlite::Error) -> LedgerError {
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => {
            LedgerError::Unreadable { path: path.to_owned(), why: e.to_string() }
        }
        _ => LedgerError::io(path, e),
    }
}
