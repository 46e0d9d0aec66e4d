//! The workloads only a stateful server has: W5 (notification latency), W6 (the
//! janitor sweep) and W7 (memory per idle task).

use super::select::{conns_of, spread};
use crate::harness::{NotifySample, Peer, Results, Workload, notify_label};
use crate::stats::{Spread, thousands};
use std::fmt::Write as _;

/// W5: a row per connection count and server (two-node PostgreSQL on its own row).
pub(super) fn notify(o: &mut String, r: &Results) {
    let _ = writeln!(o, "## W5 — notification latency (`Tasks::complete` → `notifications/tasks`)\n");
    let _ = writeln!(o, "| listen streams | server | received | p50 µs | p99 µs | max µs |");
    let _ = writeln!(o, "|---:|---|---:|---:|---:|---:|");
    let mut kinds: Vec<(Peer, usize)> = Vec::new();
    for n in &r.notify {
        if !kinds.contains(&(n.peer, n.nodes)) {
            kinds.push((n.peer, n.nodes));
        }
    }
    for c in conns_of(r) {
        let at_c = |n: &&NotifySample| n.conns == c || (c > n.tasks && n.conns == n.tasks);
        if !r.notify.iter().any(|n| at_c(&n)) {
            continue;
        }
        for &(peer, nodes) in &kinds {
            let runs: Vec<&NotifySample> =
                r.notify.iter().filter(at_c).filter(|n| n.peer == peer && n.nodes == nodes).collect();
            if runs.is_empty() {
                continue;
            }
            let sp = |f: fn(&NotifySample) -> f64| {
                Spread::of(&runs.iter().map(|n| f(n)).collect::<Vec<_>>()).map_or("–".into(), |s| s.show(1))
            };
            let recv: usize = runs.iter().map(|n| n.received).sum();
            let want: usize = runs.iter().map(|n| n.tasks).sum();
            let _ = writeln!(
                o,
                "| {c} | {} | {recv}/{want} | {} | {} | {} |",
                notify_label(peer, nodes),
                sp(|n| n.p50_us),
                sp(|n| n.p99_us),
                sp(|n| n.max_us)
            );
        }
        let _ = writeln!(o, "| {c} | rmcp 3.11 | n/a: no `taskIds` listen filter | | | |");
    }
    if !kinds.iter().any(|(_, nodes)| *nodes > 1) {
        let _ = writeln!(o, "| – | conduit-mcp (postgres, 2 nodes) | not run: needs --stores postgres | | | |");
    }
    let _ = writeln!(o);
}

/// W6: a row per number of concurrent getters.
pub(super) fn sweep(o: &mut String, r: &Results) {
    let _ = writeln!(o, "## W6 — janitor sweep (in process, `MemoryStore`)\n");
    let _ = writeln!(
        o,
        "| getters | tasks (expired) | removed | sweep ms | `tasks/get` p50 µs, no sweep | p99 µs, no sweep | p99 µs during the sweep | max µs during | calls during |"
    );
    let _ = writeln!(o, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for c in conns_of(r) {
        let runs: Vec<_> = r.sweep.iter().map(|s| &s.result).filter(|s| s.getters == c).collect();
        if runs.is_empty() {
            continue;
        }
        let sp = |f: fn(&crate::sweep::SweepResult) -> f64, d| {
            Spread::of(&runs.iter().map(|x| f(x)).collect::<Vec<_>>()).map_or("–".into(), |s| s.show(d))
        };
        let _ = writeln!(
            o,
            "| {c} | {} ({}) | {} | {} | {} | {} | {} | {} | {} |",
            thousands((runs[0].live + runs[0].expired) as f64),
            thousands(runs[0].expired as f64),
            sp(|x| x.removed as f64, 0),
            sp(|x| x.sweep_ms, 1),
            sp(|x| x.baseline_p50_us, 1),
            sp(|x| x.baseline_p99_us, 1),
            sp(|x| x.during_p99_us, 1),
            sp(|x| x.during_max_us, 1),
            sp(|x| x.during_samples as f64, 0)
        );
    }
    let _ = writeln!(o, "\nrmcp: n/a (no janitor; every call sweeps inline). Echo: n/a.\n");
}

/// W7: a row per server with state and connection count, and the store's own share.
pub(super) fn memory(o: &mut String, r: &Results, peers: &[Peer], sweep_tasks: usize) {
    let _ = writeln!(o, "## W7 — memory per idle task\n");
    let _ = writeln!(o, "| server | conns used to create | tasks | bytes per task (ΔVmRSS / tasks) |");
    let _ = writeln!(o, "|---|---:|---:|---:|");
    for &p in peers.iter().filter(|p| **p != Peer::Echo) {
        for c in conns_of(r) {
            let Some(b) = spread(r, Workload::W4, p, c, |s| s.bytes_per_task.unwrap_or(f64::NAN)) else { continue };
            let t = spread(r, Workload::W4, p, c, |s| s.table.unwrap_or(0) as f64).map_or("–".into(), |s| s.show(0));
            let _ = writeln!(o, "| {} | {c} | {t} | {} |", p.label(), b.show(0));
        }
    }
    let store: Vec<f64> = r.sweep.iter().map(|s| s.result.store_bytes_per_task).collect();
    if let Some(s) = Spread::of(&store) {
        let _ = writeln!(
            o,
            "| conduit-mcp `MemoryStore` alone (W6 population, no spawned work, no HTTP) | – | {} | {} |",
            thousands(sweep_tasks as f64),
            s.show(0)
        );
    }
    let _ = writeln!(o, "| axum echo | – | – | n/a (no state) |\n");
}
