//! `conduit-mcp-bench caps`: the newer capabilities measured side by side with
//! themselves off, in one run, interleaved rounds, medians and ratios.
//!
//! - `ledger.rs`: the client's task ledger (issue 30): 1 000 creates through the
//!   library client with no ledger, a `MemoryLedger`, a `SqliteLedger`;
//! - `events.rs`: the Events change log (issue 29): W4 with the log on and off
//!   on SQLite and PostgreSQL, and a terminal event's latency to a push stream
//!   on another node of the same PostgreSQL;
//! - `dpop.rs`: W1 with DPoP-bound tokens against bearer tokens (issue 31);
//! - `webhooks.rs`: webhook deliveries per second from one node against a plain
//!   HTTPS POST loop to the same receiver (`receiver.rs`; issue 29);
//! - `server.rs`: the bench-server child and hand-made requests;
//! - `report.rs`: the section of `docs/benchmarks.md`; `cli.rs`: the subcommand.

mod cli;
mod dpop;
mod events;
mod ledger;
mod receiver;
mod report;
mod server;
mod webhooks;

pub use cli::{CapsArgs, main};
pub use dpop::{DpopFloor, DpopSample};
pub use events::{CrossNode, Stores, W4Sample};
pub use ledger::{LedgerMode, LedgerSample};
pub use report::render;
pub use webhooks::WebhookSample;

use crate::ours::StoreKind;

use std::path::PathBuf;
use std::str::FromStr;

/// One capability benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The client's task ledger.
    Ledger,
    /// The Events change log.
    Events,
    /// DPoP-bound tokens.
    Dpop,
    /// Webhook deliveries.
    Webhooks,
}

impl FromStr for Part {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "ledger" => Ok(Self::Ledger),
            "events" => Ok(Self::Events),
            "dpop" => Ok(Self::Dpop),
            "webhooks" => Ok(Self::Webhooks),
            _ => Err(format!("unknown part {s:?} (ledger, events, dpop, webhooks)")),
        }
    }
}

/// How big each measurement is.
#[derive(Debug, Clone)]
pub struct Sizes {
    /// Rounds (each runs every variant once, in turn).
    pub rounds: usize,
    /// Tasks the client creates per ledger measurement.
    pub ledger_tasks: usize,
    /// Load-generator connections (W1, W4).
    pub conns: usize,
    /// Warm-up before each load measurement, ms.
    pub warmup_ms: u64,
    /// Each load measurement, ms.
    pub measure_ms: u64,
    /// Tasks completed per cross-node latency round.
    pub latency_tasks: usize,
    /// DPoP proofs signed and checked in one thread per round (the floor).
    pub floor_proofs: usize,
    /// Tasks completed per webhook round.
    pub webhook_tasks: usize,
    /// Webhook subscriptions (each gets every task's terminal event).
    pub webhook_subscriptions: usize,
}

impl Sizes {
    /// The full pass.
    pub fn full() -> Self {
        Self {
            rounds: 3,
            ledger_tasks: 1000,
            conns: 50,
            warmup_ms: 1_000,
            measure_ms: 5_000,
            latency_tasks: 200,
            floor_proofs: 5_000,
            webhook_tasks: 250,
            webhook_subscriptions: 16,
        }
    }

    /// The smoke pass: tiny, one round.
    pub fn smoke() -> Self {
        Self {
            rounds: 1,
            ledger_tasks: 20,
            conns: 4,
            warmup_ms: 50,
            measure_ms: 250,
            latency_tasks: 10,
            floor_proofs: 100,
            webhook_tasks: 10,
            webhook_subscriptions: 4,
        }
    }
}

/// What `caps` runs on.
#[derive(Debug, Clone)]
pub struct Options {
    /// The `bench-server` binary.
    pub server: PathBuf,
    /// The `bench-as` binary.
    pub bench_as: PathBuf,
    /// The parts, in order.
    pub parts: Vec<Part>,
    /// The sizes.
    pub sizes: Sizes,
    /// The stores (PostgreSQL only with a URL).
    pub stores: Stores,
    /// The SQLite ledger's file.
    pub ledger_file: PathBuf,
    /// The ledgers the ledger part measures, in order.
    pub ledgers: Vec<LedgerMode>,
}

/// Everything one run measured.
#[derive(Debug, Default)]
pub struct Results {
    /// The ledger measurements.
    pub ledger: Vec<LedgerSample>,
    /// The W4 measurements.
    pub w4: Vec<W4Sample>,
    /// The cross-node latency rounds.
    pub cross_node: Vec<CrossNode>,
    /// The W1 measurements.
    pub dpop: Vec<DpopSample>,
    /// What one proof costs on one core (one measurement per round).
    pub dpop_floor: Vec<DpopFloor>,
    /// The webhook rounds.
    pub webhooks: Vec<WebhookSample>,
}

/// Off then on in even rounds, on then off in odd ones.
fn turns(round: usize) -> [bool; 2] {
    if round.is_multiple_of(2) { [false, true] } else { [true, false] }
}

/// Runs the parts, rounds interleaved within each (the order turning round by round); `log` gets one line per measurement.
pub async fn run(o: &Options, log: impl Fn(&str)) -> Result<Results, String> {
    let mut r = Results::default();
    let z = &o.sizes;
    if o.parts.contains(&Part::Ledger) {
        for round in 0..z.rounds {
            // Each round starts with another mode, so none always runs first.
            for &mode in o.ledgers.iter().cycle().skip(round).take(o.ledgers.len()) {
                let s = ledger::run_one(&o.server, mode, z.ledger_tasks, round, &o.ledger_file).await?;
                log(&s.line());
                r.ledger.push(s);
            }
        }
    }
    if o.parts.contains(&Part::Events) {
        // The memory store first: the reference server's default, Events on.
        let mut stores = vec![StoreKind::Memory, StoreKind::Sqlite];
        if o.stores.database_url.is_some() {
            stores.push(StoreKind::Postgres);
        }
        for round in 0..z.rounds {
            for &store in &stores {
                for on in turns(round) {
                    let s = events::w4(&o.server, store, on, &o.stores, z, round).await?;
                    log(&s.line());
                    r.w4.push(s);
                }
            }
        }
        if o.stores.database_url.is_some() {
            for round in 0..z.rounds {
                let s = events::cross_node(&o.server, &o.stores, z, round).await?;
                log(&s.line());
                r.cross_node.push(s);
            }
        } else {
            log("events cross-node: skipped (no PostgreSQL: set DATABASE_URL or --database-url)");
        }
    }
    if o.parts.contains(&Part::Dpop) {
        let issued = dpop::issue(&o.bench_as)?;
        dpop::binding_checked(&o.server, &issued).await?;
        for round in 0..z.rounds {
            for on in turns(round) {
                let s = dpop::w1(&o.server, &issued, on, z, round).await?;
                log(&s.line());
                r.dpop.push(s);
            }
            let f = dpop::floor(&issued, z.floor_proofs).await?;
            log(&f.line());
            r.dpop_floor.push(f);
        }
    }
    if o.parts.contains(&Part::Webhooks) {
        for round in 0..z.rounds {
            let s = webhooks::round(&o.server, z, round).await?;
            log(&s.line());
            r.webhooks.push(s);
        }
    }
    Ok(r)
}

/// What a smoke pass must show: nothing failed, every ledger holds every task,
/// every cross-node event arrived.
pub fn check(r: &Results) -> Result<(), String> {
    let mut problems = ledger::check(&r.ledger);
    for s in &r.w4 {
        if s.requests == 0 || s.errors > 0 {
            problems.push(s.line());
        }
    }
    for s in &r.dpop {
        if s.requests == 0 || s.errors > 0 {
            problems.push(s.line());
        }
    }
    for s in &r.webhooks {
        if s.delivered != s.expected || s.floor_posts != s.expected {
            problems.push(s.line());
        }
    }
    for s in &r.cross_node {
        if s.latencies_us.len() != s.tasks {
            problems.push(s.line());
        }
    }
    if problems.is_empty() { Ok(()) } else { Err(format!("caps failed:\n  {}", problems.join("\n  "))) }
}
