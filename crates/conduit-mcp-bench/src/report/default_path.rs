//! "The library's default path": the conformance fixture served by `http::serve`,
//! measured on W1 and W2 beside the bench server, rmcp and the echo, with its
//! ratios to each.

use super::format::show_ratio;
use super::select::{OURS, conns_of, median, ratio};
use crate::harness::{Peer, Results, Sample, Workload};
use crate::stats::thousands;
use std::fmt::Write as _;

/// Writes the section: a row per workload (W1, W2) and connection count, or a
/// line saying the fixture was not part of the pass.
pub(super) fn write(o: &mut String, r: &Results) {
    let _ = writeln!(o, "## The library's default path: the fixture on `http::serve` (W1, W2, medians)\n");
    let _ = writeln!(
        o,
        "Users serve with `http::serve`, or mount `http::router` in their own axum app; the bench server mounts \
         `http::router` in an app of its own and sets `TCP_NODELAY` on every socket. *conduit-mcp fixture \
         (http::serve)* is the conformance fixture binary as it ships, measured in the same interleaved rounds: these \
         are the numbers a user of the library's default path sees.\n"
    );
    if !r.samples.iter().any(|s| s.peer == Peer::Fixture) {
        let _ = writeln!(o, "_Not part of this pass: `conduit-mcp-bench run` was given no `--fixture`._\n");
        return;
    }
    let _ = writeln!(
        o,
        "| workload | conns | fixture requests/s | bench server requests/s | rmcp requests/s | echo requests/s | \
         fixture vs bench server | fixture vs rmcp | fixture vs echo | p99 µs (fixture / bench server) | \
         CPU µs/req (fixture / bench server / rmcp / echo) |"
    );
    let _ = writeln!(o, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|");
    for w in [Workload::W1, Workload::W2] {
        for c in conns_of(r) {
            let rps = |p| median(r, w, p, c, |s| s.rps);
            let (f, b, m, e) = (rps(Peer::Fixture), rps(OURS), rps(Peer::Rmcp), rps(Peer::Echo));
            if f.is_none() {
                continue;
            }
            let show = |x: Option<f64>| x.map_or("–".into(), thousands);
            let one =
                |p, metric: fn(&Sample) -> f64| median(r, w, p, c, metric).map_or("–".into(), |x| format!("{x:.1}"));
            let p99 = |p| one(p, |s| s.p99_us);
            let cpu = |p| one(p, |s| s.cpu_us_per_req);
            let _ = writeln!(
                o,
                "| {} | {c} | {} | {} | {} | {} | {} | {} | {} | {} / {} | {} / {} / {} / {} |",
                w.name(),
                show(f),
                show(b),
                show(m),
                show(e),
                show_ratio(ratio(f, b)),
                show_ratio(ratio(f, m)),
                show_ratio(ratio(f, e)),
                p99(Peer::Fixture),
                p99(OURS),
                cpu(Peer::Fixture),
                cpu(OURS),
                cpu(Peer::Rmcp),
                cpu(Peer::Echo)
            );
        }
    }
    let _ = writeln!(o);
}

#[cfg(test)]
mod tests {
    use crate::harness::{Peer, Plan, Results, Sample, Store, Workload};

    #[test]
    fn the_fixture_gets_its_ratios_and_its_rows() {
        let mut r = Results { plan: Some(Plan::smoke()), ..Results::default() };
        for w in [Workload::W1, Workload::W2] {
            for (peer, rps) in [
                (Peer::Ours(Store::Memory), 40_000.0),
                (Peer::Fixture, 30_000.0),
                (Peer::Rmcp, 20_000.0),
                (Peer::Echo, 60_000.0),
            ] {
                r.samples.push(Sample::probe(w, peer, rps));
            }
        }
        let doc = super::super::render(&r, None, "c.svg");
        let row = "| W1 | 50 | 30,000 | 40,000 | 20,000 | 60,000 | 0.75× | 1.50× | 0.50× | 30.0 / 40.0 | 10.0 / 10.0 / 10.0 / 10.0 |";
        assert!(doc.contains(row), "{doc}");
        assert!(doc.contains("| W2 | 50 | 30,000 | 40,000 |"), "{doc}");
        assert!(doc.contains("| 50 | conduit-mcp fixture (http::serve) | 30,000 |"), "{doc}");
        let without = super::super::render(&Results::default(), None, "c.svg");
        assert!(without.contains("Not part of this pass: `conduit-mcp-bench run` was given no `--fixture`"));
    }
}
