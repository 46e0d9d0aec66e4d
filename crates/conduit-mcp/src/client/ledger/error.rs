//! [`LedgerError`]: what can go wrong writing or reading the task ledger.

use std::fmt;

/// A ledger failure. The ledger's file is named; its contents never are.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LedgerError {
    /// The file is not a ledger this client can read: not a database,
    /// truncated, damaged, or another program's. Nothing in it is used;
    /// move it aside to start a new one.
    #[error("{path} is not a task ledger conduit-mcp can read ({why})")]
    Unreadable {
        /// The file.
        path: String,
        /// What is wrong with it.
        why: String,
    },
    /// Every entry is an unfinished task and there are `cap` of them: none is
    /// dropped to make room (forget some, or raise the cap).
    #[error("the task ledger holds {cap} unfinished tasks, its cap: forget some to record more")]
    Full {
        /// The cap.
        cap: usize,
    },
    /// Reading or writing failed (the disk, the file system, a lock held too long).
    #[error("task ledger {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error underneath.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl LedgerError {
    /// An I/O failure on `path`.
    pub(crate) fn io(path: impl fmt::Display, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Io { path: path.to_string(), source: Box::new(source) }
    }
}
