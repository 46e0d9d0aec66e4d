//! The task ledger: every task a client creates, written down before the
//! caller gets its handle, so a task outlives the program that started it.
//!
//! A [`TaskLedger`] holds one [`LedgerEntry`] per task: the server URL, who
//! the client was there ([`principal`]: an OAuth issuer and subject, or a
//! fingerprint of a static credential, never the credential), the task id,
//! the protocol version, the tool and a digest of its arguments, when it was
//! created and when its TTL ends, the last status seen, and why it was lost
//! when the server no longer knows it.
//!
//! - [`MemoryLedger`]: the default of every [`Client`](super::Client); it
//!   lasts as long as the process.
//! - [`SqliteLedger`] (feature `ledger-sqlite`): an embedded SQLite file,
//!   crash-safe, shared by processes writing at once, owner-only; a record
//!   is one line appended to a journal of the process's own, folded into
//!   the file in the background.
//!
//! [`Client::unfinished`](super::Client::unfinished) reads the ledger back
//! and resumes each unfinished task of its server and principal.

mod entry;
mod error;
mod memory;
pub mod principal;
#[cfg(feature = "ledger-sqlite")]
mod sqlite;

pub use entry::{LedgerEntry, args_digest};
pub use error::LedgerError;
pub use memory::MemoryLedger;
#[cfg(feature = "ledger-sqlite")]
pub use sqlite::SqliteLedger;

use crate::protocol::tasks::TaskStatus;
use async_trait::async_trait;
use std::time::Duration;

/// How many entries a ledger keeps by default. Past it, the oldest ended
/// (terminal or lost) entries go first, then unfinished ones whose TTL has
/// ended (their server has forgotten them); an unfinished task within its
/// TTL is never dropped to make room ([`LedgerError::Full`] instead).
pub const DEFAULT_CAP: usize = 10_000;

/// How long an ended entry is kept by default (7 days), for `task list` to show it.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

/// Why a task is lost when its server answers that it does not know it.
pub const NOT_KNOWN: &str = "the server does not know it any more: it expired, its store lost it (a node keeping \
                             tasks in memory restarted), or it is another principal's";

/// The server as the ledger keys it: the URL parsed and printed back
/// (`http://Host:80/mcp` and `http://host/mcp` are one server); a string
/// that is not an http(s) URL is kept as it is.
pub fn server_key(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => u.to_string(),
        _ => url.to_owned(),
    }
}

/// Which entries [`TaskLedger::list`] returns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LedgerFilter {
    /// Only this server's (its URL as recorded).
    pub server: Option<String>,
    /// Only this principal's.
    pub principal: Option<String>,
    /// Only those neither terminal nor lost.
    pub unfinished_only: bool,
}

impl LedgerFilter {
    /// Every entry.
    pub fn all() -> Self {
        Self::default()
    }

    /// The unfinished entries of `server` recorded as `principal`.
    pub fn unfinished(server: impl Into<String>, principal: impl Into<String>) -> Self {
        Self { server: Some(server.into()), principal: Some(principal.into()), unfinished_only: true }
    }

    /// Whether `e` passes.
    pub fn admits(&self, e: &LedgerEntry) -> bool {
        self.server.as_ref().is_none_or(|s| *s == e.server)
            && self.principal.as_ref().is_none_or(|p| *p == e.principal)
            && (!self.unfinished_only || e.is_unfinished())
    }
}

/// Where a client writes down the tasks it creates.
///
/// Every method is one short write or read; an implementation keeps each
/// record whole (one transaction, or one journal line folded in one).
/// Entries are keyed by (server, task id).
#[async_trait]
pub trait TaskLedger: Send + Sync + std::fmt::Debug {
    /// Records a new task (before its handle is returned). Recording the same
    /// (server, task id) again replaces the entry.
    async fn record(&self, entry: &LedgerEntry) -> Result<(), LedgerError>;

    /// The last status seen of a task, at `now_ms`.
    async fn set_status(&self, server: &str, task_id: &str, status: TaskStatus, now_ms: i64)
    -> Result<(), LedgerError>;

    /// The server no longer knows the task (or it cannot be read from here): why, at `now_ms`.
    async fn mark_lost(&self, server: &str, task_id: &str, reason: &str, now_ms: i64) -> Result<(), LedgerError>;

    /// The entries `filter` admits, oldest first.
    async fn list(&self, filter: &LedgerFilter) -> Result<Vec<LedgerEntry>, LedgerError>;

    /// Forgets the entries of this task id (on any server); how many there were.
    async fn forget(&self, task_id: &str) -> Result<usize, LedgerError>;

    /// Records `entry` in place of the call in flight keyed `call_key` on
    /// the same server (its answer came: a task). Provided as a record then
    /// a forget; a ledger that can do both in one transaction should.
    async fn replace(&self, call_key: &str, entry: &LedgerEntry) -> Result<(), LedgerError> {
        self.record(entry).await?;
        self.forget(call_key).await.map(drop)
    }

    /// Removes the entries last changed more than `retention` before
    /// `now_ms` that ended (terminal or lost) or whose TTL ended that long
    /// ago too (their server has forgotten them; one seen since is kept, to
    /// be reported lost), and the calls in flight made more than `retention`
    /// ago (an answer that never came by then never will); how many went.
    async fn prune(&self, now_ms: i64, retention: Duration) -> Result<usize, LedgerError>;
}
