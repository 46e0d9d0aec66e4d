//! The benchmark plan and its runs: servers started fresh for every run, in the
//! order A B C A B C A B C, measured from outside through `/proc`.
//!
//! - `plan.rs`: the workloads, the servers under test and the [`Plan`] of a pass;
//! - `results.rs`: what a pass measured ([`Results`] and its samples);
//! - `process.rs`: the servers' binaries ([`Binaries`]) and processes;
//! - `runner.rs`: [`Harness::run`], the order of a pass, and the W1–W4 drivers
//!   (W7 rides on W4);
//! - `notify.rs`: the W5 driver (notification latency);
//! - `janitor.rs`: the W6 driver (the janitor sweep, in a process of its own);
//! - `legacy_sessions.rs`: the W8 and W9 drivers (2025-11-25 sessions; rmcp in its stateful mode).

mod janitor;
mod legacy_sessions;
mod notify;
mod plan;
mod process;
mod results;
mod runner;

pub use plan::{Peer, Plan, Store, Workload};
pub use process::Binaries;
pub use results::{Meta, NotifySample, Results, Sample, SessionMemSample, SweepSample, notify_label};

use crate::load;
use crate::procfs;

/// Runs a plan and collects the results.
pub struct Harness {
    bins: Binaries,
    plan: Plan,
    ticks: u64,
    echo_sizes: [usize; 3],
    /// Progress lines go here.
    log: Box<dyn Fn(&str) + Send + Sync>,
}

fn io_err(e: std::io::Error) -> String {
    e.to_string()
}

/// A task id of the same shape as ours, for the echo (which has no tasks).
fn fake_id(n: u64) -> String {
    let mut s = format!("{:016x}{:016x}{:011x}", load::mix(n), load::mix(n + 1), load::mix(n + 2));
    s.truncate(43);
    s
}

fn us(ns: u32) -> f64 {
    f64::from(ns) / 1000.0
}

impl Harness {
    /// A harness for these binaries and this plan; progress goes to `log`.
    pub fn new(bins: Binaries, plan: Plan, log: impl Fn(&str) + Send + Sync + 'static) -> Self {
        Self { bins, plan, ticks: procfs::clock_ticks(), echo_sizes: [0; 3], log: Box::new(log) }
    }
}
