//! `docs/benchmarks.md`: machine, versions, commands, tables, ratios, targets.
//!
//! The file is regenerated on every run; only the hand-written analysis between
//! [`ANALYSIS_BEGIN`] and [`ANALYSIS_END`] is carried over from the previous file.
//!
//! - `select.rs`: numbers picked out of the results; `format.rs`: how they are shown;
//! - `setup.rs`: the machine, versions, method and wire differences;
//! - `workloads.rs`: the ratios at a glance and the W1–W4 tables;
//! - `default_path.rs`: the fixture on `http::serve` beside the bench server;
//! - `targets.rs`: the targets and their verdicts; `stores.rs`: the stores side by side;
//! - `stateful.rs`: W5, W6 and W7; `legacy_sessions.rs`: W8 and W9 (2025-11-25 sessions);
//! - `analysis.rs`: the hand-written part.

mod analysis;
mod default_path;
mod format;
mod legacy_sessions;
mod select;
mod setup;
mod stateful;
mod stores;
mod targets;
mod workloads;

pub use analysis::{ANALYSIS_BEGIN, ANALYSIS_END};
pub use select::{peers, spread};

use crate::harness::{Plan, Results};
use std::fmt::Write as _;

/// Renders the whole document. `previous` is the old file (its analysis is kept);
/// `chart` the chart's file name relative to the document.
pub fn render(r: &Results, previous: Option<&str>, chart: &str) -> String {
    let peers = peers(r);
    let plan = r.plan.clone().unwrap_or_else(Plan::full);
    let mut o = String::new();
    setup::write(&mut o, r, &plan);
    let _ = writeln!(o, "## Results at a glance (W1–W4, medians)\n");
    workloads::glance(&mut o, r);
    let _ = writeln!(o, "\n![W1–W4 requests/s for every server]({chart})\n");
    default_path::write(&mut o, r);
    let _ = writeln!(o, "## Targets (issue 5)\n");
    targets::write(&mut o, r);
    let _ = writeln!(o);

    stores::write(&mut o, r);

    workloads::sections(&mut o, r, &peers, plan.bucket);
    stateful::notify(&mut o, r);
    stateful::sweep(&mut o, r);
    stateful::memory(&mut o, r, &peers, plan.sweep_tasks);
    legacy_sessions::write(&mut o, r);
    let _ = writeln!(o, "## Analysis\n");
    o.push_str(&analysis::analysis(previous));
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::{Peer, Sample, Store, Workload};

    #[test]
    fn every_store_and_the_two_node_w5_get_rows() {
        use crate::harness::NotifySample;
        let mut r = Results { plan: Some(Plan::smoke()), ..Results::default() };
        for (i, store) in [Store::Memory, Store::Sqlite, Store::Postgres].into_iter().enumerate() {
            for workload in [Workload::W2, Workload::W3, Workload::W4] {
                r.samples.push(Sample {
                    workload,
                    peer: Peer::Ours(store),
                    conns: 50,
                    round: 0,
                    requests: 100,
                    errors: 0,
                    secs: 1.0,
                    rps: 1_000.0 * (i + 1) as f64,
                    p50_us: 1.0,
                    p99_us: 2.0,
                    cpu_us_per_req: 3.0,
                    peak_rss_kib: 1_024,
                    table: Some(100),
                    buckets: Vec::new(),
                    capped: store == Store::Postgres && workload == Workload::W4,
                    bytes_per_task: None,
                    first_error: None,
                });
            }
        }
        for nodes in [1, 2] {
            r.notify.push(NotifySample {
                peer: Peer::Ours(Store::Postgres),
                nodes,
                conns: 50,
                round: 0,
                tasks: 20,
                received: 20,
                p50_us: 1_000.0,
                p99_us: 7_000.0 * nodes as f64,
                max_us: 9_000.0,
            });
        }
        let doc = render(&r, None, "c.svg");
        assert!(doc.contains("create and tasks/get rates for each store"), "{doc}");
        assert!(doc.contains("| sqlite | 50 | 2,000 | 100 | 2,000 | 2,000 |"), "{doc}");
        assert!(doc.contains("| postgres | 50 | 3,000 | 100 (time cap) |"), "{doc}");
        assert!(doc.contains("| 50 | conduit-mcp (postgres, 2 nodes) | 20/20 | 1000.0 | 14000.0 |"), "{doc}");
        assert!(
            doc.contains("| W5 p99 < 50 ms across two nodes (PostgreSQL; worst run) | 14.00 ms | **met** |"),
            "{doc}"
        );
        assert!(doc.contains("SQLite 2,000 /s; PostgreSQL 3,000 /s"), "{doc}");
    }
}
