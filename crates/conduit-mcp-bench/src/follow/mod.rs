//! The client benchmark (issue 12): the library client (`conduit_mcp::client`)
//! following 1 000 tasks of a fresh bench server to completion, by push over
//! its one `subscriptions/listen` stream and by polling at the server's
//! `pollIntervalMs`, side by side in one invocation.
//!
//! - `server.rs`: a `bench-server` child (memory store) and the admin call that
//!   completes its tasks;
//! - `cpu.rs`: CPU time of a whole process, from `/proc/PID/task/*/schedstat`;
//! - `round.rs`: one measured round of one mode;
//! - `report.rs`: the "Client: following 1 000 tasks" section of `docs/benchmarks.md`.
//!
//! The client runs in the bench process itself, on a current-thread runtime,
//! and nothing else runs in that process during the measured phase but one
//! admin POST and a timestamp per terminal event: its CPU is the process's own.

mod cpu;
mod report;
mod round;
mod server;

pub use report::{Context, render};
pub use round::{Mode, Sample, run_round};

use std::path::PathBuf;

/// What `conduit-mcp-bench follow` runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// The `bench-server` binary.
    pub server: PathBuf,
    /// Tasks followed per round.
    pub tasks: usize,
    /// Rounds per mode.
    pub rounds: usize,
    /// The modes, in order (each round runs every mode, one after the other).
    pub modes: Vec<Mode>,
}

/// Runs every round of every mode, interleaved (listen, poll, listen, poll…),
/// each on a fresh server; `log` gets one line per measurement.
pub async fn run(opts: &Options, log: impl Fn(&str)) -> Result<Vec<Sample>, String> {
    let mut out = Vec::new();
    for round in 0..opts.rounds {
        for &mode in &opts.modes {
            let s = run_round(&opts.server, mode, opts.tasks, round).await?;
            log(&s.line());
            out.push(s);
        }
    }
    Ok(out)
}

/// What a smoke pass must show: every terminal event seen, one listen stream
/// in listen mode and none in poll mode.
pub fn check(samples: &[Sample]) -> Result<(), String> {
    let problems: Vec<String> = samples
        .iter()
        .filter_map(|s| {
            let streams_ok = match s.mode {
                Mode::Listen => s.listen_streams == 1,
                Mode::Poll => s.listen_streams == 0,
            };
            (s.terminal != s.tasks || !streams_ok).then(|| {
                format!(
                    "{} round {}: {} of {} terminal events, {} listen streams",
                    s.mode.name(),
                    s.round + 1,
                    s.terminal,
                    s.tasks,
                    s.listen_streams
                )
            })
        })
        .collect();
    if problems.is_empty() { Ok(()) } else { Err(format!("follow failed:\n  {}", problems.join("\n  "))) }
}
