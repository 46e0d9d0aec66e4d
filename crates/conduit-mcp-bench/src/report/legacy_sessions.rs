//! W8 and W9, the 2025-11-25 era: the tables, and the rows they add to the targets.

use super::format::{show_ratio, show_rps, verdict};
use super::select::{OURS, conns_of, median, ratio, spread};
use crate::harness::{Peer, Results, Workload};
use crate::stats::Spread;
use std::fmt::Write as _;

/// The W9 target: resident bytes per idle session.
const W9_TARGET: f64 = 2048.0;

fn ran_w8(r: &Results) -> bool {
    r.samples.iter().any(|s| s.workload == Workload::W8)
}

/// The peers W8 and W9 ran, ours first.
fn legacy_peers(r: &Results) -> Vec<Peer> {
    let mut v: Vec<Peer> = Vec::new();
    let seen = r.samples.iter().filter(|s| s.workload == Workload::W8).map(|s| s.peer);
    for p in seen.chain(r.sessions.iter().map(|s| s.peer)) {
        if !v.contains(&p) {
            v.push(p);
        }
    }
    v
}

fn label(p: Peer) -> String {
    match p {
        Peer::Rmcp => "rmcp 3.11 (stateful sessions)".into(),
        p => p.label(),
    }
}

/// The W8 and W9 sections (nothing when neither ran).
pub(super) fn write(o: &mut String, r: &Results) {
    if !ran_w8(r) && r.sessions.is_empty() {
        return;
    }
    let peers = legacy_peers(r);
    if ran_w8(r) {
        let _ = writeln!(o, "## W8 — `tools/call greet` inside a 2025-11-25 session\n");
        let _ = writeln!(
            o,
            "Each connection opens its own session (`initialize`, `notifications/initialized`), then calls \
             `greet` with `Mcp-Session-Id` and `MCP-Protocol-Version: 2025-11-25`, accepting JSON or SSE; rmcp \
             runs in its default stateful session mode. Our W1 (modern, no session) is the first row.\n"
        );
        let _ = writeln!(o, "| server | conns | requests/s | p50 µs | p99 µs | server CPU µs/req |");
        let _ = writeln!(o, "|---|---:|---:|---:|---:|---:|");
        for c in conns_of(r) {
            let rows = std::iter::once((Workload::W1, OURS, format!("{} W1 (modern)", OURS.label())))
                .chain(peers.iter().map(|&p| (Workload::W8, p, label(p))));
            for (w, p, name) in rows {
                let Some(rps) = spread(r, w, p, c, |s| s.rps) else { continue };
                let show =
                    |m: fn(&crate::harness::Sample) -> f64| spread(r, w, p, c, m).map_or("–".into(), |s| s.show(1));
                let _ = writeln!(
                    o,
                    "| {name} | {c} | {} | {} | {} | {} |",
                    show_rps(&rps),
                    show(|s| s.p50_us),
                    show(|s| s.p99_us),
                    show(|s| s.cpu_us_per_req)
                );
            }
        }
        let _ = writeln!(o);
    }
    if !r.sessions.is_empty() {
        let _ = writeln!(o, "## W9 — memory per idle 2025-11-25 session\n");
        let _ = writeln!(
            o,
            "A fresh server; `VmRSS` before the first `initialize`, and a second after the last of the sessions \
             (each `initialize` then `notifications/initialized`, over 50 keep-alive connections, then left idle). \
             The difference includes whatever the 50 connections left behind, so it is an upper bound.\n"
        );
        let _ = writeln!(o, "| server | sessions | VmRSS before → after (KiB, median) | bytes per session |");
        let _ = writeln!(o, "|---|---:|---:|---:|");
        for &p in &peers {
            let runs: Vec<_> = r.sessions.iter().filter(|s| s.peer == p).collect();
            let per: Vec<f64> = runs.iter().map(|s| s.bytes_per_session).collect();
            let Some(b) = Spread::of(&per) else { continue };
            let mid = |f: fn(&crate::harness::SessionMemSample) -> f64| {
                Spread::of(&runs.iter().map(|s| f(s)).collect::<Vec<_>>()).map_or(0.0, |s| s.median)
            };
            let _ = writeln!(
                o,
                "| {} | {:.0} | {:.0} → {:.0} | {} |",
                label(p),
                mid(|s| s.sessions as f64),
                mid(|s| s.rss_before_kib as f64),
                mid(|s| s.rss_after_kib as f64),
                b.show(0)
            );
        }
        let _ = writeln!(o);
    }
}

/// The W8 and W9 rows of the targets table.
pub(super) fn targets(out: &mut String, r: &Results) {
    let hi = conns_of(r).into_iter().max().unwrap_or(50);
    let w8 = median(r, Workload::W8, OURS, hi, |s| s.rps);
    let vs_w1 = ratio(w8, median(r, Workload::W1, OURS, hi, |s| s.rps));
    let vs_rmcp = ratio(w8, median(r, Workload::W8, Peer::Rmcp, hi, |s| s.rps));
    let _ = writeln!(
        out,
        "| W8 at {hi} conns (greet inside a legacy session): ≥ 0.9× our W1 | {} | {} |",
        show_ratio(vs_w1),
        verdict(vs_w1.map(|x| x >= 0.9))
    );
    let _ = writeln!(
        out,
        "| W8 at {hi} conns: ≥ 2× rmcp 3.11 in its stateful session mode | {} | {} |",
        show_ratio(vs_rmcp),
        verdict(vs_rmcp.map(|x| x >= 2.0))
    );
    let per: Vec<f64> = r.sessions.iter().filter(|s| s.peer == OURS).map(|s| s.bytes_per_session).collect();
    let w9 = Spread::of(&per);
    let n = r.sessions.iter().find(|s| s.peer == OURS).map_or(0, |s| s.sessions);
    let _ = writeln!(
        out,
        "| W9 ≤ 2 KiB per idle legacy session ({n} sessions) | {} | {} |",
        w9.map_or("n/a".into(), |s| format!("{} B", s.show(0))),
        verdict(w9.map(|s| s.median <= W9_TARGET))
    );
}

#[cfg(test)]
mod tests {
    use crate::harness::{Peer, Plan, Results, Sample, SessionMemSample, Store, Workload};

    fn sample(workload: Workload, peer: Peer, rps: f64) -> Sample {
        Sample { p99_us: 2.0, cpu_us_per_req: 3.0, ..Sample::probe(workload, peer, rps) }
    }

    #[test]
    fn w8_and_w9_get_tables_and_verdicts() {
        let ours = Peer::Ours(Store::Memory);
        let mut r = Results { plan: Some(Plan::smoke()), ..Results::default() };
        r.samples.push(sample(Workload::W1, ours, 10_000.0));
        r.samples.push(sample(Workload::W8, ours, 9_500.0));
        r.samples.push(sample(Workload::W8, Peer::Rmcp, 5_000.0));
        for (peer, bytes) in [(ours, 1_500.0), (Peer::Rmcp, 9_000.0)] {
            r.sessions.push(SessionMemSample {
                peer,
                round: 0,
                sessions: 200,
                rss_before_kib: 1_000,
                rss_after_kib: 1_300,
                bytes_per_session: bytes,
            });
        }
        let doc = super::super::render(&r, None, "c.svg");
        assert!(
            doc.contains("| W8 at 50 conns (greet inside a legacy session): ≥ 0.9× our W1 | 0.95× | **met** |"),
            "{doc}"
        );
        assert!(
            doc.contains("| W8 at 50 conns: ≥ 2× rmcp 3.11 in its stateful session mode | 1.90× | **missed** |"),
            "{doc}"
        );
        assert!(doc.contains("| W9 ≤ 2 KiB per idle legacy session (200 sessions) | 1500 B | **met** |"), "{doc}");
        assert!(doc.contains("| rmcp 3.11 (stateful sessions) | 50 | 5,000 |"), "{doc}");
        assert!(doc.contains("| rmcp 3.11 (stateful sessions) | 200 | 1000 → 1300 | 9000 |"), "{doc}");
    }
}
