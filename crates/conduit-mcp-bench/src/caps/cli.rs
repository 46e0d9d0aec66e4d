//! `conduit-mcp-bench caps`: its options and what it writes.

use super::{LedgerMode, Options, Part, Sizes, Stores, check, render, run};
use crate::follow::Context;
use clap::Args;
use std::path::PathBuf;

/// The options of `conduit-mcp-bench caps`.
#[derive(Debug, Args)]
pub struct CapsArgs {
    /// The `bench-server` binary.
    #[arg(long)]
    server: PathBuf,
    /// The `bench-as` binary (the DPoP part's authorization server).
    #[arg(long)]
    bench_as: PathBuf,
    /// The parts, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "ledger,events,dpop,webhooks")]
    only: Vec<Part>,
    /// Tiny and strict: one round, small sizes; fails on any error or missing event.
    #[arg(long)]
    smoke: bool,
    /// Rounds (default 3; 1 with --smoke).
    #[arg(long)]
    rounds: Option<usize>,
    /// The ledgers the ledger part measures, comma-separated (none, memory,
    /// sqlite, sqlite+calls; default all: a subset is for profiling one).
    #[arg(long, value_delimiter = ',')]
    ledgers: Vec<LedgerMode>,
    /// Tasks the client creates per ledger measurement (default 1000; 20 with --smoke).
    #[arg(long)]
    tasks: Option<usize>,
    /// Each load measurement, ms (default 5000; 250 with --smoke).
    #[arg(long)]
    measure_ms: Option<u64>,
    /// PostgreSQL for the events part (default: DATABASE_URL; without one, SQLite only).
    #[arg(long)]
    database_url: Option<String>,
    /// The PostgreSQL schema (dropped and recreated for every server).
    #[arg(long, default_value = "conduit_bench_caps")]
    pg_schema: String,
    /// The SQLite store's file (removed before every server).
    #[arg(long, default_value = "target/bench/sqlite/caps.db")]
    sqlite_path: PathBuf,
    /// The SQLite ledger's file (removed before every measurement).
    #[arg(long, default_value = "target/bench/ledger/ledger.db")]
    ledger_path: PathBuf,
    /// Where the section goes.
    #[arg(long, default_value = "target/bench/caps.md")]
    out: PathBuf,
    /// The command line recorded in the section.
    #[arg(long, default_value = "scripts/bench.sh")]
    command: String,
}

/// The 1, 5 and 15-minute load averages.
fn loadavg() -> String {
    let all = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    all.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

fn utc_now() -> String {
    std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

/// Runs `caps` and writes its section; with `--smoke`, fails unless everything ran clean.
pub fn main(a: CapsArgs) -> Result<(), String> {
    crate::ours::valid_schema(&a.pg_schema)?;
    let mut sizes = if a.smoke { Sizes::smoke() } else { Sizes::full() };
    if let Some(r) = a.rounds {
        sizes.rounds = r.max(1);
    }
    if let Some(t) = a.tasks {
        sizes.ledger_tasks = t.max(1);
    }
    if let Some(ms) = a.measure_ms {
        sizes.measure_ms = ms.max(1);
    }
    let database_url = a.database_url.or_else(|| std::env::var("DATABASE_URL").ok()).filter(|u| !u.is_empty());
    let opts = Options {
        server: a.server,
        bench_as: a.bench_as,
        parts: a.only,
        sizes,
        stores: Stores { sqlite: a.sqlite_path.display().to_string(), database_url, pg_schema: a.pg_schema },
        ledger_file: a.ledger_path,
        ledgers: if a.ledgers.is_empty() { LedgerMode::ALL.to_vec() } else { a.ledgers },
    };
    for dir in [opts.ledger_file.parent(), a.out.parent(), a.sqlite_path.parent()].into_iter().flatten() {
        if !dir.as_os_str().is_empty() {
            std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
    }
    let before = loadavg();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    let results = rt.block_on(run(&opts, |line| eprintln!("{line}")))?;
    let ctx = Context {
        command: a.command,
        date: utc_now(),
        load: (before, loadavg()),
        profile: if cfg!(debug_assertions) { "debug" } else { "release" }.into(),
    };
    std::fs::write(&a.out, render(&results, &opts.sizes, &ctx))
        .map_err(|e| format!("cannot write {}: {e}", a.out.display()))?;
    eprintln!("wrote {}", a.out.display());
    if a.smoke {
        check(&results)?;
        eprintln!("caps smoke: every capability ran on and off without errors");
    }
    Ok(())
}
