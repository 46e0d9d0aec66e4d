//! The W1–W4 tables: the ratios at a glance, one table per workload (a row per
//! server and connection count) and W4's growth per bucket of creates.

use super::format::{show_ratio, show_rps};
use super::select::{OURS, conns_of, median, mib, ratio, spread};
use crate::harness::{Peer, Results, Sample, Workload};
use crate::stats::{Spread, thousands};
use std::fmt::Write as _;

/// "Results at a glance": ours against rmcp and the echo, medians.
pub(super) fn glance(out: &mut String, r: &Results) {
    let _ = writeln!(
        out,
        "| workload | conns | conduit-mcp requests/s | rmcp requests/s | echo requests/s | vs rmcp | vs echo | CPU µs/req (ours / rmcp / echo) |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---|");
    for w in [Workload::W1, Workload::W2, Workload::W3, Workload::W4] {
        for c in conns_of(r) {
            let o = median(r, w, OURS, c, |s| s.rps);
            let m = median(r, w, Peer::Rmcp, c, |s| s.rps);
            let e = median(r, w, Peer::Echo, c, |s| s.rps);
            let cpu = |p| median(r, w, p, c, |s| s.cpu_us_per_req).map_or("–".into(), |x| format!("{x:.1}"));
            let show = |x: Option<f64>| x.map_or("–".into(), thousands);
            let _ = writeln!(
                out,
                "| {} | {c} | {} | {} | {} | {} | {} | {} / {} / {} |",
                w.name(),
                show(o),
                show(m),
                show(e),
                show_ratio(ratio(o, m)),
                show_ratio(ratio(o, e)),
                cpu(OURS),
                cpu(Peer::Rmcp),
                cpu(Peer::Echo)
            );
        }
    }
}

/// One section per workload, W1 to W4; W4's comes with its growth table.
pub(super) fn sections(o: &mut String, r: &Results, peers: &[Peer], bucket: usize) {
    for (w, title) in [
        (Workload::W1, "W1 — `tools/call greet`"),
        (Workload::W2, "W2 — `tasks/get` on one live task"),
        (Workload::W3, "W3 — `tasks/get` on random ids among the W4 table"),
        (Workload::W4, "W4 — task creation from an empty table"),
    ] {
        let _ = writeln!(o, "## {title}\n");
        workload_table(o, r, w, peers);
        let _ = writeln!(o);
        if w == Workload::W4 {
            let _ = writeln!(
                o,
                "Creates per second in each successive {} tasks (median over rounds) — growth shows here:\n",
                thousands(bucket as f64)
            );
            growth_table(o, r, peers);
            let _ = writeln!(o);
        }
    }
}

/// One table of a workload: a row per server and connection count.
fn workload_table(out: &mut String, r: &Results, w: Workload, peers: &[Peer]) {
    let table_col = matches!(w, Workload::W3 | Workload::W4);
    let _ = writeln!(
        out,
        "| conns | server | requests/s | p50 µs | p99 µs | server CPU µs/request | peak RSS MiB |{}",
        if table_col { " tasks |" } else { "" }
    );
    let _ = writeln!(out, "|---:|---|---:|---:|---:|---:|---:|{}", if table_col { "---:|" } else { "" });
    for c in conns_of(r) {
        for &p in peers {
            let Some(rps) = spread(r, w, p, c, |s| s.rps) else { continue };
            let get = |f: fn(&Sample) -> f64, d: usize| spread(r, w, p, c, f).map_or("–".into(), |s| s.show(d));
            let mut row = format!(
                "| {c} | {} | {} | {} | {} | {} | {} |",
                p.label(),
                show_rps(&rps),
                get(|s| s.p50_us, 1),
                get(|s| s.p99_us, 1),
                get(|s| s.cpu_us_per_req, 1),
                get(|s| mib(s.peak_rss_kib as f64), 1),
            );
            if table_col {
                let t = spread(r, w, p, c, |s| s.table.unwrap_or(0) as f64).map_or("–".into(), |s| s.show(0));
                let capped = r.samples.iter().any(|s| s.workload == w && s.peer == p && s.conns == c && s.capped);
                let _ = write!(row, " {t}{} |", if capped { " (time cap)" } else { "" });
            }
            let errors: u64 =
                r.samples.iter().filter(|s| s.workload == w && s.peer == p && s.conns == c).map(|s| s.errors).sum();
            if errors > 0 {
                let _ = write!(row, " **{errors} errors**");
            }
            let _ = writeln!(out, "{row}");
        }
    }
}

/// W4's creates per second in each successive bucket, a row per server and connection count.
fn growth_table(out: &mut String, r: &Results, peers: &[Peer]) {
    let bucket = r.plan.as_ref().map_or(10_000, |p| p.bucket);
    let nb = r.samples.iter().filter(|s| s.workload == Workload::W4).map(|s| s.buckets.len()).max().unwrap_or(0);
    if nb == 0 {
        return;
    }
    let _ = write!(out, "| conns | server |");
    for b in 0..nb {
        let _ = write!(out, " {}k–{}k |", b * bucket / 1000, (b + 1) * bucket / 1000);
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "|---:|---|{}", "---:|".repeat(nb));
    for c in conns_of(r) {
        for &p in peers {
            let runs: Vec<&Sample> =
                r.samples.iter().filter(|s| s.workload == Workload::W4 && s.peer == p && s.conns == c).collect();
            if runs.is_empty() {
                continue;
            }
            let _ = write!(out, "| {c} | {} |", p.label());
            for b in 0..nb {
                let v: Vec<f64> = runs.iter().filter_map(|s| s.buckets.get(b).copied()).collect();
                let cell = Spread::of(&v).map_or("–".into(), |s| thousands(s.median));
                let _ = write!(out, " {cell} |");
            }
            let _ = writeln!(out);
        }
    }
}
