//! "Stores": ours on each task store, side by side (W4, W2, W3 and W5's p99).

use super::format::show_rps;
use super::select::{conns_of, spread, stores_of};
use crate::harness::{Peer, Results, Workload};
use crate::stats::Spread;
use std::fmt::Write as _;

/// "Stores": create and `tasks/get` rates for each store (W4, W2, W3) and W5 latency, side by side.
pub(super) fn write(o: &mut String, r: &Results) {
    let stores = stores_of(r);
    if stores.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "## Stores — create and tasks/get rates for each store
"
    );
    let _ = writeln!(
        o,
        "Ours on each task store (medians over rounds, [range]): W4 creates from an empty store, W2 reads one live \
         task, W3 reads random ids among the tasks W4 created, W5 is the one-node notification p99. The SQL stores \
         start from an empty database for every run (`bench-server --fresh`: the SQLite file removed, the PostgreSQL \
         schema dropped); their W4 stops at the {} ms cap.\n",
        r.plan.as_ref().map_or(0, |p| p.sql_create_cap_ms)
    );
    let _ = writeln!(
        o,
        "| store | conns | W4 creates/s | W4 tasks created | W2 `tasks/get`/s | W3 `tasks/get`/s | W3 p99 µs | W5 p99 µs (1 node) |"
    );
    let _ = writeln!(o, "|---|---:|---:|---:|---:|---:|---:|---:|");
    for &store in &stores {
        let p = Peer::Ours(store);
        for c in conns_of(r) {
            let rate = |w| spread(r, w, p, c, |s| s.rps).map_or("–".into(), |s| show_rps(&s));
            let created = spread(r, Workload::W4, p, c, |s| s.table.unwrap_or(0) as f64).map_or("–".into(), |s| {
                let capped =
                    r.samples.iter().any(|s| s.workload == Workload::W4 && s.peer == p && s.conns == c && s.capped);
                format!("{}{}", s.show(0), if capped { " (time cap)" } else { "" })
            });
            let w3p99 = spread(r, Workload::W3, p, c, |s| s.p99_us).map_or("–".into(), |s| s.show(1));
            let w5: Vec<f64> = r
                .notify
                .iter()
                .filter(|n| n.peer == p && n.nodes == 1 && (n.conns == c || (c > n.tasks && n.conns == n.tasks)))
                .map(|n| n.p99_us)
                .collect();
            let w5 = Spread::of(&w5).map_or("–".into(), |s| s.show(1));
            let _ = writeln!(
                o,
                "| {store} | {c} | {} | {created} | {} | {} | {w3p99} | {w5} |",
                rate(Workload::W4),
                rate(Workload::W2),
                rate(Workload::W3),
                store = crate::ours::StoreKind::from(store),
            );
        }
    }
    let _ = writeln!(o);
}
