//! The benchmark plan and its runs: servers started fresh for every run, in the
//! order A B C A B C A B C, measured from outside through `/proc`.

use crate::client::Conn;
use crate::load::{self, Builder, Load, LoadResult};
use crate::ours::{StoreKind, completion_stamp, now_us};
use crate::procfs;
use crate::stats::quantile;
use crate::sweep::SweepResult;
use crate::wire;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Workload {
    /// `tools/call greet`.
    W1,
    /// `tasks/get` on one live task.
    W2,
    /// `tasks/get` on random ids among the W4 table.
    W3,
    /// Task creation from 0 to the table size.
    W4,
}

impl Workload {
    /// `W1` … `W4`.
    pub fn name(self) -> &'static str {
        match self {
            Self::W1 => "W1",
            Self::W2 => "W2",
            Self::W3 => "W3",
            Self::W4 => "W4",
        }
    }
}

/// One of the servers under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Peer {
    /// conduit-mcp on this store.
    Ours(Store),
    /// The rmcp 3.11 peer.
    Rmcp,
    /// The bare axum echo.
    Echo,
}

/// [`StoreKind`] as it is recorded in the results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Store {
    /// `MemoryStore`.
    Memory,
    /// SQLite.
    Sqlite,
    /// PostgreSQL.
    Postgres,
}

impl From<StoreKind> for Store {
    fn from(k: StoreKind) -> Self {
        match k {
            StoreKind::Memory => Self::Memory,
            StoreKind::Sqlite => Self::Sqlite,
            StoreKind::Postgres => Self::Postgres,
        }
    }
}

impl From<Store> for StoreKind {
    fn from(s: Store) -> Self {
        match s {
            Store::Memory => Self::Memory,
            Store::Sqlite => Self::Sqlite,
            Store::Postgres => Self::Postgres,
        }
    }
}

impl Peer {
    /// The label used in tables and the chart.
    pub fn label(self) -> String {
        match self {
            Self::Ours(Store::Memory) => "conduit-mcp".into(),
            Self::Ours(s) => format!("conduit-mcp ({})", StoreKind::from(s)),
            Self::Rmcp => "rmcp 3.11".into(),
            Self::Echo => "axum echo".into(),
        }
    }
}

/// Where the three server binaries are.
#[derive(Debug, Clone)]
pub struct Binaries {
    /// `bench-server`.
    pub server: PathBuf,
    /// `bench-echo`.
    pub echo: PathBuf,
    /// `rmcp-peer`; without it the rmcp columns are empty.
    pub rmcp: Option<PathBuf>,
    /// The PostgreSQL URL ours runs on with `--store postgres`.
    pub database_url: Option<String>,
    /// The SQLite file ours runs on with `--store sqlite` (removed and recreated for every start).
    pub sqlite_path: PathBuf,
    /// The PostgreSQL schema ours runs on (dropped and recreated for every start).
    pub pg_schema: String,
}

/// Sizes and durations of one benchmark pass.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    /// Rounds (each server runs once per round, alternating).
    pub rounds: usize,
    /// Connection counts.
    pub conns: Vec<usize>,
    /// Warm-up before each measured phase.
    pub warmup_ms: u64,
    /// Measured phase of W1, W2, W3.
    pub measure_ms: u64,
    /// Tasks W4 creates (and W3 reads among).
    pub table: usize,
    /// W4 growth is reported per this many creates.
    pub bucket: usize,
    /// W4 stops after this long even if the table is not full (rmcp slows as it grows).
    pub create_cap_ms: u64,
    /// The same cap for ours on SQLite and PostgreSQL, whose creates are durable commits
    /// (shorter, so that the full pass stays under 20 minutes).
    #[serde(default = "default_sql_create_cap_ms")]
    pub sql_create_cap_ms: u64,
    /// Tasks W5 completes.
    pub notify_tasks: usize,
    /// Tasks in the W6 store.
    pub sweep_tasks: usize,
    /// Percentage of them expired.
    pub sweep_expired_percent: usize,
    /// W6 baseline length.
    pub sweep_baseline_ms: u64,
    /// Task stores ours runs on.
    pub stores: Vec<Store>,
    /// Whether this is the CI smoke pass.
    pub smoke: bool,
    /// Run only these workloads (`W1` … `W7`); empty runs all. W3, W4 and W7 run together.
    #[serde(default)]
    pub only: Vec<String>,
}

impl Plan {
    /// The full pass `scripts/bench.sh` runs.
    pub fn full() -> Self {
        Self {
            rounds: 3,
            conns: vec![1, 50],
            warmup_ms: 1_000,
            measure_ms: 5_000,
            table: 100_000,
            bucket: 10_000,
            create_cap_ms: 30_000,
            sql_create_cap_ms: default_sql_create_cap_ms(),
            notify_tasks: 1_000,
            sweep_tasks: 1_000_000,
            sweep_expired_percent: 10,
            sweep_baseline_ms: 2_000,
            stores: vec![Store::Memory],
            smoke: false,
            only: Vec::new(),
        }
    }

    /// The smoke pass: every workload for 2 s on tiny sizes, one round.
    pub fn smoke() -> Self {
        Self {
            rounds: 1,
            conns: vec![1, 50],
            warmup_ms: 200,
            measure_ms: 2_000,
            table: 2_000,
            bucket: 500,
            create_cap_ms: 2_000,
            sql_create_cap_ms: 2_000,
            notify_tasks: 20,
            sweep_tasks: 20_000,
            sweep_expired_percent: 10,
            sweep_baseline_ms: 500,
            stores: vec![Store::Memory],
            smoke: true,
            only: Vec::new(),
        }
    }

    /// The W4 time cap for a server of this pass.
    pub fn create_cap(&self, peer: Peer) -> Duration {
        match peer {
            Peer::Ours(Store::Sqlite | Store::Postgres) => Duration::from_millis(self.sql_create_cap_ms),
            _ => Duration::from_millis(self.create_cap_ms),
        }
    }

    /// Whether workload `name` (`W1` … `W7`) is part of this pass.
    pub fn runs(&self, name: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|w| w.eq_ignore_ascii_case(name))
    }

    fn warmup(&self) -> Duration {
        Duration::from_millis(self.warmup_ms)
    }

    fn measure(&self) -> Duration {
        Duration::from_millis(self.measure_ms)
    }
}

fn default_sql_create_cap_ms() -> u64 {
    8_000
}

fn one() -> usize {
    1
}

/// One measured run of one workload on one server.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Sample {
    /// Which workload.
    pub workload: Workload,
    /// Which server.
    pub peer: Peer,
    /// Connections.
    pub conns: usize,
    /// Round (0-based).
    pub round: usize,
    /// Responses received.
    pub requests: u64,
    /// Failed responses.
    pub errors: u64,
    /// Length of the measured phase, s.
    pub secs: f64,
    /// Responses per second.
    pub rps: f64,
    /// Median latency, µs.
    pub p50_us: f64,
    /// 99th percentile latency, µs.
    pub p99_us: f64,
    /// Server CPU (user + system) per response, µs.
    pub cpu_us_per_req: f64,
    /// Server peak resident memory (`VmHWM`) at the end of the phase, KiB.
    pub peak_rss_kib: u64,
    /// W3: tasks in the table read; W4: tasks created.
    pub table: Option<usize>,
    /// W4: creates per second in each successive bucket.
    pub buckets: Vec<f64>,
    /// W4: stopped by the time cap before the table was full.
    pub capped: bool,
    /// W4 (W7): resident memory added per created task once idle, bytes.
    pub bytes_per_task: Option<f64>,
    /// The first failure, if any.
    pub first_error: Option<String>,
}

/// One W5 run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NotifySample {
    /// Which server.
    pub peer: Peer,
    /// Nodes: 1, or 2 when the listen streams are on a second server sharing the
    /// PostgreSQL schema with the one that creates and completes the tasks.
    #[serde(default = "one")]
    pub nodes: usize,
    /// Listen streams.
    pub conns: usize,
    /// Round (0-based).
    pub round: usize,
    /// Tasks completed.
    pub tasks: usize,
    /// Notifications received.
    pub received: usize,
    /// Median time from `complete` to arrival, µs.
    pub p50_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
    /// Slowest, µs.
    pub max_us: f64,
}

/// How W5 tables and progress lines name a server: `conduit-mcp (postgres, 2 nodes)` for two nodes.
pub fn notify_label(peer: Peer, nodes: usize) -> String {
    match (peer, nodes) {
        (Peer::Ours(s), n) if n > 1 => format!("conduit-mcp ({}, {n} nodes)", StoreKind::from(s)),
        (p, _) => p.label(),
    }
}

/// One W6 run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepSample {
    /// Round (0-based).
    pub round: usize,
    /// The in-process measurement.
    pub result: SweepResult,
}

/// The machine and the software measured.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Meta {
    /// CPU model.
    pub cpu: String,
    /// Cores available.
    pub cores: usize,
    /// Memory, GiB.
    pub mem_gib: f64,
    /// Kernel release.
    pub kernel: String,
    /// `rustc -V`.
    pub rustc: String,
    /// rmcp version from the peer's lockfile.
    pub rmcp: String,
    /// conduit-mcp version and commit.
    pub conduit: String,
    /// When the run started (UTC).
    pub date: String,
    /// The command that produced the results.
    pub command: String,
    /// The response body sizes the echo answers with (greet, tasks/get, create), bytes.
    pub echo_sizes: [usize; 3],
    /// rmcp's body sizes for the same three requests, bytes (zero without rmcp).
    #[serde(default)]
    pub rmcp_sizes: [usize; 3],
    /// `/proc/loadavg` when the pass started (other work on the machine skews the numbers).
    #[serde(default)]
    pub load_before: String,
    /// Wall time of the whole pass, s.
    pub wall_secs: f64,
}

/// Everything a pass measured.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Results {
    /// Machine and versions.
    pub meta: Meta,
    /// The plan.
    pub plan: Option<Plan>,
    /// W1–W4 (W7 rides on W4).
    pub samples: Vec<Sample>,
    /// W5.
    pub notify: Vec<NotifySample>,
    /// W6.
    pub sweep: Vec<SweepSample>,
}

/// A server process, killed when dropped.
struct Proc {
    child: Child,
    pid: u32,
    addr: SocketAddr,
    tail: Arc<Mutex<VecDeque<String>>>,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Proc {
    fn start(program: &PathBuf, args: &[String]) -> Result<Self, String> {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
        let pid = child.id();
        let stderr = child.stderr.take().ok_or("no stderr")?;
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let t2 = tail.clone();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(rest) = line.strip_prefix("listening on http://")
                    && let Some(tx) = tx.take()
                {
                    let _ = tx.send(rest.split('/').next().unwrap_or_default().to_owned());
                }
                if let Ok(mut t) = t2.lock() {
                    t.push_back(line);
                    if t.len() > 20 {
                        t.pop_front();
                    }
                }
            }
        });
        let mut p = Self { child, pid, addr: SocketAddr::from(([127, 0, 0, 1], 0)), tail };
        match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(a) => {
                p.addr = a.parse().map_err(|e| format!("{} printed a bad address {a:?}: {e}", program.display()))?;
                Ok(p)
            }
            Err(_) => Err(format!("{} did not start listening: {}", program.display(), p.tail())),
        }
    }

    fn tail(&self) -> String {
        self.tail.lock().map(|t| t.iter().cloned().collect::<Vec<_>>().join(" | ")).unwrap_or_default()
    }

    fn cpu(&self) -> u64 {
        procfs::cpu_ticks(self.pid).unwrap_or(0)
    }

    fn kib(&self, key: &str) -> u64 {
        procfs::status_kib(self.pid, key).unwrap_or(0)
    }
}

/// Runs a plan and collects the results.
pub struct Harness {
    bins: Binaries,
    plan: Plan,
    ticks: u64,
    echo_sizes: [usize; 3],
    /// Progress lines go here.
    log: Box<dyn Fn(&str) + Send + Sync>,
}

fn io_err(e: std::io::Error) -> String {
    e.to_string()
}

/// A task id of the same shape as ours, for the echo (which has no tasks).
fn fake_id(n: u64) -> String {
    let mut s = format!("{:016x}{:016x}{:011x}", load::mix(n), load::mix(n + 1), load::mix(n + 2));
    s.truncate(43);
    s
}

fn us(ns: u32) -> f64 {
    f64::from(ns) / 1000.0
}

impl Harness {
    /// A harness for these binaries and this plan; progress goes to `log`.
    pub fn new(bins: Binaries, plan: Plan, log: impl Fn(&str) + Send + Sync + 'static) -> Self {
        Self { bins, plan, ticks: procfs::clock_ticks(), echo_sizes: [0; 3], log: Box::new(log) }
    }

    /// The servers of this pass, in the order each round runs them.
    pub fn peers(&self) -> Vec<Peer> {
        self.peers_for(Workload::W2)
    }

    /// The servers `workload` runs on: W1 (`greet`) never touches the task store, so
    /// it runs ours on the memory store only (if that is in the pass, else the first store).
    pub fn peers_for(&self, workload: Workload) -> Vec<Peer> {
        let stores: Vec<Store> = match workload {
            Workload::W1 => {
                let first = self.plan.stores.iter().find(|s| **s == Store::Memory).or(self.plan.stores.first());
                first.into_iter().copied().collect()
            }
            _ => self.plan.stores.clone(),
        };
        let mut v: Vec<Peer> = stores.into_iter().map(Peer::Ours).collect();
        if self.bins.rmcp.is_some() {
            v.push(Peer::Rmcp);
        }
        v.push(Peer::Echo);
        v
    }

    /// Starts `peer` on an empty store.
    fn start(&self, peer: Peer) -> Result<Proc, String> {
        self.start_node(peer, true)
    }

    /// Starts `peer`; ours on SQLite or PostgreSQL starts from an empty store when
    /// `fresh` (a second node joins the first's schema without it).
    fn start_node(&self, peer: Peer, fresh: bool) -> Result<Proc, String> {
        let listen = vec!["--listen".to_owned(), "127.0.0.1:0".to_owned()];
        match peer {
            Peer::Ours(store) => {
                let mut args = listen;
                args.extend(["--store".to_owned(), StoreKind::from(store).to_string()]);
                match store {
                    Store::Memory => {}
                    Store::Sqlite => {
                        args.extend(["--database-url".to_owned(), self.bins.sqlite_path.display().to_string()]);
                    }
                    Store::Postgres => {
                        let url = self.bins.database_url.clone().ok_or("--stores postgres needs a database URL")?;
                        args.extend(["--database-url".to_owned(), url]);
                        args.extend(["--pg-schema".to_owned(), self.bins.pg_schema.clone()]);
                    }
                }
                if fresh && store != Store::Memory {
                    args.push("--fresh".to_owned());
                }
                Proc::start(&self.bins.server, &args)
            }
            Peer::Rmcp => Proc::start(self.bins.rmcp.as_ref().ok_or("no rmcp peer binary")?, &listen),
            Peer::Echo => {
                let mut args = listen;
                let [a, b, c] = self.echo_sizes;
                args.extend(["--sizes".to_owned(), format!("{a},{b},{c}")]);
                Proc::start(&self.bins.echo, &args)
            }
        }
    }

    /// One request on a fresh connection; returns the body.
    async fn once(addr: SocketAddr, path: &str, call: &wire::Call) -> Result<Vec<u8>, String> {
        let mut c = Conn::connect(addr).await.map_err(io_err)?;
        let mut req = Vec::new();
        wire::http_request(&mut req, &addr.to_string(), path, call);
        let status = c.roundtrip(&req).await.map_err(io_err)?;
        let body = c.body().to_vec();
        if status != 200 {
            return Err(format!("{} answered HTTP {status}: {}", call.method, String::from_utf8_lossy(&body)));
        }
        Ok(body)
    }

    /// Creates one task and returns its id.
    async fn create_one(addr: SocketAddr, n: u64) -> Result<String, String> {
        let body = Self::once(addr, "/mcp", &wire::create_task(n)).await?;
        wire::find_str_field(&body, "taskId")
            .map(String::from)
            .ok_or_else(|| format!("slow_compute did not return a task: {}", String::from_utf8_lossy(&body)))
    }

    /// The body sizes of `peer`'s answers to greet, `tasks/get` and a create.
    async fn sizes(&self, peer: Peer) -> Result<[usize; 3], String> {
        let p = self.start(peer)?;
        let greet = Self::once(p.addr, "/mcp", &wire::greet(1)).await?;
        // Let conduit-mcp's janitor start-up recovery pass (see `simple`).
        Self::create_one(p.addr, 0).await?;
        tokio::time::sleep(Duration::from_millis(200)).await;
        let create = Self::once(p.addr, "/mcp", &wire::create_task(2)).await?;
        let id = wire::find_str_field(&create, "taskId").ok_or("no taskId in the create result")?.to_owned();
        let get = Self::once(p.addr, "/mcp", &wire::tasks_get(3, &id)).await?;
        Ok([greet.len(), get.len(), create.len()])
    }

    /// Starts ours once on every SQL store of the pass, so a database that cannot be
    /// reached fails the pass in its first second rather than after minutes of work.
    fn preflight(&self) -> Result<(), String> {
        for &store in self.plan.stores.iter().filter(|s| **s != Store::Memory) {
            let p = self.start(Peer::Ours(store)).map_err(|e| format!("{}: {e}", Peer::Ours(store).label()))?;
            (self.log)(&format!("{} starts (pid {})", Peer::Ours(store).label(), p.pid));
        }
        Ok(())
    }

    /// Measures our response sizes so the echo answers with bodies of the same length.
    async fn calibrate(&mut self) -> Result<[usize; 3], String> {
        self.echo_sizes = self.sizes(Peer::Ours(Store::Memory)).await?;
        if self.bins.rmcp.is_some() { self.sizes(Peer::Rmcp).await } else { Ok([0; 3]) }
    }

    fn builder(host: String, f: impl Fn(u64) -> wire::Call + Send + Sync + 'static) -> Builder {
        Arc::new(move |n, out| wire::http_request(out, &host, "/mcp", &f(n)))
    }

    fn expect(peer: Peer, workload: Workload) -> &'static [u8] {
        match (peer, workload) {
            (Peer::Echo, _) => b"\"result\"",
            (_, Workload::W1) => b"Hello, bench-",
            (_, Workload::W4) => b"\"taskId\"",
            (_, Workload::W2) => b"\"status\":\"working\"",
            // A few W4 tasks may have been failed by the janitor's start-up recovery (see the report).
            (_, Workload::W3) => b"\"taskId\"",
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn sample(
        &self,
        workload: Workload,
        peer: Peer,
        conns: usize,
        round: usize,
        r: &LoadResult,
        cpu_ticks: u64,
        peak_rss_kib: u64,
    ) -> Sample {
        let cpu_us = cpu_ticks as f64 * 1e6 / self.ticks as f64;
        Sample {
            workload,
            peer,
            conns,
            round,
            requests: r.requests,
            errors: r.errors,
            secs: r.elapsed.as_secs_f64(),
            rps: r.rps(),
            p50_us: us(quantile(&r.latencies, 0.5)),
            p99_us: us(quantile(&r.latencies, 0.99)),
            cpu_us_per_req: cpu_us / r.requests.max(1) as f64,
            peak_rss_kib,
            table: None,
            buckets: Vec::new(),
            capped: false,
            bytes_per_task: None,
            first_error: r.first_error.clone(),
        }
    }

    fn report_line(&self, s: &Sample) {
        let mut line = format!(
            "{} {:>2} conns round {} {:<22} {:>9.0} req/s  p50 {:>7.1} µs  p99 {:>8.1} µs  cpu {:>6.1} µs/req  hwm {:>7} KiB",
            s.workload.name(),
            s.conns,
            s.round + 1,
            s.peer.label(),
            s.rps,
            s.p50_us,
            s.p99_us,
            s.cpu_us_per_req,
            s.peak_rss_kib
        );
        if let Some(t) = s.table {
            line.push_str(&format!("  table {t}"));
        }
        if let Some(b) = s.bytes_per_task {
            line.push_str(&format!("  {b:.0} B/task"));
        }
        if s.errors > 0 {
            line.push_str(&format!("  ERRORS {} ({})", s.errors, s.first_error.as_deref().unwrap_or_default()));
        }
        (self.log)(&line);
    }

    /// Warm-up, then one measured load phase; returns the sample.
    async fn measured(
        &self,
        p: &Proc,
        workload: Workload,
        peer: Peer,
        conns: usize,
        round: usize,
        build: Builder,
    ) -> Result<Sample, String> {
        let base = Load {
            addr: p.addr,
            conns,
            duration: Some(self.plan.warmup()),
            max_requests: None,
            expect: Self::expect(peer, workload),
            collect_ids: false,
        };
        load::run(&base, build.clone()).await.map_err(io_err)?;
        let load = Load { duration: Some(self.plan.measure()), ..base };
        let c0 = p.cpu();
        let r = load::run(&load, build).await.map_err(io_err)?;
        let c1 = p.cpu();
        Ok(self.sample(workload, peer, conns, round, &r, c1.saturating_sub(c0), p.kib("VmHWM")))
    }

    /// W1 or W2 on a fresh server.
    async fn simple(&self, workload: Workload, peer: Peer, conns: usize, round: usize) -> Result<Sample, String> {
        let p = self.start(peer)?;
        let host = p.addr.to_string();
        let build = match workload {
            Workload::W1 => Self::builder(host, wire::greet),
            _ => {
                let id = match peer {
                    Peer::Echo => fake_id(0),
                    _ => {
                        // The first creation starts conduit-mcp's janitor, whose start-up lease
                        // recovery can fail a task created at that instant: let it pass first.
                        Self::create_one(p.addr, 0).await?;
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        Self::create_one(p.addr, 1).await?
                    }
                };
                Self::builder(host, move |n| wire::tasks_get(n, &id))
            }
        };
        let s = self.measured(&p, workload, peer, conns, round, build).await?;
        self.report_line(&s);
        Ok(s)
    }

    /// W4 from an empty table, then W3 on the table it built, on one fresh server.
    async fn create_then_lookup(&self, peer: Peer, conns: usize, round: usize) -> Result<(Sample, Sample), String> {
        let p = self.start(peer)?;
        let host = p.addr.to_string();
        // Warm the connections with greet: W4 starts from an empty table.
        let warm = Load {
            addr: p.addr,
            conns,
            duration: Some(self.plan.warmup() / 2),
            max_requests: None,
            expect: Self::expect(peer, Workload::W1),
            collect_ids: false,
        };
        load::run(&warm, Self::builder(host.clone(), wire::greet)).await.map_err(io_err)?;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let rss0 = p.kib("VmRSS");
        let create = Load {
            duration: Some(self.plan.create_cap(peer)),
            max_requests: Some(self.plan.table as u64),
            expect: Self::expect(peer, Workload::W4),
            collect_ids: true,
            ..warm.clone()
        };
        let c0 = p.cpu();
        let r = load::run(&create, Self::builder(host.clone(), wire::create_task)).await.map_err(io_err)?;
        let c1 = p.cpu();
        let created = r.completions.len();
        let mut w4 = self.sample(Workload::W4, peer, conns, round, &r, c1.saturating_sub(c0), p.kib("VmHWM"));
        w4.table = Some(created);
        w4.capped = created < self.plan.table;
        w4.buckets = load::bucket_rates(&r.completions, self.plan.bucket);
        // W7 is the memory store's (and rmcp's) measurement: the SQL stores keep their rows on disk.
        if matches!(peer, Peer::Ours(Store::Memory) | Peer::Rmcp) && created > 0 {
            tokio::time::sleep(Duration::from_secs(1)).await;
            let rss1 = p.kib("VmRSS");
            w4.bytes_per_task = Some(rss1.saturating_sub(rss0) as f64 * 1024.0 / created as f64);
        }
        self.report_line(&w4);
        let ids: Arc<Vec<String>> = Arc::new(match peer {
            Peer::Echo => (0..self.plan.table as u64).map(fake_id).collect(),
            _ => r.ids,
        });
        if ids.is_empty() {
            return Err(format!(
                "{}: W4 created no task: {}",
                peer.label(),
                w4.first_error.clone().unwrap_or_default()
            ));
        }
        let table = ids.len();
        let build = Self::builder(host, move |n| wire::tasks_get(n, &ids[(load::mix(n) % ids.len() as u64) as usize]));
        let mut w3 = self.measured(&p, Workload::W3, peer, conns, round, build).await?;
        w3.table = Some(table);
        self.report_line(&w3);
        Ok((w4, w3))
    }

    /// W5 on a fresh server of ours: listen streams over `notify_tasks` tasks, then the
    /// worker API completes them one per ms; latency from `complete` to arrival.
    ///
    /// With `nodes == 2` (PostgreSQL only) a second server joins the first one's schema:
    /// the first creates and completes the tasks, the second holds the listen streams, so
    /// every notification crosses nodes through `LISTEN`/`NOTIFY`.
    async fn notify(&self, peer: Peer, nodes: usize, conns: usize, round: usize) -> Result<NotifySample, String> {
        let p = self.start(peer)?;
        let second = if nodes > 1 { Some(self.start_node(peer, false)?) } else { None };
        let listener = second.as_ref().unwrap_or(&p);
        let host = p.addr.to_string();
        let listen_host = listener.addr.to_string();
        let n = self.plan.notify_tasks;
        // Let the janitor's start-up recovery pass (see `simple`).
        Self::create_one(p.addr, 1_000_000_000).await?;
        tokio::time::sleep(Duration::from_millis(200)).await;
        // The tasks, created over a few connections (a durable store commits each one).
        let setup = Load {
            addr: p.addr,
            conns: n.clamp(1, 8),
            duration: None,
            max_requests: Some(n as u64),
            expect: Self::expect(peer, Workload::W4),
            collect_ids: true,
        };
        let created = load::run(&setup, Self::builder(host.clone(), wire::create_task)).await.map_err(io_err)?;
        let ids = created.ids;
        if ids.len() != n {
            return Err(format!(
                "{}: W5 created {} of {n} tasks: {}",
                notify_label(peer, nodes),
                ids.len(),
                created.first_error.unwrap_or_default()
            ));
        }
        let streams = conns.clamp(1, n.max(1));
        let mut groups: Vec<Vec<String>> = vec![Vec::new(); streams];
        for (i, id) in ids.iter().enumerate() {
            groups[i % streams].push(id.clone());
        }
        let mut readers = Vec::new();
        let limit = Duration::from_secs(10) + Duration::from_millis(2 * n as u64);
        let deadline = tokio::time::Instant::now() + limit;
        for (g, group) in groups.into_iter().enumerate() {
            let conn = Conn::connect(listener.addr).await.map_err(io_err)?;
            let mut req = Vec::new();
            wire::http_request(&mut req, &listen_host, "/mcp", &wire::listen(&format!("listen-{g}"), &group));
            let mut stream = conn.open_stream(&req).await.map_err(io_err)?;
            let ack = stream.next_data().await.map_err(io_err)?.ok_or("listen stream ended before its ack")?;
            let acked = group.iter().filter(|id| ack.contains(id.as_str())).count();
            if !ack.contains("notifications/subscriptions/acknowledged") || acked != group.len() {
                return Err(format!("listen acknowledged {acked} of {} tasks: {ack}", group.len()));
            }
            let want = group.len();
            readers.push(tokio::spawn(async move {
                let mut lat = Vec::with_capacity(want);
                while lat.len() < want {
                    let Ok(Ok(Some(data))) = tokio::time::timeout_at(deadline, stream.next_data()).await else { break };
                    if data.contains("notifications/tasks")
                        && data.contains("\"status\":\"completed\"")
                        && let Some(t0) = completion_stamp(&data)
                    {
                        lat.push(now_us().saturating_sub(t0).min(u64::from(u32::MAX) / 1000) as u32 * 1000);
                    }
                }
                lat
            }));
        }
        let body = serde_json::json!({ "taskIds": ids, "intervalUs": 1000 }).to_string();
        let call = wire::Call { method: "bench/complete", name: None, body };
        Self::once(p.addr, "/bench/complete", &call).await?;
        let mut all = Vec::with_capacity(n);
        for r in readers {
            all.extend(r.await.map_err(|e| e.to_string())?);
        }
        all.sort_unstable();
        let s = NotifySample {
            peer,
            nodes,
            conns: streams,
            round,
            tasks: n,
            received: all.len(),
            p50_us: us(quantile(&all, 0.5)),
            p99_us: us(quantile(&all, 0.99)),
            max_us: us(all.last().copied().unwrap_or(0)),
        };
        (self.log)(&format!(
            "W5 {:>2} streams round {} {:<31} {}/{} notifications  p50 {:.1} µs  p99 {:.1} µs  max {:.1} µs",
            s.conns,
            round + 1,
            notify_label(peer, nodes),
            s.received,
            s.tasks,
            s.p50_us,
            s.p99_us,
            s.max_us
        ));
        Ok(s)
    }

    /// W6: `bench-server sweep` in a process of its own.
    fn sweep(&self, round: usize) -> Result<Vec<SweepSample>, String> {
        let getters = self.plan.conns.iter().map(ToString::to_string).collect::<Vec<_>>().join(",");
        let out = Command::new(&self.bins.server)
            .args([
                "sweep",
                "--tasks",
                &self.plan.sweep_tasks.to_string(),
                "--expired-percent",
                &self.plan.sweep_expired_percent.to_string(),
                "--getters",
                &getters,
                "--baseline-ms",
                &self.plan.sweep_baseline_ms.to_string(),
            ])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run bench-server sweep: {e}"))?;
        if !out.status.success() {
            return Err(format!("bench-server sweep failed: {}", String::from_utf8_lossy(&out.stderr)));
        }
        let results: Vec<SweepResult> = serde_json::from_slice(&out.stdout).map_err(|e| {
            format!("bench-server sweep printed no results: {e}: {}", String::from_utf8_lossy(&out.stdout))
        })?;
        for r in &results {
            (self.log)(&format!(
                "W6 {:>2} getters round {} removed {} of {} in {:.1} ms; tasks/get p99 {:.1} µs baseline, {:.1} µs during (max {:.1} µs, {} calls); store {:.0} B/task",
                r.getters,
                round + 1,
                r.removed,
                r.live + r.expired,
                r.sweep_ms,
                r.baseline_p99_us,
                r.during_p99_us,
                r.during_max_us,
                r.during_samples,
                r.store_bytes_per_task
            ));
        }
        Ok(results.into_iter().map(|result| SweepSample { round, result }).collect())
    }

    /// Runs the whole plan.
    pub async fn run(mut self, mut meta: Meta) -> Result<Results, String> {
        let started = Instant::now();
        self.preflight()?;
        meta.rmcp_sizes = self.calibrate().await?;
        meta.echo_sizes = self.echo_sizes;
        (self.log)(&format!(
            "echo answers with bodies of {} (greet), {} (tasks/get), {} (create) bytes",
            self.echo_sizes[0], self.echo_sizes[1], self.echo_sizes[2]
        ));
        let peers = self.peers();
        let mut res = Results { meta, plan: Some(self.plan.clone()), ..Results::default() };
        for workload in [Workload::W1, Workload::W2].into_iter().filter(|w| self.plan.runs(w.name())) {
            for &conns in &self.plan.conns {
                for round in 0..self.plan.rounds {
                    for peer in self.peers_for(workload) {
                        res.samples.push(self.simple(workload, peer, conns, round).await?);
                    }
                }
            }
        }
        let table = ["W3", "W4", "W7"].iter().any(|w| self.plan.runs(w));
        for &conns in self.plan.conns.iter().filter(|_| table) {
            for round in 0..self.plan.rounds {
                for &peer in &peers {
                    let (w4, w3) = self.create_then_lookup(peer, conns, round).await?;
                    res.samples.push(w4);
                    res.samples.push(w3);
                }
            }
        }
        for &conns in self.plan.conns.iter().filter(|_| self.plan.runs("W5")) {
            for round in 0..self.plan.rounds {
                for &store in &self.plan.stores {
                    res.notify.push(self.notify(Peer::Ours(store), 1, conns, round).await?);
                    if store == Store::Postgres {
                        res.notify.push(self.notify(Peer::Ours(store), 2, conns, round).await?);
                    }
                }
            }
        }
        for round in (0..self.plan.rounds).filter(|_| self.plan.runs("W6")) {
            res.sweep.extend(self.sweep(round)?);
        }
        res.meta.wall_secs = started.elapsed().as_secs_f64();
        Ok(res)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn harness(stores: Vec<Store>) -> Harness {
        let bins = Binaries {
            server: "bench-server".into(),
            echo: "bench-echo".into(),
            rmcp: None,
            database_url: None,
            sqlite_path: "target/bench/sqlite/test.db".into(),
            pg_schema: "conduit_bench".into(),
        };
        Harness::new(bins, Plan { stores, ..Plan::smoke() }, |_| {})
    }

    #[test]
    fn w1_runs_ours_on_the_memory_store_only() {
        let h = harness(vec![Store::Memory, Store::Sqlite, Store::Postgres]);
        assert_eq!(h.peers_for(Workload::W1), vec![Peer::Ours(Store::Memory), Peer::Echo]);
        assert_eq!(
            h.peers_for(Workload::W2),
            vec![Peer::Ours(Store::Memory), Peer::Ours(Store::Sqlite), Peer::Ours(Store::Postgres), Peer::Echo]
        );
        let sql_only = harness(vec![Store::Sqlite]);
        assert_eq!(sql_only.peers_for(Workload::W1), vec![Peer::Ours(Store::Sqlite), Peer::Echo]);
    }

    #[test]
    fn the_sql_stores_have_their_own_create_cap() {
        let plan = Plan::full();
        assert_eq!(plan.create_cap(Peer::Ours(Store::Memory)), Duration::from_millis(plan.create_cap_ms));
        assert_eq!(plan.create_cap(Peer::Rmcp), Duration::from_millis(plan.create_cap_ms));
        assert_eq!(plan.create_cap(Peer::Ours(Store::Postgres)), Duration::from_millis(plan.sql_create_cap_ms));
        assert!(plan.sql_create_cap_ms < plan.create_cap_ms);
    }

    #[test]
    fn results_saved_before_two_node_w5_still_read() {
        let old = r#"{"peer":{"Ours":"memory"},"conns":1,"round":0,"tasks":10,"received":10,
                      "p50_us":1.0,"p99_us":2.0,"max_us":3.0}"#;
        let n: NotifySample = serde_json::from_str(old).expect("old W5 sample");
        assert_eq!(n.nodes, 1);
        let mut plan = serde_json::to_value(Plan::full()).expect("plan");
        plan.as_object_mut().expect("object").remove("sql_create_cap_ms");
        let plan: Plan = serde_json::from_value(plan).expect("old plan");
        assert_eq!(plan.sql_create_cap_ms, default_sql_create_cap_ms());
    }

    #[test]
    fn two_node_rows_are_named() {
        assert_eq!(notify_label(Peer::Ours(Store::Postgres), 2), "conduit-mcp (postgres, 2 nodes)");
        assert_eq!(notify_label(Peer::Ours(Store::Postgres), 1), "conduit-mcp (postgres)");
        assert_eq!(notify_label(Peer::Ours(Store::Memory), 1), "conduit-mcp");
    }
}
