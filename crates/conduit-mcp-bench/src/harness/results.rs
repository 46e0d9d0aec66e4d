//! What a pass measured: one [`Sample`] per run of W1–W4 and W8 (W7 rides on W4), one
//! [`NotifySample`] per W5 run, one [`SweepSample`] per W6 run, one
//! [`SessionMemSample`] per W9 run, and the [`Meta`]
//! of the machine, all gathered in [`Results`] (saved as JSON, read back by
//! `conduit-mcp-bench report`).

use super::plan::{Peer, Plan, Workload};
use crate::ours::StoreKind;
use crate::sweep::SweepResult;
use serde::{Deserialize, Serialize};

fn one() -> usize {
    1
}

/// One measured run of one workload on one server.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Sample {
    /// Which workload.
    pub workload: Workload,
    /// Which server.
    pub peer: Peer,
    /// Connections.
    pub conns: usize,
    /// Round (0-based).
    pub round: usize,
    /// Responses received.
    pub requests: u64,
    /// Failed responses.
    pub errors: u64,
    /// Length of the measured phase, s.
    pub secs: f64,
    /// Responses per second.
    pub rps: f64,
    /// Median latency, µs.
    pub p50_us: f64,
    /// 99th percentile latency, µs.
    pub p99_us: f64,
    /// Server CPU (user + system) per response, µs.
    pub cpu_us_per_req: f64,
    /// Server peak resident memory (`VmHWM`) at the end of the phase, KiB.
    pub peak_rss_kib: u64,
    /// W3: tasks in the table read; W4: tasks created.
    pub table: Option<usize>,
    /// W4: creates per second in each successive bucket.
    pub buckets: Vec<f64>,
    /// W4: stopped by the time cap before the table was full.
    pub capped: bool,
    /// W4 (W7): resident memory added per created task once idle, bytes.
    pub bytes_per_task: Option<f64>,
    /// The first failure, if any.
    pub first_error: Option<String>,
}

#[cfg(test)]
impl Sample {
    /// A sample for report tests: `rps` requests/s at 50 connections, round 0, no errors,
    /// p99 `rps / 1000` µs, 10 µs of CPU per request.
    pub(crate) fn probe(workload: Workload, peer: Peer, rps: f64) -> Self {
        Self {
            workload,
            peer,
            conns: 50,
            round: 0,
            requests: 100,
            errors: 0,
            secs: 1.0,
            rps,
            p50_us: 1.0,
            p99_us: rps / 1_000.0,
            cpu_us_per_req: 10.0,
            peak_rss_kib: 1_024,
            table: None,
            buckets: Vec::new(),
            capped: false,
            bytes_per_task: None,
            first_error: None,
        }
    }
}

/// One W5 run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NotifySample {
    /// Which server.
    pub peer: Peer,
    /// Nodes: 1, or 2 when the listen streams are on a second server sharing the
    /// PostgreSQL schema with the one that creates and completes the tasks.
    #[serde(default = "one")]
    pub nodes: usize,
    /// Listen streams.
    pub conns: usize,
    /// Round (0-based).
    pub round: usize,
    /// Tasks completed.
    pub tasks: usize,
    /// Notifications received.
    pub received: usize,
    /// Median time from `complete` to arrival, µs.
    pub p50_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
    /// Slowest, µs.
    pub max_us: f64,
}

/// How W5 tables and progress lines name a server: `conduit-mcp (postgres, 2 nodes)` for two nodes.
pub fn notify_label(peer: Peer, nodes: usize) -> String {
    match (peer, nodes) {
        (Peer::Ours(s), n) if n > 1 => format!("conduit-mcp ({}, {n} nodes)", StoreKind::from(s)),
        (p, _) => p.label(),
    }
}

/// One W6 run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepSample {
    /// Round (0-based).
    pub round: usize,
    /// The in-process measurement.
    pub result: SweepResult,
}

/// The machine and the software measured.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Meta {
    /// CPU model.
    pub cpu: String,
    /// Cores available.
    pub cores: usize,
    /// Memory, GiB.
    pub mem_gib: f64,
    /// Kernel release.
    pub kernel: String,
    /// `rustc -V`.
    pub rustc: String,
    /// rmcp version from the peer's lockfile.
    pub rmcp: String,
    /// conduit-mcp version and commit.
    pub conduit: String,
    /// When the run started (UTC).
    pub date: String,
    /// The command that produced the results.
    pub command: String,
    /// The response body sizes the echo answers with (greet, tasks/get, create), bytes.
    pub echo_sizes: [usize; 3],
    /// rmcp's body sizes for the same three requests, bytes (zero without rmcp).
    #[serde(default)]
    pub rmcp_sizes: [usize; 3],
    /// The fixture's body sizes for the same three requests, bytes (zero without it).
    #[serde(default)]
    pub fixture_sizes: [usize; 3],
    /// `/proc/loadavg` when the pass started (other work on the machine skews the numbers).
    #[serde(default)]
    pub load_before: String,
    /// Wall time of the whole pass, s.
    pub wall_secs: f64,
}

/// Everything a pass measured.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Results {
    /// Machine and versions.
    pub meta: Meta,
    /// The plan.
    pub plan: Option<Plan>,
    /// W1–W4 (W7 rides on W4).
    pub samples: Vec<Sample>,
    /// W5.
    pub notify: Vec<NotifySample>,
    /// W6.
    pub sweep: Vec<SweepSample>,
    /// W9.
    #[serde(default)]
    pub sessions: Vec<SessionMemSample>,
}

/// One W9 run: resident memory per idle legacy session.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SessionMemSample {
    /// Which server (rmcp: its stateful session mode).
    pub peer: Peer,
    /// Round (0-based).
    pub round: usize,
    /// Sessions opened (`initialize` then `notifications/initialized`), all left idle.
    pub sessions: usize,
    /// `VmRSS` before the first session, KiB.
    pub rss_before_kib: u64,
    /// `VmRSS` a second after the last, KiB.
    pub rss_after_kib: u64,
    /// (after − before) / sessions, bytes.
    pub bytes_per_session: f64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::Store;

    #[test]
    fn results_saved_before_two_node_w5_still_read() {
        let old = r#"{"peer":{"Ours":"memory"},"conns":1,"round":0,"tasks":10,"received":10,
                      "p50_us":1.0,"p99_us":2.0,"max_us":3.0}"#;
        let n: NotifySample = serde_json::from_str(old).expect("old W5 sample");
        assert_eq!(n.nodes, 1);
    }

    #[test]
    fn two_node_rows_are_named() {
        assert_eq!(notify_label(Peer::Ours(Store::Postgres), 2), "conduit-mcp (postgres, 2 nodes)");
        assert_eq!(notify_label(Peer::Ours(Store::Postgres), 1), "conduit-mcp (postgres)");
        assert_eq!(notify_label(Peer::Ours(Store::Memory), 1), "conduit-mcp");
    }
}
