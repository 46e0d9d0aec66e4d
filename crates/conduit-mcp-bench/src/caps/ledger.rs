//! The task ledger's cost (issue 30): the library client creating tasks on a
//! fresh bench server (memory store) one after another, with no ledger, with
//! a `MemoryLedger`, and with a `SqliteLedger` in a file (also with each call
//! written down before it is sent, as the CLI does); wall time of the
//! creates only (the connection and a few warm-up creates come first).

use super::server::Node;
use crate::wire::TASK_SECONDS;
use conduit_mcp::client::ledger::{LedgerFilter, MemoryLedger, SqliteLedger, TaskLedger};
use conduit_mcp::client::{CallOutcome, ClientBuilder};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Instant;

/// Creates before the measured ones, on the same client.
pub(super) const WARMUP: usize = 10;

/// Where the client writes its tasks down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LedgerMode {
    /// `ClientBuilder::no_ledger()`.
    None,
    /// A `MemoryLedger` (the client's default).
    Memory,
    /// A `SqliteLedger` in a fresh file.
    Sqlite,
    /// The same, each call written down before it is sent too
    /// (`record_calls_in_flight`, as `conduit-mcp call` runs).
    SqliteCalls,
}

impl LedgerMode {
    /// Every mode, in the order each round runs them.
    pub const ALL: [LedgerMode; 4] =
        [LedgerMode::None, LedgerMode::Memory, LedgerMode::Sqlite, LedgerMode::SqliteCalls];

    /// The name on the command line and in the report.
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Memory => "memory",
            Self::Sqlite => "sqlite",
            Self::SqliteCalls => "sqlite+calls",
        }
    }
}

impl FromStr for LedgerMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| format!("unknown ledger {s:?} (none, memory, sqlite, sqlite+calls)"))
    }
}

/// One measurement.
#[derive(Debug, Clone)]
pub struct LedgerSample {
    /// The ledger.
    pub mode: LedgerMode,
    /// The round (0-based).
    pub round: usize,
    /// Tasks created in the measured phase.
    pub tasks: usize,
    /// Its wall time, ms.
    pub wall_ms: f64,
    /// Entries the ledger held at the end (`None` without a ledger).
    pub entries: Option<usize>,
}

impl LedgerSample {
    /// One log line.
    pub fn line(&self) -> String {
        format!(
            "ledger {:<6} round {} {} creates in {:.1} ms ({:.1} µs each), {} entries",
            self.mode.name(),
            self.round + 1,
            self.tasks,
            self.wall_ms,
            self.wall_ms * 1e3 / self.tasks.max(1) as f64,
            self.entries.map_or_else(|| "no".to_owned(), |n| n.to_string())
        )
    }
}

fn remove_db(path: &Path) -> Result<(), String> {
    for suffix in ["", "-wal", "-shm"] {
        let p = PathBuf::from(format!("{}{suffix}", path.display()));
        match std::fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("cannot remove {}: {e}", p.display())),
        }
    }
    Ok(())
}

/// One round of `mode`: a fresh bench server, a client with that ledger
/// (`sqlite_file` removed first), `n` creates timed.
pub async fn run_one(
    server: &Path,
    mode: LedgerMode,
    n: usize,
    round: usize,
    sqlite_file: &Path,
) -> Result<LedgerSample, String> {
    let node = Node::start(server, &["--store".into(), "memory".into()])?;
    let ledger: Option<Arc<dyn TaskLedger>> = match mode {
        LedgerMode::None => None,
        LedgerMode::Memory => Some(Arc::new(MemoryLedger::new())),
        LedgerMode::Sqlite | LedgerMode::SqliteCalls => {
            remove_db(sqlite_file)?;
            let l = SqliteLedger::open(sqlite_file).await.map_err(|e| format!("SQLite ledger: {e}"))?;
            Some(Arc::new(l))
        }
    };
    let mut builder =
        ClientBuilder::http(node.url()).client_info("conduit-mcp-bench-ledger", env!("CARGO_PKG_VERSION"));
    builder = match &ledger {
        None => builder.no_ledger(),
        Some(l) => builder.shared_ledger(l.clone()).record_calls_in_flight(mode == LedgerMode::SqliteCalls),
    };
    let client = builder.connect().await.map_err(|e| format!("connect: {e}"))?;
    let create = async |i: usize| -> Result<(), String> {
        let args = json!({ "seconds": TASK_SECONDS, "label": format!("l{i}") });
        match client.call_tool("slow_compute", args).await.map_err(|e| format!("create: {e}"))? {
            CallOutcome::Task(_) => Ok(()),
            other => Err(format!("slow_compute did not make a task: {other:?}")),
        }
    };
    for i in 0..WARMUP {
        create(i).await?;
    }
    let t0 = Instant::now();
    for i in WARMUP..WARMUP + n {
        create(i).await?;
    }
    let wall_ms = t0.elapsed().as_secs_f64() * 1e3;
    let entries = match &ledger {
        None => None,
        Some(l) => Some(l.list(&LedgerFilter::all()).await.map_err(|e| format!("ledger list: {e}"))?.len()),
    };
    drop(client);
    if matches!(mode, LedgerMode::Sqlite | LedgerMode::SqliteCalls) {
        drop(ledger);
        remove_db(sqlite_file)?;
    }
    Ok(LedgerSample { mode, round, tasks: n, wall_ms, entries })
}

/// What a smoke pass must show: every ledger holds every task created.
pub fn check(samples: &[LedgerSample]) -> Vec<String> {
    samples
        .iter()
        .filter(|s| s.mode != LedgerMode::None && s.entries != Some(s.tasks + WARMUP))
        .map(|s| {
            format!(
                "ledger {} round {}: {:?} entries for {} tasks",
                s.mode.name(),
                s.round + 1,
                s.entries,
                s.tasks + WARMUP
            )
        })
        .collect()
}
