//! The "Client: following 1 000 tasks" section of `docs/benchmarks.md`
//! (`scripts/bench.sh` appends it after the generated report).

use super::round::{Mode, Sample};
use crate::stats::Spread;
use std::fmt::Write as _;

/// The median and range of one metric of `mode`'s rounds.
fn spread(samples: &[Sample], mode: Mode, f: impl Fn(&Sample) -> f64) -> Option<Spread> {
    let v: Vec<f64> = samples.iter().filter(|s| s.mode == mode).map(f).collect();
    Spread::of(&v)
}

fn show(s: Option<Spread>, digits: usize) -> String {
    s.map_or_else(|| "–".into(), |s| s.show(digits))
}

/// `poll / listen` of a metric's medians.
fn ratio(samples: &[Sample], f: impl Fn(&Sample) -> f64 + Copy) -> String {
    match (spread(samples, Mode::Poll, f), spread(samples, Mode::Listen, f)) {
        (Some(p), Some(l)) if l.median > 0.0 => format!("{:.1}×", p.median / l.median),
        (Some(p), Some(_)) if p.median > 0.0 => "∞ (listen: 0)".into(),
        _ => "–".into(),
    }
}

/// What the section says about how it was run.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// The command line.
    pub command: String,
    /// When (UTC).
    pub date: String,
    /// `/proc/loadavg` before and after.
    pub load: (String, String),
    /// The build profile.
    pub profile: String,
}

/// A warning when the 1-minute load average before the run exceeded the cores.
fn loaded(loadavg: &str) -> Option<String> {
    let load: f64 = loadavg.split_whitespace().next()?.parse().ok()?;
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    (load > cores as f64).then(|| {
        format!(
            "**The machine was loaded by other work** (load average {load:.1} on {cores} cores): absolute \
             times are inflated, the ratios between the modes (measured side by side) are what to read."
        )
    })
}

/// Renders the section from every round's samples.
pub fn render(samples: &[Sample], ctx: &Context) -> String {
    let tasks = samples.first().map_or(0, |s| s.tasks);
    let rounds = samples.iter().filter(|s| s.mode == Mode::Listen).count().max(1);
    let poll = samples.iter().find(|s| s.mode == Mode::Poll).map_or(0, |s| s.poll_ms);
    let mut o = String::new();
    let _ = writeln!(o, "## Client: following 1 000 tasks (issue 12)\n");
    let _ = writeln!(
        o,
        "`{}` ({} build, {}; load average before {}, after {}). The library client \
         (`conduit_mcp::client`) follows {tasks} parked `slow_compute` tasks of a fresh `bench-server` \
         (memory store) per mode and round; then the admin route `POST /bench/complete` completes them \
         1 ms apart, and the phase ends when every follower's event stream has yielded `Finished`. \
         **listen**: the default client, push over its listen stream; **poll**: `push(false)`, \
         `tasks/get` every `pollIntervalMs` ({poll} ms) with no back-off. {rounds} round(s), modes \
         interleaved; medians [ranges].\n",
        ctx.command, ctx.profile, ctx.date, ctx.load.0, ctx.load.1
    );
    let _ = writeln!(
        o,
        "CPU is `/proc/PID/task/*/schedstat` over the phase: the client's is the bench process itself \
         (the client on a current-thread runtime; nothing else runs in it then but the one admin POST \
         and a timestamp per event), the server's its process. Latency runs from the server's clock \
         read just before `Tasks::complete` (stamped in the result) to the client's stream yielding \
         the terminal event (the same machine clock). Listen streams count every `subscriptions/listen` \
         the client opened in the round; TCP connections are those it held to the server at the end; \
         HTTP requests are those it sent during the phase. At most 32 requests of one client await \
         their answer at once (HTTP/1.1, one connection each; the rest wait for a turn), so the \
         followers' first reads open at most 32 connections, which the pool keeps idle afterwards; \
         in listen mode only the listen stream carries anything during the phase. The wall time is bounded below by the server's pacing of the completions.\n"
    );
    if let Some(note) = loaded(&ctx.load.0) {
        let _ = writeln!(o, "{note}\n");
    }
    let _ = writeln!(
        o,
        "| mode | wall to all terminal, ms | client CPU, ms | server CPU, ms | listen streams | TCP connections | HTTP requests | latency p50, ms | p99, ms | max, ms |"
    );
    let _ = writeln!(o, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for mode in [Mode::Listen, Mode::Poll] {
        if !samples.iter().any(|s| s.mode == mode) {
            continue;
        }
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            mode.name(),
            show(spread(samples, mode, |s| s.wall_ms), 0),
            show(spread(samples, mode, |s| s.client_cpu_ms), 1),
            show(spread(samples, mode, |s| s.server_cpu_ms), 1),
            show(spread(samples, mode, |s| s.listen_streams as f64), 0),
            show(spread(samples, mode, |s| s.tcp_conns as f64), 0),
            show(spread(samples, mode, |s| s.requests as f64), 0),
            show(spread(samples, mode, |s| s.p50_ms), 2),
            show(spread(samples, mode, |s| s.p99_ms), 2),
            show(spread(samples, mode, |s| s.max_ms), 2),
        );
    }
    let _ = writeln!(
        o,
        "\nPoll against listen (ratio of medians): client CPU {}, server CPU {}, HTTP requests {}, \
         latency p50 {}.",
        ratio(samples, |s| s.client_cpu_ms),
        ratio(samples, |s| s.server_cpu_ms),
        ratio(samples, |s| s.requests as f64),
        ratio(samples, |s| s.p50_ms),
    );
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(mode: Mode, round: usize, cpu: f64) -> Sample {
        Sample {
            mode,
            round,
            tasks: 1000,
            terminal: 1000,
            poll_ms: 200,
            wall_ms: 1200.0,
            client_cpu_ms: cpu,
            server_cpu_ms: cpu,
            listen_streams: u64::from(mode == Mode::Listen),
            tcp_conns: 2,
            requests: if mode == Mode::Listen { 0 } else { 6000 },
            p50_ms: 1.0,
            p99_ms: 2.0,
            max_ms: 3.0,
        }
    }

    #[test]
    fn both_modes_get_a_row_and_the_ratios_are_of_medians() {
        let s = vec![sample(Mode::Listen, 0, 10.0), sample(Mode::Poll, 0, 40.0), sample(Mode::Listen, 1, 20.0)];
        let doc = render(&s, &Context::default());
        assert!(doc.starts_with("## Client: following 1 000 tasks"));
        assert!(doc.contains("| listen | 1200 | 15.0 [10.0–20.0] |"), "{doc}");
        assert!(doc.contains("| poll | 1200 | 40.0 |"), "{doc}");
        assert!(doc.contains("client CPU 2.7×") && doc.contains("HTTP requests ∞ (listen: 0)"), "{doc}");
    }
}
