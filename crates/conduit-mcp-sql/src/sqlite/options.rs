//! [`SqliteOptions`]: which file, and the few knobs worth turning.

use crate::error::OpenError;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
use std::str::FromStr;
use std::time::Duration;

/// How to open a [`SqliteStore`](crate::SqliteStore): the file, and the few knobs worth turning.
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
#[must_use]
pub struct SqliteOptions {
    pub(super) target: String,
    pub(super) readers: u32,
    pub(super) busy_timeout: Duration,
    pub(super) operation_timeout: Duration,
    pub(super) full_sync: bool,
    pub(super) check_integrity: bool,
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
            operation_timeout: Duration::from_secs(10),
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
    /// same file before it fails with
    /// [`StoreError::Backend`](conduit_mcp::task::StoreError::Backend) (default 5 s).
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    /// How long one store operation may take, from waiting for a connection
    /// (the one writer is shared) to its last statement (default 10 s; keep
    /// it above [`busy_timeout`](Self::busy_timeout)). Past it the operation
    /// fails with [`StoreError::Backend`](conduit_mcp::task::StoreError::Backend)
    /// — a request gets `-32603 "Task store unavailable"`, a task's own
    /// writes are retried — instead of waiting on a stalled disk.
    pub fn operation_timeout(mut self, timeout: Duration) -> Self {
        self.operation_timeout = timeout;
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

    pub(super) fn is_memory(&self) -> bool {
        let t = self.target.trim();
        t == ":memory:" || t == "sqlite::memory:" || t.contains("mode=memory")
    }

    /// The sqlx options for this file: WAL (unless in memory), the sync
    /// level, the busy timeout, a larger page cache.
    pub(super) fn connect_options(&self) -> Result<SqliteConnectOptions, OpenError> {
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
}
