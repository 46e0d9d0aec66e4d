//! `conduit-mcp-soak`: the reference server's soak (issue 11; not in CI, not a
//! benchmark). `scripts/soak.sh` builds it in release and runs every part.
//!
//! ```text
//! conduit-mcp-soak churn --server target/release/conduit-mcp [--warmup 1000] [--cycles 30000]
//! conduit-mcp-soak bounds --server target/release/conduit-mcp
//! conduit-mcp-soak mixed --server target/release/conduit-mcp --store sqlite|postgres [--minutes 10]
//! ```
//!
//! Exit status: 0 on a pass, 1 on a failed verdict or an error.

use clap::Parser;
use conduit_mcp_bench::soak::{self, SoakArgs};
use std::process::ExitCode;

fn main() -> ExitCode {
    match soak::run(SoakArgs::parse()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("the soak failed its verdict");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
