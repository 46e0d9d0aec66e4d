//! One measured round of one mode: a fresh bench server, `tasks` parked
//! tasks created and followed by the library client, then completed through
//! the admin route 1 ms apart; measured from the admin call until the client
//! has seen every terminal event.

use super::cpu::cpu_ns;
use super::server::BenchServer;
use crate::ours::{completion_stamp, now_us};
use crate::stats::quantile;
use crate::wire::TASK_SECONDS;
use conduit_mcp::client::{CallOutcome, Client, ClientBuilder, TaskEvent, TaskHandle, ToolOutcome};
use conduit_mcp::protocol::content::Content;
use serde_json::json;
use std::path::Path;
use std::str::FromStr;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// How the client follows the tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Push over the client's one `subscriptions/listen` stream (the default client).
    Listen,
    /// Push off (`ClientBuilder::push(false)`), polling `tasks/get` at the
    /// server's `pollIntervalMs` (no back-off: `max_poll_interval` below it).
    Poll,
}

impl Mode {
    /// The name used on the command line and in the report.
    pub fn name(self) -> &'static str {
        match self {
            Self::Listen => "listen",
            Self::Poll => "poll",
        }
    }
}

impl FromStr for Mode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "listen" => Ok(Self::Listen),
            "poll" => Ok(Self::Poll),
            _ => Err(format!("unknown mode {s:?} (listen or poll)")),
        }
    }
}

/// One round's measurements (the measured phase: admin call → last terminal event).
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The mode.
    pub mode: Mode,
    /// The round (0-based).
    pub round: usize,
    /// Tasks followed.
    pub tasks: usize,
    /// Terminal events the client's event streams yielded.
    pub terminal: usize,
    /// The server's `pollIntervalMs` for these tasks.
    pub poll_ms: u64,
    /// Wall time of the measured phase, ms.
    pub wall_ms: f64,
    /// CPU of the bench process (the client) over the phase, ms.
    pub client_cpu_ms: f64,
    /// CPU of the server process over the phase, ms.
    pub server_cpu_ms: f64,
    /// `subscriptions/listen` requests the client opened in the whole round.
    pub listen_streams: u64,
    /// TCP connections the client held to the server at the end of the phase.
    pub tcp_conns: usize,
    /// HTTP requests the client sent during the phase.
    pub requests: u64,
    /// Notification-to-event latency: the server's stamp just before
    /// `Tasks::complete` → the client's stream yielding `Finished`, ms.
    pub p50_ms: f64,
    /// Its 99th percentile, ms.
    pub p99_ms: f64,
    /// Its largest value, ms.
    pub max_ms: f64,
}

impl Sample {
    /// One log line.
    pub fn line(&self) -> String {
        format!(
            "follow {:<6} round {} {}/{} terminal in {:.0} ms  client CPU {:.1} ms  server CPU {:.1} ms  \
             {} listen streams  {} TCP  {} requests  latency p50 {:.2} ms  p99 {:.2} ms  max {:.2} ms",
            self.mode.name(),
            self.round + 1,
            self.terminal,
            self.tasks,
            self.wall_ms,
            self.client_cpu_ms,
            self.server_cpu_ms,
            self.listen_streams,
            self.tcp_conns,
            self.requests,
            self.p50_ms,
            self.p99_ms,
            self.max_ms
        )
    }
}

/// What a follower reports: its task's latency in µs, or why it stopped.
type Done = Result<u32, String>;

/// The latency a terminal event shows, from the `t0=` stamp in the result text.
fn latency(outcome: &ToolOutcome, at_us: u64) -> Done {
    let ToolOutcome::Completed(r) = outcome else { return Err(format!("the task did not complete: {outcome:?}")) };
    let stamp = r.content.iter().find_map(|c| match c {
        Content::Text { text, .. } => completion_stamp(text),
        _ => None,
    });
    let t0 = stamp.ok_or("a result without its completion stamp")?;
    Ok(u32::try_from(at_us.saturating_sub(t0)).unwrap_or(u32::MAX))
}

/// Follows `t` and reports its first status on `ready`, its end on `done`.
fn follow(t: &TaskHandle, ready: mpsc::UnboundedSender<()>, done: mpsc::UnboundedSender<Done>) {
    let mut events = t.follow();
    tokio::spawn(async move {
        let mut ready = Some(ready);
        while let Some(ev) = events.next().await {
            match ev {
                Ok(TaskEvent::Finished(o)) => {
                    let _ = done.send(latency(&o, now_us()));
                    return;
                }
                Ok(_) => {
                    if let Some(r) = ready.take() {
                        let _ = r.send(());
                    }
                }
                Err(e) => {
                    let _ = done.send(Err(e.to_string()));
                    return;
                }
            }
        }
        let _ = done.send(Err("the event stream ended before the task".into()));
    });
}

async fn create(client: &Client, n: usize) -> Result<Vec<TaskHandle>, String> {
    let mut handles = Vec::with_capacity(n);
    for i in 0..n {
        let args = json!({ "seconds": TASK_SECONDS, "label": format!("f{i}") });
        match client.call_tool("slow_compute", args).await.map_err(|e| format!("create: {e}"))? {
            CallOutcome::Task(t) => handles.push(t),
            other => return Err(format!("slow_compute did not make a task: {other:?}")),
        }
    }
    Ok(handles)
}

/// Waits until the client has sent nothing for 200 ms (the followers' reads
/// after the acknowledgment are done), at most 20 s.
async fn quiet(client: &Client) {
    let until = Instant::now() + Duration::from_secs(20);
    let mut last = client.requests_sent();
    while Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let now = client.requests_sent();
        if now == last {
            return;
        }
        last = now;
    }
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// Runs one round of `mode` with `n` tasks on a fresh `bench-server`.
pub async fn run_round(server: &Path, mode: Mode, n: usize, round: usize) -> Result<Sample, String> {
    let srv = BenchServer::start(server)?;
    let mut builder = ClientBuilder::http(srv.url()).client_info("conduit-mcp-bench-follow", env!("CARGO_PKG_VERSION"));
    if mode == Mode::Poll {
        builder = builder.push(false).max_poll_interval(Duration::ZERO);
    }
    let client = builder.connect().await.map_err(|e| format!("connect: {e}"))?;
    let handles = create(&client, n).await?;
    let poll_ms = handles.first().and_then(|t| t.created()?.poll_interval_ms).unwrap_or(0);
    let (ready_tx, mut ready) = mpsc::unbounded_channel();
    let (done_tx, mut done) = mpsc::unbounded_channel();
    for t in &handles {
        follow(t, ready_tx.clone(), done_tx.clone());
    }
    drop((ready_tx, done_tx));
    let setup = Duration::from_secs(60);
    for _ in 0..n {
        match tokio::time::timeout(setup, ready.recv()).await {
            Ok(Some(())) => {}
            _ => {
                let why = done.try_recv().ok().and_then(Result::err).unwrap_or_else(|| "timed out".into());
                return Err(format!("{}: a follower did not start: {why}", mode.name()));
            }
        }
    }
    match mode {
        Mode::Listen => quiet(&client).await,
        // A few poll cycles: every poller is in its steady rhythm.
        Mode::Poll => tokio::time::sleep(Duration::from_secs(1)).await,
    }
    let ids: Vec<String> = handles.iter().map(|t| t.id().to_owned()).collect();
    let (cpu0, srv0, sent0) = (cpu_ns(std::process::id()), cpu_ns(srv.pid), client.requests_sent());
    let t0 = Instant::now();
    srv.complete(&ids, 1_000).await?;
    let limit = Duration::from_secs(10) + Duration::from_millis(3 * n as u64) + Duration::from_millis(3 * poll_ms);
    let mut lat = Vec::with_capacity(n);
    let mut first_error = None;
    let mut seen = 0;
    while seen < n {
        match tokio::time::timeout_at((t0 + limit).into(), done.recv()).await {
            Ok(Some(Ok(us))) => lat.push(us),
            Ok(Some(Err(e))) => {
                first_error.get_or_insert(e);
            }
            _ => break,
        }
        seen += 1;
    }
    let wall = t0.elapsed();
    let (cpu1, srv1, sent1) = (cpu_ns(std::process::id()), cpu_ns(srv.pid), client.requests_sent());
    if let Some(e) = first_error {
        return Err(format!("{}: a follower failed: {e}", mode.name()));
    }
    lat.sort_unstable();
    let diff = |a: Option<u64>, b: Option<u64>| ms(b.unwrap_or(0).saturating_sub(a.unwrap_or(0)));
    Ok(Sample {
        mode,
        round,
        tasks: n,
        terminal: lat.len(),
        poll_ms,
        wall_ms: wall.as_secs_f64() * 1e3,
        client_cpu_ms: diff(cpu0, cpu1),
        server_cpu_ms: diff(srv0, srv1),
        listen_streams: client.listen_streams_opened(),
        tcp_conns: srv.client_connections(),
        requests: sent1 - sent0,
        p50_ms: f64::from(quantile(&lat, 0.5)) / 1e3,
        p99_ms: f64::from(quantile(&lat, 0.99)) / 1e3,
        max_ms: f64::from(lat.last().copied().unwrap_or(0)) / 1e3,
    })
}
