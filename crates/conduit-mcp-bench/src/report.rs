//! `docs/benchmarks.md`: machine, versions, commands, tables, ratios, targets.
//!
//! The file is regenerated on every run; only the hand-written analysis between
//! [`ANALYSIS_BEGIN`] and [`ANALYSIS_END`] is carried over from the previous file.

use crate::harness::{NotifySample, Peer, Results, Sample, Store, Workload, notify_label};
use crate::stats::{Spread, thousands};
use std::fmt::Write as _;

/// Marks the start of the hand-written analysis kept across runs.
pub const ANALYSIS_BEGIN: &str = "<!-- analysis:begin -->";
/// Marks its end.
pub const ANALYSIS_END: &str = "<!-- analysis:end -->";

const OURS: Peer = Peer::Ours(Store::Memory);

/// The spread over rounds of `metric` for one workload, server and connection count.
pub fn spread(r: &Results, w: Workload, peer: Peer, conns: usize, metric: impl Fn(&Sample) -> f64) -> Option<Spread> {
    let v: Vec<f64> =
        r.samples.iter().filter(|s| s.workload == w && s.peer == peer && s.conns == conns).map(metric).collect();
    Spread::of(&v)
}

fn median(r: &Results, w: Workload, peer: Peer, conns: usize, metric: impl Fn(&Sample) -> f64) -> Option<f64> {
    spread(r, w, peer, conns, metric).map(|s| s.median)
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

fn show_ratio(x: Option<f64>) -> String {
    x.map_or_else(|| "n/a".into(), |x| format!("{x:.2}×"))
}

fn verdict(ok: Option<bool>) -> &'static str {
    match ok {
        Some(true) => "**met**",
        Some(false) => "**missed**",
        None => "not run",
    }
}

/// The analysis kept from `previous` (the old file), or a placeholder.
fn analysis(previous: Option<&str>) -> String {
    let kept = previous.and_then(|p| {
        let start = p.find(ANALYSIS_BEGIN)? + ANALYSIS_BEGIN.len();
        let end = p[start..].find(ANALYSIS_END)? + start;
        Some(p[start..end].trim_matches('\n').to_owned())
    });
    let body = kept.unwrap_or_else(|| "_No analysis written yet._".into());
    format!("{ANALYSIS_BEGIN}\n{body}\n{ANALYSIS_END}\n")
}

fn peers_of(r: &Results) -> Vec<Peer> {
    let mut v: Vec<Peer> = Vec::new();
    for s in &r.samples {
        if !v.contains(&s.peer) {
            v.push(s.peer);
        }
    }
    v.sort_by_key(|p| match p {
        Peer::Ours(_) => 0,
        Peer::Rmcp => 1,
        Peer::Echo => 2,
    });
    v
}

/// The servers in the order the report and chart list them.
pub fn peers(r: &Results) -> Vec<Peer> {
    peers_of(r)
}

fn conns_of(r: &Results) -> Vec<usize> {
    r.plan.as_ref().map(|p| p.conns.clone()).unwrap_or_else(|| vec![1, 50])
}

fn mib(kib: f64) -> f64 {
    kib / 1024.0
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

fn show_rps(s: &Spread) -> String {
    if s.min == s.max {
        return thousands(s.median);
    }
    format!("{} [{}–{}]", thousands(s.median), thousands(s.min), thousands(s.max))
}

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

/// `last bucket rate / first bucket rate` of W4, median over rounds.
fn flatness(r: &Results, peer: Peer, conns: usize) -> Option<f64> {
    let v: Vec<f64> = r
        .samples
        .iter()
        .filter(|s| s.workload == Workload::W4 && s.peer == peer && s.conns == conns && s.buckets.len() >= 2)
        .map(|s| s.buckets[s.buckets.len() - 1] / s.buckets[0])
        .collect();
    Spread::of(&v).map(|s| s.median)
}

fn targets(out: &mut String, r: &Results) {
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
}

fn ratios(out: &mut String, r: &Results) {
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

/// The stores ours ran on, in the order of [`Store`].
fn stores_of(r: &Results) -> Vec<Store> {
    let mut v: Vec<Store> = Vec::new();
    for p in r.samples.iter().map(|s| s.peer).chain(r.notify.iter().map(|n| n.peer)) {
        if let Peer::Ours(s) = p
            && !v.contains(&s)
        {
            v.push(s);
        }
    }
    v.sort_by_key(|s| *s as u8);
    v
}

/// "Stores": create and `tasks/get` rates for each store (W4, W2, W3) and W5 latency, side by side.
fn stores_section(o: &mut String, r: &Results) {
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

/// Renders the whole document. `previous` is the old file (its analysis is kept);
/// `chart` the chart's file name relative to the document.
pub fn render(r: &Results, previous: Option<&str>, chart: &str) -> String {
    let m = &r.meta;
    let peers = peers_of(r);
    let plan = r.plan.clone().unwrap_or_else(crate::harness::Plan::full);
    let mut o = String::new();
    let _ = writeln!(o, "# Benchmarks\n");
    let _ = writeln!(
        o,
        "conduit-mcp against the official Rust SDK (rmcp) and a bare axum echo, measured in one run on one machine. \
         Generated by `scripts/bench.sh`{} on {} in {:.1} minutes; rerun it to refresh this file. Only the \
         analysis between the `analysis` markers is written by hand and kept across runs.\n",
        if plan.smoke { " --smoke (a smoke pass: tiny sizes, the numbers mean nothing)" } else { "" },
        m.date,
        m.wall_secs / 60.0
    );
    let _ = writeln!(o, "## Machine and versions\n");
    let _ = writeln!(o, "| | |\n|---|---|");
    let _ = writeln!(o, "| CPU | {} ({} cores available) |", m.cpu, m.cores);
    let _ = writeln!(o, "| memory | {:.1} GiB |", m.mem_gib);
    let _ = writeln!(o, "| kernel | Linux {} |", m.kernel);
    let _ = writeln!(o, "| `/proc/loadavg` when the pass started | {} |", m.load_before);
    let _ = writeln!(o, "| compiler | {} (release profile: opt-level 3, no LTO, for all three servers) |", m.rustc);
    let _ = writeln!(o, "| conduit-mcp | {} |", m.conduit);
    let _ = writeln!(o, "| rmcp | {} (features `server`, `macros`, `transport-streamable-http-server`) |", m.rmcp);
    let _ = writeln!(o, "| axum (echo, and the HTTP layer of all three) | 0.8 |\n");

    let _ = writeln!(o, "## How it was run\n");
    let _ = writeln!(o, "```sh\n{}\n```\n", m.command);
    let _ = writeln!(
        o,
        "- **Servers**, each a separate process on its own 127.0.0.1 port, started fresh for every run:\n  \
         1. *conduit-mcp*: `bench-server --store memory` (crate `conduit-mcp-bench`): the conformance fixture's `greet` and \
         `slow_compute`, the Tasks extension with the `MemoryStore` (no row cap, default janitor), served by \
         `http::router` with `TCP_NODELAY`; the same server on the SQL stores of `conduit-mcp-sql` as \
         *conduit-mcp (sqlite)* (`--store sqlite`, one WAL file under `target/bench/`) and *conduit-mcp (postgres)* \
         (`--store postgres`, schema `conduit_bench`, with `PgNotifier` carrying changes between nodes), each started \
         with `--fresh` on an empty database{};\n  \
         2. *rmcp 3.11*: `rmcp-peer` (`crates/conduit-mcp-bench/peers/rmcp-peer`, its own workspace): the same two tools, \
         stateless Streamable HTTP with `json_response = true`, no SSE keep-alive, `TCP_NODELAY`, one shared handler \
         (the service factory clones `Arc`s), tasks in rmcp's `TaskManager` with the same 1-hour TTL and 200 ms poll hint;\n  \
         3. *axum echo*: `bench-echo`: one axum handler that parses the JSON body and answers a fixed-size JSON-RPC result \
         as long as conduit-mcp's answer to the same request ({} bytes for `greet`, {} for `tasks/get`, {} for a create).",
        if stores_of(r).iter().any(|s| *s != Store::Memory) { "" } else { " (not part of this pass)" },
        m.echo_sizes[0],
        m.echo_sizes[1],
        m.echo_sizes[2]
    );
    let _ = writeln!(
        o,
        "- **Load**: the `conduit-mcp-bench` load generator, one tokio thread, HTTP/1.1 keep-alive, one request in flight \
         per connection, every request built fresh (JSON-RPC ids vary), the same bytes to all three servers. It shares \
         the {} cores with the server under test.",
        m.cores
    );
    let _ = writeln!(
        o,
        "- **Order**: for each workload and connection count, {} rounds of ours (on each store), rmcp, echo \
         (A B C A B C …) so drift hits all of them; tables give the median and [range] over the rounds. W1 (`greet`) \
         never touches the task store, so it runs ours on the memory store only.",
        plan.rounds
    );
    let _ = writeln!(
        o,
        "- **Per run**: {} ms warm-up (not counted), then {} ms measured: requests/s, p50/p99 latency, server CPU \
         (`utime + stime` from `/proc/PID/stat` over the measured phase, divided by the requests), peak RSS (`VmHWM`).",
        plan.warmup_ms, plan.measure_ms
    );
    let _ = writeln!(
        o,
        "- **W3/W4**: one fresh process per (server, connections, round) runs W4 (create {} tasks with `slow_compute` \
         and the extension declared, each task's work parked for an hour; a {} ms cap stops a server that slows down, \
         {} ms for ours on SQLite and PostgreSQL, whose every create is a durable commit) and then W3 (`tasks/get` on \
         random ids among the tasks W4 created). W7 is read in the same process, for the memory store and rmcp: \
         `VmRSS` one second after W4, minus `VmRSS` before it, per task created.",
        thousands(plan.table as f64),
        plan.create_cap_ms,
        plan.sql_create_cap_ms
    );
    let _ = writeln!(
        o,
        "- **W5**: {} tasks, named by {} listen stream(s) (`subscriptions/listen` with `taskIds`); the bench server's \
         admin route `POST /bench/complete` calls `Tasks::complete` on each, 1 ms apart, stamping the result with the \
         wall-clock µs just before the call; the latency is arrival time minus that stamp. On PostgreSQL it also \
         runs across two nodes: node A (started `--fresh`) creates and completes the tasks, node B (same database and \
         schema) holds the listen streams, so every notification travels through `LISTEN`/`NOTIFY`.",
        plan.notify_tasks,
        conns_of(r).iter().map(ToString::to_string).collect::<Vec<_>>().join(" and ")
    );
    let _ = writeln!(
        o,
        "- **W6**: in process (`bench-server sweep`): {} tasks written straight into the `MemoryStore`, {}% of them \
         expired; `tasks/get` through `Server::handle_request` on random live ids from 1 and 50 concurrent loops on a \
         2-worker runtime, first {} ms without a sweep (baseline), then while `ext::tasks::sweep` runs on a worker. \
         A call's latency counts from the moment its loop was ready to send it, so time spent waiting for a runtime \
         worker (one busy with the sweep, say) is included.\n\
         - **A guard**: W2, W5 and the size calibration create one throw-away task and wait 200 ms before the \
         tasks they measure, and W3 accepts any task status: before commit d112c1c, conduit-mcp's janitor start-up \
         recovery (`recover_own`) failed, as \"interrupted\", a task created in the same instant.\n",
        thousands(plan.sweep_tasks as f64),
        plan.sweep_expired_percent,
        plan.sweep_baseline_ms
    );
    let _ = writeln!(o, "### What differs on the wire\n");
    let _ = writeln!(
        o,
        "Requests are byte-identical for the three servers (`MCP-Protocol-Version: 2026-07-28`, `Mcp-Method`, \
         `Mcp-Name`, per-request `_meta` with the Tasks extension declared where a task is involved). rmcp 3.11 speaks \
         the `2026-07-28` wire statelessly and checks the same headers. The answers differ only in:\n\
         - every conduit-mcp result carries `_meta[\"io.modelcontextprotocol/serverInfo\"]` (about 80 bytes); rmcp's \
         do not. Body sizes (greet, `tasks/get`, create): conduit-mcp {:?} bytes, rmcp {:?};\n\
         - task ids: ours are 43 url-safe characters (32 random bytes), rmcp's are UUID v4 strings (36);\n\
         - timestamps: ours `2026-01-01T00:00:00.000Z`, rmcp's `chrono` RFC 3339 with nanoseconds and `+00:00`;\n\
         - W5 does not apply to rmcp: its `subscriptions/listen` filter has no `taskIds` (rmcp 3.11 \
         `service/server.rs`: \"task status notifications are not yet routable through subscriptions/listen\"), so \
         its clients poll `tasks/get`;\n\
         - W6 does not apply to rmcp: it has no janitor; every `TaskManager` call sweeps the whole table inline \
         (which is what W3/W4 measure);\n\
         - W5, W6 and W7 do not apply to the echo, which keeps no state.\n",
        m.echo_sizes, m.rmcp_sizes
    );

    let _ = writeln!(o, "## Results at a glance (W1–W4, medians)\n");
    ratios(&mut o, r);
    let _ = writeln!(o, "\n![W1–W4 requests/s for the three servers]({chart})\n");
    let _ = writeln!(o, "## Targets (issue 5)\n");
    targets(&mut o, r);
    let _ = writeln!(o);

    stores_section(&mut o, r);

    for (w, title) in [
        (Workload::W1, "W1 — `tools/call greet`"),
        (Workload::W2, "W2 — `tasks/get` on one live task"),
        (Workload::W3, "W3 — `tasks/get` on random ids among the W4 table"),
        (Workload::W4, "W4 — task creation from an empty table"),
    ] {
        let _ = writeln!(o, "## {title}\n");
        workload_table(&mut o, r, w, &peers);
        let _ = writeln!(o);
        if w == Workload::W4 {
            let _ = writeln!(
                o,
                "Creates per second in each successive {} tasks (median over rounds) — growth shows here:\n",
                thousands(plan.bucket as f64)
            );
            growth_table(&mut o, r, &peers);
            let _ = writeln!(o);
        }
    }

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
            thousands(plan.sweep_tasks as f64),
            s.show(0)
        );
    }
    let _ = writeln!(o, "| axum echo | – | – | n/a (no state) |\n");
    let _ = writeln!(o, "## Analysis\n");
    o.push_str(&analysis(previous));
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_analysis() {
        let old = format!("# x\n{ANALYSIS_BEGIN}\nhand written\n{ANALYSIS_END}\n");
        assert!(analysis(Some(&old)).contains("hand written"));
        assert!(analysis(None).contains("No analysis"));
        let doc = render(&Results::default(), Some(&old), "c.svg");
        assert!(doc.contains("hand written") && doc.contains("## Targets"));
    }

    #[test]
    fn every_store_and_the_two_node_w5_get_rows() {
        use crate::harness::{NotifySample, Plan};
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
