//! "Targets (issue 5)": each target with what was measured and a verdict.

use super::format::{show_ratio, verdict};
use super::select::{OURS, conns_of, flatness, median, ratio, spread};
use crate::harness::{NotifySample, Peer, Results, Store, Workload};
use crate::stats::{Spread, thousands};
use std::fmt::Write as _;

/// Writes the targets table.
pub(super) fn write(out: &mut String, r: &Results) {
    let hi = conns_of(r).into_iter().max().unwrap_or(50);
    let _ = writeln!(out, "| target | measured | verdict |");
    let _ = writeln!(out, "|---|---|---|");
    for w in [Workload::W1, Workload::W2] {
        let ours = median(r, w, OURS, hi, |s| s.rps);
        let vs_rmcp = ratio(ours, median(r, w, Peer::Rmcp, hi, |s| s.rps));
        let vs_echo = ratio(ours, median(r, w, Peer::Echo, hi, |s| s.rps));
        let cpu = median(r, w, OURS, hi, |s| s.cpu_us_per_req);
        let n = w.name();
        let _ = writeln!(
            out,
            "| {n} at {hi} conns: ≥ 2× rmcp's requests/s | {} | {} |",
            show_ratio(vs_rmcp),
            verdict(vs_rmcp.map(|x| x >= 2.0))
        );
        let _ = writeln!(
            out,
            "| {n} at {hi} conns: ≥ 0.6× the echo's requests/s | {} | {} |",
            show_ratio(vs_echo),
            verdict(vs_echo.map(|x| x >= 0.6))
        );
        let _ = writeln!(
            out,
            "| {n} at {hi} conns: server CPU ≤ 25 µs/request | {} | {} |",
            cpu.map_or("n/a".into(), |c| format!("{c:.1} µs")),
            verdict(cpu.map(|c| c <= 25.0))
        );
    }
    for c in conns_of(r) {
        let raw = ratio(median(r, Workload::W3, OURS, c, |s| s.rps), median(r, Workload::W2, OURS, c, |s| s.rps));
        let echo =
            ratio(median(r, Workload::W3, Peer::Echo, c, |s| s.rps), median(r, Workload::W2, Peer::Echo, c, |s| s.rps));
        let norm = ratio(raw, echo);
        let _ = writeln!(
            out,
            "| W3 ≥ 0.9× W2 at {c} conn{} (a lookup does not slow as the table grows); judged on the echo-normalised \
             ratio (ours W3/W2 ÷ echo W3/W2, which cancels machine drift between the two phases) | {} normalised \
             (raw {}, echo's own W3/W2 {}) | {} |",
            if c == 1 { "" } else { "s" },
            show_ratio(norm),
            show_ratio(raw),
            show_ratio(echo),
            verdict(norm.or(raw).map(|x| x >= 0.9))
        );
    }
    let w4 = median(r, Workload::W4, OURS, hi, |s| s.rps);
    let _ = writeln!(
        out,
        "| W4 (memory) ≥ 30 000 creates/s at {hi} conns | {} /s | {} |",
        w4.map_or("n/a".into(), thousands),
        verdict(w4.map(|x| x >= 30_000.0))
    );
    let flat = flatness(r, OURS, hi);
    let _ = writeln!(
        out,
        "| W4 (memory) flat from 0 to the full table: last bucket ≥ 0.8× the first | {} | {} |",
        show_ratio(flat),
        verdict(flat.map(|x| x >= 0.8))
    );
    let sqlite = median(r, Workload::W4, Peer::Ours(Store::Sqlite), hi, |s| s.rps);
    let postgres = median(r, Workload::W4, Peer::Ours(Store::Postgres), hi, |s| s.rps);
    let _ = writeln!(
        out,
        "| W4 (SQLite) ≥ 10 000 creates/s at {hi} conns; PostgreSQL reported | SQLite {}; PostgreSQL {} | {} |",
        sqlite.map_or("not run".into(), |x| format!("{} /s", thousands(x))),
        postgres.map_or("not run".into(), |x| format!("{} /s", thousands(x))),
        verdict(sqlite.map(|x| x >= 10_000.0))
    );
    let w5: Vec<f64> = r.notify.iter().filter(|n| n.peer == OURS).map(|n| n.p99_us).collect();
    let w5_all = r.notify.iter().filter(|n| n.peer == OURS).all(|n| n.received == n.tasks);
    let w5max = w5.iter().copied().fold(None, |a: Option<f64>, x| Some(a.map_or(x, |a| a.max(x))));
    let _ = writeln!(
        out,
        "| W5 p99 < 5 ms on one node (worst run) | {} | {} |",
        w5max.map_or("n/a".into(), |x| format!("{:.2} ms", x / 1000.0)),
        verdict(w5max.map(|x| x < 5_000.0 && w5_all))
    );
    let two: Vec<&NotifySample> = r.notify.iter().filter(|n| n.nodes > 1).collect();
    let two_max = two.iter().map(|n| n.p99_us).fold(None, |a: Option<f64>, x| Some(a.map_or(x, |a| a.max(x))));
    let two_all = two.iter().all(|n| n.received == n.tasks);
    let _ = writeln!(
        out,
        "| W5 p99 < 50 ms across two nodes (PostgreSQL; worst run) | {} | {} |",
        two_max.map_or("not run: needs --stores postgres".into(), |x| format!("{:.2} ms", x / 1000.0)),
        verdict(two_max.map(|x| x < 50_000.0 && two_all))
    );
    let removed = r.sweep.first().map_or(0, |s| s.result.removed);
    // Judged for each number of concurrent getters: the sweep shares the runtime with them.
    for c in conns_of(r) {
        let ms: Vec<f64> = r.sweep.iter().filter(|s| s.result.getters == c).map(|s| s.result.sweep_ms).collect();
        let sweep_ms = Spread::of(&ms);
        let _ = writeln!(
            out,
            "| W6 sweep removes 100 000 tasks in ≤ 200 ms ({c} getter{} running) | {} ms for {} | {} |",
            if c == 1 { "" } else { "s" },
            sweep_ms.map_or("n/a".into(), |s| s.show(1)),
            thousands(removed as f64),
            verdict(sweep_ms.map(|s| s.median <= 200.0 && removed >= 100_000))
        );
    }
    for c in conns_of(r) {
        let ratios: Vec<f64> = r
            .sweep
            .iter()
            .filter(|s| s.result.getters == c && s.result.baseline_p99_us > 0.0)
            .map(|s| s.result.during_p99_us / s.result.baseline_p99_us)
            .collect();
        let x = Spread::of(&ratios);
        let _ = writeln!(
            out,
            "| W6 `tasks/get` p99 during the sweep ≤ 2× baseline ({c} getter{}), judged on the worst round | {} median, \
             {} worst | {} |",
            if c == 1 { "" } else { "s" },
            show_ratio(x.map(|s| s.median)),
            show_ratio(x.map(|s| s.max)),
            verdict(x.map(|s| s.max <= 2.0))
        );
    }
    let w7 = spread(r, Workload::W4, OURS, hi, |s| s.bytes_per_task.unwrap_or(f64::NAN));
    let _ = writeln!(
        out,
        "| W7 ≤ 1 KiB per idle task | {} B | {} |",
        w7.map_or("n/a".into(), |s| s.show(0)),
        verdict(w7.map(|s| s.median <= 1024.0))
    );
    super::legacy_sessions::targets(out, r);
}
