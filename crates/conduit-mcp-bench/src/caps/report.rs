//! The "Capabilities on and off" section of `docs/benchmarks.md`
//! (`scripts/bench.sh` appends it after the generated report).

use super::{LedgerMode, Results, Sizes};
use crate::follow::Context;
use crate::ours::StoreKind;
use crate::stats::{Spread, quantile, thousands};
use std::fmt::Write as _;

fn show(s: Option<Spread>, digits: usize) -> String {
    s.map_or_else(|| "–".into(), |s| s.show(digits))
}

fn ratio(a: Option<Spread>, b: Option<Spread>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b.median > 0.0 => format!("{:.3}", a.median / b.median),
        _ => "–".into(),
    }
}

fn rates(s: Option<Spread>) -> String {
    s.map_or_else(|| "–".into(), |s| format!("{} [{}–{}]", thousands(s.median), thousands(s.min), thousands(s.max)))
}

fn ledger(o: &mut String, r: &Results, z: &Sizes) {
    let per = |m: LedgerMode| {
        let v: Vec<f64> =
            r.ledger.iter().filter(|s| s.mode == m).map(|s| s.wall_ms * 1e3 / s.tasks.max(1) as f64).collect();
        Spread::of(&v)
    };
    let base = per(LedgerMode::None);
    let _ = writeln!(o, "### The client's task ledger (issue 30)\n");
    let _ = writeln!(
        o,
        "The library client (`conduit_mcp::client`, one connection) creating {} tasks one after another on a \
         fresh bench server (memory store, `slow_compute`), after {} warm-up creates: with no ledger \
         (`ClientBuilder::no_ledger`), a `MemoryLedger` (the default), a `SqliteLedger` in a fresh file under \
         `target/bench/`, and that ledger with every call written down before it is sent too \
         (`record_calls_in_flight`, as `conduit-mcp call` runs: \"sqlite+calls\"). Wall time of the creates, \
         median [range] of {} interleaved rounds, per create; target: SQLite ÷ none ≤ 1.05.\n",
        z.ledger_tasks,
        super::ledger::WARMUP,
        z.rounds
    );
    let _ = writeln!(o, "| ledger | µs per create | ÷ none |\n|---|---:|---:|");
    for m in LedgerMode::ALL {
        let s = per(m);
        let _ = writeln!(o, "| {} | {} | {} |", m.name(), show(s, 1), ratio(s, base));
    }
    let _ = writeln!(o);
}

fn events(o: &mut String, r: &Results, z: &Sizes) {
    let _ = writeln!(o, "### The Events change log (issue 29)\n");
    let _ = writeln!(
        o,
        "W4 (task creation, the load generator, {} connections, {} ms per measurement after {} ms of warm-up) on \
         a fresh bench server, with the change log off (no Events: the store never turns its log on) and on \
         (`bench-server --events`: Events with `task.status_changed`, the log turned on at start, so every create \
         writes its change in its own transaction: a row on SQL stores, an entry of the in-memory log on the \
         memory store, the reference server's default). Creates/s, median [range] of {} interleaved rounds; \
         target on ÷ off ≥ 0.95.\n",
        z.conns, z.measure_ms, z.warmup_ms, z.rounds
    );
    let _ = writeln!(o, "| store | log off | log on | on ÷ off |\n|---|---:|---:|---:|");
    for store in [StoreKind::Memory, StoreKind::Sqlite, StoreKind::Postgres] {
        let of = |on: bool| {
            let v: Vec<f64> = r.w4.iter().filter(|s| s.store == store && s.log == on).map(|s| s.rps).collect();
            Spread::of(&v)
        };
        let (off, on) = (of(false), of(true));
        if off.is_none() && on.is_none() {
            continue;
        }
        let _ = writeln!(o, "| {} | {} | {} | {} |", store.as_str(), rates(off), rates(on), ratio(on, off));
    }
    let _ = writeln!(o);
    if r.cross_node.is_empty() {
        let _ = writeln!(o, "Cross-node latency: not measured (no PostgreSQL in this run).\n");
        return;
    }
    let mut all: Vec<u32> = r.cross_node.iter().flat_map(|c| c.latencies_us.iter().copied()).collect();
    all.sort_unstable();
    let p = |q: f64| f64::from(quantile(&all, q)) / 1e3;
    let p50: Vec<f64> = r.cross_node.iter().map(|c| f64::from(quantile(&c.latencies_us, 0.5)) / 1e3).collect();
    let p99: Vec<f64> = r.cross_node.iter().map(|c| f64::from(quantile(&c.latencies_us, 0.99)) / 1e3).collect();
    let _ = writeln!(
        o,
        "A task's terminal event reaching a push stream on another node: two bench servers (`--events`) on one \
         PostgreSQL schema, an `events/stream` of `task.status_changed` open on node B; node A's admin route \
         completes A's tasks one at a time ({} per round, {} rounds); from just before the admin request to A \
         (one loopback round trip included) to the event arriving on B's stream (through `LISTEN`/`NOTIFY` and \
         B's read of the change log).\n",
        r.cross_node.first().map_or(0, |c| c.tasks),
        r.cross_node.len()
    );
    let _ = writeln!(o, "| events | p50 ms | p99 ms | max ms |\n|---:|---:|---:|---:|");
    let _ = writeln!(
        o,
        "| {} | {:.2} (rounds {}) | {:.2} (rounds {}) | {:.2} |\n",
        all.len(),
        p(0.5),
        show(Spread::of(&p50), 2),
        p(0.99),
        show(Spread::of(&p99), 2),
        f64::from(all.last().copied().unwrap_or(0)) / 1e3
    );
}

fn dpop(o: &mut String, r: &Results, z: &Sizes) {
    let of = |on: bool| {
        let v: Vec<f64> = r.dpop.iter().filter(|s| s.dpop == on).map(|s| s.rps).collect();
        Spread::of(&v)
    };
    let (bearer, bound) = (of(false), of(true));
    let _ = writeln!(o, "### DPoP-bound tokens (issue 31)\n");
    let _ = writeln!(
        o,
        "W1 on a fresh bench server taking OAuth tokens of bench-as (a loopback authorization server: metadata, \
         JWKS) with DPoP on (`--oauth-dpop`), {} connections of the Rust load generator, {} ms per measurement \
         after {} ms of warm-up, {} interleaved rounds: every request carries the bearer token, or the token bound \
         to the bench's key (`cnf.jkt`) with a DPoP proof signed for that request (ES256, its own `jti`; the \
         signing runs in the load generator, on the same machine). Requests/s, median [range]; target DPoP ÷ \
         bearer ≥ 0.9.\n",
        z.conns, z.measure_ms, z.warmup_ms, z.rounds
    );
    let _ = writeln!(o, "| W1 | requests/s | ÷ bearer |\n|---|---:|---:|");
    let _ = writeln!(o, "| bearer | {} | 1.000 |", rates(bearer));
    let _ = writeln!(o, "| DPoP | {} | {} |\n", rates(bound), ratio(bound, bearer));
    dpop_floor(o, r, bearer);
}

/// Where the ratio's floor is: one proof's signing and check on one core, against what a
/// bearer W1 request costs the whole machine.
fn dpop_floor(o: &mut String, r: &Results, bearer: Option<Spread>) {
    let of = |f: fn(&super::DpopFloor) -> f64| Spread::of(&r.dpop_floor.iter().map(f).collect::<Vec<_>>());
    let (Some(sign), Some(verify), Some(check), Some(bearer)) =
        (of(|f| f.sign_us), of(|f| f.verify_us), of(|f| f.check_us), bearer)
    else {
        return;
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    // The machine's CPU per bearer request: every core busy (server and load generator) over the rate.
    let per_bearer = cores * 1e6 / bearer.median.max(1.0);
    let ceiling = per_bearer / (per_bearer + sign.median + check.median);
    let _ = writeln!(
        o,
        "Where the floor is: signing one proof takes {:.1} µs [{:.1}–{:.1}] (the load generator, ring ES256) and \
         the resource server's whole check of it {:.1} µs [{:.1}–{:.1}] (`DpopVerifier::check` and `admit`: the \
         ES256 verify with ring, the claims, the replay store), of which the signature's verify alone is {:.1} µs, \
         one thread, {} proofs per round. A bearer W1 \
         request costs this {cores}-core machine at most {per_bearer:.1} µs of CPU in all, server and load \
         generator (cores ÷ requests/s; less when other processes share the machine; the connection reuses its \
         principal, so no token work at all), so the CPU one DPoP request adds (signing and checking its proof, \
         neither cacheable: each proof is new) bounds the ratio at {ceiling:.2} at best here, whatever the rest of \
         the server does.\n",
        sign.median, sign.min, sign.max, check.median, check.min, check.max, verify.median, r.dpop_floor[0].proofs,
    );
}

fn webhooks(o: &mut String, r: &Results) {
    let Some(first) = r.webhooks.first() else { return };
    let rate = Spread::of(&r.webhooks.iter().map(super::WebhookSample::rate).collect::<Vec<_>>());
    let floor = Spread::of(&r.webhooks.iter().map(super::WebhookSample::floor_rate).collect::<Vec<_>>());
    let _ = writeln!(o, "### Webhook deliveries from one node (issue 29)\n");
    let _ = writeln!(
        o,
        "A fresh bench server (memory stores, `--events`, webhooks on, the receiver's CA trusted) holding {} tasks; \
         {} webhook subscriptions to `task.status_changed`, each to its own path of one HTTPS receiver on loopback \
         (HTTP/1.1 keep-alive, `204` at once); the admin route completes every task at once, and the clock runs \
         until every terminal event reached every subscription ({} deliveries, each fed to the outbox, claimed, \
         signed, resolved and checked, posted and settled; one subscription's in order, different ones' at \
         once). The floor: the same receiver hit by a plain HTTPS POST loop (reqwest over rustls, one client, {} \
         loops, the same body, as many POSTs), right after, in the same round. Per second, median [range] of {} \
         rounds.\n",
        first.expected / first.subscriptions.max(1),
        first.subscriptions,
        first.expected,
        first.subscriptions,
        r.webhooks.len()
    );
    let _ = writeln!(o, "| | per second | ÷ floor |\n|---|---:|---:|");
    let _ = writeln!(o, "| webhook deliveries | {} | {} |", rates(rate), ratio(rate, floor));
    let _ = writeln!(o, "| floor: plain HTTPS POSTs | {} | 1.000 |\n", rates(floor));
}

/// Renders the section from one run's results.
pub fn render(r: &Results, z: &Sizes, ctx: &Context) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "## Capabilities on and off (`conduit-mcp-bench caps`)\n");
    let _ = writeln!(
        o,
        "Each capability against itself off, in one run, the variants interleaved round by round on fresh \
         servers. Run {} with `{}` ({} build), load average {} before and {} after.\n",
        ctx.date, ctx.command, ctx.profile, ctx.load.0, ctx.load.1
    );
    if !r.ledger.is_empty() {
        ledger(&mut o, r, z);
    }
    if !r.w4.is_empty() {
        events(&mut o, r, z);
    }
    if !r.dpop.is_empty() {
        dpop(&mut o, r, z);
    }
    webhooks(&mut o, r);
    o
}
