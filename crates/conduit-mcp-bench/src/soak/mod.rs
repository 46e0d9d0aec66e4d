//! Soak drivers for the reference server (issue 11, "Proven, not hoped"): not
//! a benchmark, so its own binary, `conduit-mcp-soak` (`src/bin/soak.rs`), run by
//! `scripts/soak.sh` (not in CI). It lives beside the benchmarks for their
//! HTTP/1.1 client and process handling, nothing else.
//!
//! - `conduit-mcp-soak churn` ([`churn`]): RSS growth over 30 000 listen
//!   open/close cycles naming a live task, RSS of a full table of the largest
//!   creates against the byte budget, and what one client can make a node hold
//!   through padded 2025-11-25 sessions ([`bounds`]);
//!   (`conduit-mcp-soak bounds` runs that last part alone);
//! - `conduit-mcp-soak mixed` ([`mixed`]): minutes of mixed load on SQLite or
//!   PostgreSQL, then a verdict ([`report`]).
//!
//! The server is `conduit-mcp serve` as a child process ([`server`]); requests go
//! through [`rpc`] on the bench's own HTTP/1.1 client.

pub mod bounds;
pub mod churn;
pub mod ledger;
pub mod mixed;
pub mod report;
pub mod rpc;
pub mod server;
pub mod workers;

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// Soaks the reference server (`conduit-mcp serve`): listen churn, bounds, mixed load.
#[derive(Debug, Parser)]
#[command(name = "conduit-mcp-soak", version)]
pub struct SoakArgs {
    #[command(subcommand)]
    command: SoakCmd,
}

#[derive(Debug, Subcommand)]
enum SoakCmd {
    /// Listen churn and the byte budget (memory store).
    Churn(ChurnArgs),
    /// Mixed load on SQLite or PostgreSQL, then the verdict.
    Mixed(mixed::MixedArgs),
    /// Only churn's part 3: what one client can make a node hold, then its verdict.
    Bounds(BoundsArgs),
}

#[derive(Debug, Args)]
struct BoundsArgs {
    /// The `conduit-mcp` binary.
    #[arg(long)]
    server: PathBuf,
}

#[derive(Debug, Args)]
struct ChurnArgs {
    /// The `conduit-mcp` binary.
    #[arg(long)]
    server: PathBuf,
    /// Cycles before the first RSS reading.
    #[arg(long, default_value_t = 1_000)]
    warmup: u64,
    /// Cycles measured.
    #[arg(long, default_value_t = 30_000)]
    cycles: u64,
}

/// Runs one soak: `Ok(true)` on a pass, `Ok(false)` on a failed verdict.
pub fn run(args: SoakArgs) -> Result<bool, String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    match args.command {
        SoakCmd::Churn(a) => rt.block_on(churn::run(&a.server, a.warmup, a.cycles)),
        SoakCmd::Mixed(a) => rt.block_on(mixed::run(a)),
        SoakCmd::Bounds(a) => rt.block_on(async {
            let pass = bounds::run(&a.server).await?.pass();
            eprintln!("verdict: {}", if pass { "PASS" } else { "FAIL" });
            Ok(pass)
        }),
    }
}
