//! The CLI's task ledger: `tasks.db` in the configuration directory (the
//! credential store's), `$CONDUIT_MCP_LEDGER` to put it elsewhere or turn it
//! off, and what a command does with a file it cannot read: one line, and
//! `--move-ledger-aside` to start a new one.

use crate::credentials::config_dir;
use crate::remote::{Exit, usage};
use conduit_mcp::client::ledger::{DEFAULT_RETENTION, LedgerError, SqliteLedger, TaskLedger};
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

/// The file name of the ledger in the configuration directory.
const FILE: &str = "tasks.db";

/// Milliseconds since the epoch, now.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The ledger options of the commands that read or write it.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct LedgerArgs {
    /// When the task ledger cannot be read (damaged, truncated, another program's file): move it
    /// aside (to FILE.unreadable-TIME) and start a new one.
    #[arg(long)]
    pub(crate) move_ledger_aside: bool,
}

/// Where the ledger is: `$CONDUIT_MCP_LEDGER` (`off`: none), else `tasks.db`
/// in the configuration directory.
fn location() -> Result<Option<PathBuf>, Exit> {
    match std::env::var_os("CONDUIT_MCP_LEDGER").filter(|v| !v.is_empty()) {
        Some(v) if v == "off" => Ok(None),
        Some(v) => Ok(Some(PathBuf::from(v))),
        None => config_dir().map(|d| Some(d.join(FILE))).map_err(usage),
    }
}

impl LedgerArgs {
    /// Opens the ledger (`None` when turned off), pruning what ended more
    /// than the retention ago. A file it cannot read is one line and exit 2,
    /// or, with `--move-ledger-aside`, moved aside and replaced.
    pub(crate) async fn open(&self) -> Result<Option<SqliteLedger>, Exit> {
        let Some(path) = location()? else { return Ok(None) };
        let ledger = match SqliteLedger::open(&path).await {
            Ok(l) => l,
            Err(e @ LedgerError::Unreadable { .. }) if self.move_ledger_aside => {
                let aside = SqliteLedger::move_aside(&path, now_ms())
                    .map_err(|io| usage(format!("{e}; moving it aside failed: {io}")))?;
                eprintln!("moved the unreadable task ledger to {}; a new one starts", aside.display());
                SqliteLedger::open(&path).await.map_err(|e| usage(e.to_string()))?
            }
            Err(e @ LedgerError::Unreadable { .. }) => {
                return Err(usage(format!(
                    "{e}: run again with --move-ledger-aside to move it aside and start a new one"
                )));
            }
            Err(e) => return Err(usage(e)),
        };
        if let Err(e) = ledger.prune(now_ms(), DEFAULT_RETENTION).await {
            return Err(usage(e));
        }
        Ok(Some(ledger))
    }
}
