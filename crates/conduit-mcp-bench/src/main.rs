//! `conduit-mcp-bench`: runs the benchmark plan against the servers and writes
//! `docs/benchmarks.md` and its chart. `scripts/bench.sh` builds the servers and calls it.
//!
//! ```text
//! conduit-mcp-bench run --server target/release/bench-server --echo target/release/bench-echo \
//!     --rmcp target/rmcp-peer/release/rmcp-peer --fixture target/release/conduit-mcp-conformance \
//!     [--smoke] [--out docs/benchmarks.md] [--chart docs/benchmarks.svg] \
//!     [--stores memory,sqlite,postgres] [--database-url postgres://…] [--sqlite-path FILE] [--pg-schema NAME]
//! conduit-mcp-bench report --json target/bench/results.json [--out …] [--chart …]
//! conduit-mcp-bench follow --server target/release/bench-server [--tasks 1000] [--rounds 3] [--smoke] [--out FILE]
//! conduit-mcp-bench caps --server target/release/bench-server --bench-as target/release/bench-as \
//!     [--only ledger,events,dpop] [--rounds 3] [--smoke] [--database-url URL] [--out FILE]
//! ```
//!
//! The soak is not a benchmark: it is its own binary, `conduit-mcp-soak` (`scripts/soak.sh`).

use clap::{Args, Parser, Subcommand};
use conduit_mcp_bench::harness::{Binaries, Harness, Meta, Peer, Plan, Results, Store, Workload};
use conduit_mcp_bench::ours::{self, StoreKind};
use conduit_mcp_bench::{chart, report};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// Benchmarks conduit-mcp against rmcp and a bare axum echo.
#[derive(Debug, Parser)]
#[command(name = "conduit-mcp-bench", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Run the plan and write the report.
    Run(Box<RunArgs>),
    /// Rewrite the report and chart from saved results.
    Report(ReportArgs),
    /// Drive one workload against a server that is already running (for profiling it).
    Load(LoadArgs),
    /// The library client following tasks to completion, one listen stream against polling.
    Follow(FollowArgs),
    /// The task ledger, the Events change log and DPoP, each against itself off.
    Caps(conduit_mcp_bench::caps::CapsArgs),
}

#[derive(Debug, Args)]
struct FollowArgs {
    /// The `bench-server` binary (started fresh, memory store, per mode and round).
    #[arg(long)]
    server: PathBuf,
    /// Tasks followed per round (default 1000; 20 with --smoke).
    #[arg(long)]
    tasks: Option<usize>,
    /// Rounds (default 3; 1 with --smoke).
    #[arg(long)]
    rounds: Option<usize>,
    /// The modes, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "listen,poll")]
    modes: Vec<conduit_mcp_bench::follow::Mode>,
    /// Tiny and strict: fails unless every follower saw its terminal event on one listen stream.
    #[arg(long)]
    smoke: bool,
    /// Where the report section goes.
    #[arg(long, default_value = "target/bench/follow.md")]
    out: PathBuf,
    /// The command line recorded in the section.
    #[arg(long, default_value = "scripts/bench.sh")]
    command: String,
}

#[derive(Debug, Args)]
struct LoadArgs {
    /// The server's address.
    #[arg(long)]
    addr: std::net::SocketAddr,
    /// W1 (greet), W2 (tasks/get on one new task), W3 (tasks/get on random ids of --table new tasks) or W4 (creates).
    #[arg(long)]
    workload: String,
    /// Connections.
    #[arg(long, default_value_t = 50)]
    conns: usize,
    /// How long, ms.
    #[arg(long, default_value_t = 10_000)]
    ms: u64,
    /// Tasks to create first for W3.
    #[arg(long, default_value_t = 100_000)]
    table: usize,
    /// The task tool creates call (default the bench server's `slow_compute`; the
    /// reference server's is `job`).
    #[arg(long)]
    create_tool: Option<String>,
    /// The create's arguments, a JSON object (with --create-tool).
    #[arg(long, default_value = "{}")]
    create_args: String,
    /// Requests per second at most, over all connections (default: as fast as the server
    /// answers). Compares a server's CPU per request at the same rate, e.g. one node against
    /// each of two.
    #[arg(long)]
    rate: Option<f64>,
}

#[derive(Debug, Args)]
struct Output {
    /// The report.
    #[arg(long, default_value = "docs/benchmarks.md")]
    out: PathBuf,
    /// The chart (SVG).
    #[arg(long, default_value = "docs/benchmarks.svg")]
    chart: PathBuf,
    /// The raw results (JSON).
    #[arg(long, default_value = "target/bench/results.json")]
    json: PathBuf,
}

#[derive(Debug, Args)]
struct RunArgs {
    /// The `bench-server` binary.
    #[arg(long)]
    server: PathBuf,
    /// The `bench-echo` binary.
    #[arg(long)]
    echo: PathBuf,
    /// The `rmcp-peer` binary (without it, rmcp is left out).
    #[arg(long)]
    rmcp: Option<PathBuf>,
    /// The `conduit-mcp-conformance` binary: the conformance fixture on the library's
    /// default path (`http::serve`), run on W1 and W2 (without it, it is left out).
    #[arg(long)]
    fixture: Option<PathBuf>,
    /// The rmcp peer's `Cargo.lock`, to report rmcp's exact version.
    #[arg(long)]
    rmcp_lock: Option<PathBuf>,
    /// The smoke pass: every workload for a quarter of a second on tiny sizes, one round; fails on any error.
    #[arg(long)]
    smoke: bool,
    /// Rounds (default 3; 1 with --smoke).
    #[arg(long)]
    rounds: Option<usize>,
    /// Stores ours runs on, comma-separated (default: memory and sqlite, and postgres
    /// when a database URL is given by --database-url or DATABASE_URL).
    #[arg(long, value_delimiter = ',')]
    stores: Vec<StoreKind>,
    /// Run only these workloads (W1 … W9, comma-separated; W3, W4 and W7 run together).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Length of each measured phase, ms (overrides the plan's).
    #[arg(long)]
    measure_ms: Option<u64>,
    /// Tasks W4 creates and W3 reads among (overrides the plan's).
    #[arg(long)]
    table: Option<usize>,
    /// The PostgreSQL URL for `--stores postgres` (default: the DATABASE_URL environment variable).
    #[arg(long)]
    database_url: Option<String>,
    /// The PostgreSQL schema the bench servers use; dropped and recreated for every run.
    #[arg(long, default_value = ours::DEFAULT_PG_SCHEMA)]
    pg_schema: String,
    /// The SQLite file the bench servers use; removed and recreated for every run
    /// (default target/bench/sqlite/bench.db, or smoke.db with --smoke).
    #[arg(long)]
    sqlite_path: Option<PathBuf>,
    /// The command line recorded in the report.
    #[arg(long, default_value = "scripts/bench.sh")]
    command: String,
    #[command(flatten)]
    output: Output,
}

#[derive(Debug, Args)]
struct ReportArgs {
    #[command(flatten)]
    output: Output,
}

fn sh(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn meta(args: &RunArgs) -> Meta {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name")?.split_once(':').map(|(_, v)| v.trim().to_owned()))
        .unwrap_or_else(|| "unknown".into());
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_kib: f64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:")?.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0);
    let rmcp = args
        .rmcp_lock
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|lock| {
            let at = lock.find("name = \"rmcp\"\nversion = \"")? + "name = \"rmcp\"\nversion = \"".len();
            Some(lock[at..].split('"').next()?.to_owned())
        })
        .unwrap_or_else(|| "3.11 (version not read)".into());
    let commit = sh("git", &["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let dirty = sh("git", &["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    Meta {
        cpu,
        cores: std::thread::available_parallelism().map_or(1, usize::from),
        mem_gib: mem_kib / 1024.0 / 1024.0,
        kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim().to_owned(),
        rustc: sh("rustc", &["-V"]).unwrap_or_else(|| "unknown".into()),
        rmcp,
        conduit: format!(
            "{} at commit {commit}{}",
            env!("CARGO_PKG_VERSION"),
            if dirty { " with uncommitted changes" } else { "" }
        ),
        date: sh("date", &["-u", "+%Y-%m-%d %H:%M UTC"]).unwrap_or_default(),
        command: args.command.clone(),
        load_before: std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim().to_owned(),
        ..Meta::default()
    }
}

fn write(results: &Results, out: &Output) -> Result<(), String> {
    for p in [&out.out, &out.chart, &out.json] {
        if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
    }
    let json = serde_json::to_string_pretty(results).map_err(|e| e.to_string())?;
    std::fs::write(&out.json, json).map_err(|e| format!("cannot write {}: {e}", out.json.display()))?;
    chart::draw(results, &report::peers(results), &out.chart)?;
    let previous = std::fs::read_to_string(&out.out).ok();
    let link = relative_link(&out.out, &out.chart);
    let doc = report::render(results, previous.as_deref(), &link);
    std::fs::write(&out.out, doc).map_err(|e| format!("cannot write {}: {e}", out.out.display()))?;
    eprintln!("wrote {}, {} and {}", out.out.display(), out.chart.display(), out.json.display());
    Ok(())
}

/// The chart's path as the report links it: its file name when both share a folder.
fn relative_link(doc: &Path, chart: &Path) -> String {
    if doc.parent() == chart.parent() {
        return chart.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    }
    chart.display().to_string()
}

/// What a smoke pass must show: every workload answered, nothing failed, and the
/// fixture measured on W1 and W2 at every connection count when it was given.
fn smoke_check(r: &Results, fixture: bool) -> Result<(), String> {
    let mut problems = Vec::new();
    let plan = r.plan.clone().unwrap_or_else(Plan::smoke);
    for w in [Workload::W1, Workload::W2].into_iter().filter(|w| fixture && plan.runs(w.name())) {
        for &c in &plan.conns {
            if !r.samples.iter().any(|s| s.workload == w && s.peer == Peer::Fixture && s.conns == c) {
                problems.push(format!("{w:?} {} at {c} conns: not run", Peer::Fixture.label()));
            }
        }
    }
    for s in &r.samples {
        if s.requests == 0 || s.errors > 0 {
            problems.push(format!(
                "{:?} {} at {} conns: {} requests, {} errors ({})",
                s.workload,
                s.peer.label(),
                s.conns,
                s.requests,
                s.errors,
                s.first_error.as_deref().unwrap_or("-")
            ));
        }
    }
    for n in &r.notify {
        if n.received != n.tasks {
            problems.push(format!(
                "W5 {} at {} streams: {} of {} notifications",
                conduit_mcp_bench::harness::notify_label(n.peer, n.nodes),
                n.conns,
                n.received,
                n.tasks
            ));
        }
    }
    for s in &r.sweep {
        if s.result.removed != s.result.expired || s.result.during_samples == 0 {
            problems.push(format!(
                "W6 at {} getters: removed {} of {} expired, {} calls during the sweep",
                s.result.getters, s.result.removed, s.result.expired, s.result.during_samples
            ));
        }
    }
    for s in r.sessions.iter().filter(|s| s.sessions < plan.sessions) {
        problems.push(format!("W9 {}: {} of {} sessions opened", s.peer.label(), s.sessions, plan.sessions));
    }
    if (plan.runs("W6") && r.sweep.is_empty()) || (plan.runs("W5") && r.notify.is_empty()) {
        problems.push("W5 or W6 produced no result".into());
    }
    if problems.is_empty() { Ok(()) } else { Err(format!("smoke pass failed:\n  {}", problems.join("\n  "))) }
}

/// The stores a pass runs ours on when `--stores` is not given.
fn default_stores(database_url: Option<&str>) -> Vec<StoreKind> {
    let mut v = vec![StoreKind::Memory, StoreKind::Sqlite];
    if database_url.is_some() {
        v.push(StoreKind::Postgres);
    }
    v
}

fn run(args: RunArgs) -> Result<(), String> {
    let mut plan = if args.smoke { Plan::smoke() } else { Plan::full() };
    if let Some(r) = args.rounds {
        plan.rounds = r.max(1);
    }
    let database_url =
        args.database_url.clone().or_else(|| std::env::var("DATABASE_URL").ok()).filter(|u| !u.is_empty());
    let stores = if args.stores.is_empty() { default_stores(database_url.as_deref()) } else { args.stores.clone() };
    plan.stores = stores.iter().map(|s| Store::from(*s)).collect();
    plan.only = args.only.clone();
    if let Some(ms) = args.measure_ms {
        plan.measure_ms = ms;
    }
    if let Some(t) = args.table {
        plan.table = t.max(1);
        plan.bucket = plan.bucket.min(plan.table);
    }
    ours::valid_schema(&args.pg_schema)?;
    let sqlite_file = args.sqlite_path.clone().unwrap_or_else(|| {
        PathBuf::from(if args.smoke { "target/bench/sqlite/smoke.db" } else { "target/bench/sqlite/bench.db" })
    });
    let sqlite_path = sqlite_file.display().to_string();
    for &s in &stores {
        // Refuse a store the bench server cannot run before spending minutes on the others.
        let url = match s {
            StoreKind::Memory => None,
            StoreKind::Sqlite => Some(sqlite_path.as_str()),
            StoreKind::Postgres => database_url.as_deref(),
        };
        ours::store_available(s, url)
            .map_err(|e| if s == StoreKind::Postgres { format!("{e}, or set DATABASE_URL") } else { e })?;
    }
    let bins = Binaries {
        server: args.server.clone(),
        echo: args.echo.clone(),
        rmcp: args.rmcp.clone(),
        fixture: args.fixture.clone(),
        database_url,
        sqlite_path: sqlite_file,
        pg_schema: args.pg_schema.clone(),
    };
    let meta = meta(&args);
    let harness = Harness::new(bins, plan, |line| eprintln!("{line}"));
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    let results = rt.block_on(harness.run(meta))?;
    write(&results, &args.output)?;
    if args.smoke {
        smoke_check(&results, args.fixture.is_some())?;
        eprintln!("smoke pass: every workload ran without errors");
    }
    Ok(())
}

fn load(args: LoadArgs) -> Result<(), String> {
    use conduit_mcp_bench::load::{self as l, Load};
    use conduit_mcp_bench::wire;
    use std::sync::Arc;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    rt.block_on(async move {
        let host = args.addr.to_string();
        let base = Load {
            addr: args.addr,
            conns: args.conns,
            duration: Some(std::time::Duration::from_millis(args.ms)),
            max_requests: None,
            expect: b"\"result\"",
            collect_ids: false,
            pace: args.rate,
        };
        let h = host.clone();
        let creates: l::Builder = match args.create_tool.clone() {
            None => Arc::new(move |n, out| wire::http_request(out, &h, "/mcp", &wire::create_task(n))),
            Some(tool) => {
                let a = args.create_args.clone();
                Arc::new(move |n, out| wire::http_request(out, &h, "/mcp", &wire::create_with(n, &tool, &a)))
            }
        };
        let build: l::Builder = match args.workload.to_ascii_uppercase().as_str() {
            "W1" => Arc::new(move |n, out| wire::http_request(out, &host, "/mcp", &wire::greet(n))),
            "W4" => creates,
            w @ ("W2" | "W3") => {
                let count = if w == "W2" { 1 } else { args.table as u64 };
                let setup =
                    Load { duration: None, max_requests: Some(count), collect_ids: true, pace: None, ..base.clone() };
                let ids = Arc::new(l::run(&setup, creates).await.map_err(|e| e.to_string())?.ids);
                if ids.is_empty() {
                    return Err("no task was created".to_owned());
                }
                Arc::new(move |n, out| {
                    let id = &ids[(l::mix(n) % ids.len() as u64) as usize];
                    wire::http_request(out, &host, "/mcp", &wire::tasks_get(n, id))
                })
            }
            other => return Err(format!("unknown workload {other:?} (W1, W2, W3 or W4)")),
        };
        let r = l::run(&base, build).await.map_err(|e| e.to_string())?;
        eprintln!(
            "{} requests in {:.1} s: {:.0} req/s, p50 {:.1} µs, p99 {:.1} µs, {} errors {}",
            r.requests,
            r.elapsed.as_secs_f64(),
            r.rps(),
            f64::from(conduit_mcp_bench::stats::quantile(&r.latencies, 0.5)) / 1000.0,
            f64::from(conduit_mcp_bench::stats::quantile(&r.latencies, 0.99)) / 1000.0,
            r.errors,
            r.first_error.unwrap_or_default()
        );
        Ok(())
    })
}

fn follow(args: FollowArgs) -> Result<(), String> {
    use conduit_mcp_bench::follow::{self as f, Context, Options};
    let opts = Options {
        server: args.server,
        tasks: args.tasks.unwrap_or(if args.smoke { 20 } else { 1000 }).max(1),
        rounds: args.rounds.unwrap_or(if args.smoke { 1 } else { 3 }).max(1),
        modes: args.modes,
    };
    let loadavg = || std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim().to_owned();
    let before = loadavg();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    let samples = rt.block_on(f::run(&opts, |line| eprintln!("{line}")))?;
    let ctx = Context {
        command: args.command,
        date: sh("date", &["-u", "+%Y-%m-%d %H:%M UTC"]).unwrap_or_default(),
        load: (before, loadavg()),
        profile: if cfg!(debug_assertions) { "debug" } else { "release" }.into(),
    };
    if let Some(dir) = args.out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    std::fs::write(&args.out, f::render(&samples, &ctx))
        .map_err(|e| format!("cannot write {}: {e}", args.out.display()))?;
    eprintln!("wrote {}", args.out.display());
    if args.smoke {
        f::check(&samples)?;
        eprintln!("follow smoke: every task followed to its end, one listen stream");
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Cmd::Run(a) => run(*a),
        Cmd::Load(a) => load(a),
        Cmd::Follow(a) => follow(a),
        Cmd::Caps(a) => conduit_mcp_bench::caps::main(a),
        Cmd::Report(a) => std::fs::read_to_string(&a.output.json)
            .map_err(|e| format!("cannot read {}: {e}", a.output.json.display()))
            .and_then(|j| serde_json::from_str::<Results>(&j).map_err(|e| e.to_string()))
            .and_then(|r| write(&r, &a.output)),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
