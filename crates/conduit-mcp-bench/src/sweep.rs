//! W6, in process: a store of many tasks, some expired; one janitor sweep timed
//! while `tasks/get` runs against the same server, and `tasks/get` latency
//! without a sweep for comparison. Runs inside `bench-server sweep` so the
//! million records live in a process of their own.

use crate::stats::quantile;
use conduit_mcp::Server;
use conduit_mcp::ext::tasks::{CreateCaps, Owner, TaskRecord, Tasks, new_task_id, sweep};
use conduit_mcp::protocol::jsonrpc::Request;
use conduit_mcp::protocol::{Message, RequestId};
use conduit_mcp::server::RequestEnv;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// What to measure.
#[derive(Debug, Clone)]
pub struct SweepOptions {
    /// Tasks in the store (live and expired together).
    pub tasks: usize,
    /// Percentage of them that are expired when the sweep runs.
    pub expired_percent: usize,
    /// Concurrent `tasks/get` loops, one measurement each.
    pub getters: Vec<usize>,
    /// How long the no-sweep baseline runs.
    pub baseline: Duration,
}

/// One measurement at one getter count.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepResult {
    /// Concurrent `tasks/get` loops.
    pub getters: usize,
    /// Live tasks in the store.
    pub live: usize,
    /// Expired tasks before the sweep.
    pub expired: usize,
    /// What the sweep removed.
    pub removed: usize,
    /// How long `sweep` took, in ms.
    pub sweep_ms: f64,
    /// `tasks/get` p50 without a sweep, µs.
    pub baseline_p50_us: f64,
    /// `tasks/get` p99 without a sweep, µs.
    pub baseline_p99_us: f64,
    /// `tasks/get` p99 of the calls that overlapped the sweep, µs.
    pub during_p99_us: f64,
    /// The slowest call that overlapped the sweep, µs.
    pub during_max_us: f64,
    /// How many calls overlapped the sweep.
    pub during_samples: usize,
    /// Resident memory added per stored record while populating, in bytes
    /// (the store alone: no HTTP, no spawned work).
    pub store_bytes_per_task: f64,
}

/// A `tasks/get` request for `task_id`, extension declared.
fn get_request(n: u64, task_id: &str) -> Request {
    Request {
        id: RequestId::Number(n as i64),
        method: "tasks/get".into(),
        params: Some(json!({
            "taskId": task_id,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": crate::wire::PROTOCOL_VERSION,
                "io.modelcontextprotocol/clientCapabilities": { "extensions": { crate::wire::TASKS_EXTENSION: {} } },
            },
        })),
    }
}

/// `(start offset from t0, latency)` in ns of every call made until `stop` is set.
///
/// A call's latency runs from the end of the previous one (when this loop, like a client
/// with one request in flight, is ready to send the next) to its own end: it includes the
/// time the loop waited for a runtime worker, which is what a sweep holding a worker costs.
async fn getter(
    server: Server,
    ids: Arc<Vec<String>>,
    seed: u64,
    t0: Instant,
    stop: Arc<AtomicBool>,
) -> Result<Vec<(u64, u32)>, String> {
    let mut out = Vec::with_capacity(1 << 16);
    let mut x = seed | 1;
    let mut n = 0u64;
    let mut ready = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        // xorshift64: cheap and good enough to spread reads over the table.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let id = &ids[(x % ids.len() as u64) as usize];
        n += 1;
        let msg = server.handle_request(get_request(n, id), RequestEnv::default()).await;
        let end = Instant::now();
        if !matches!(msg, Message::Result { .. }) {
            return Err(format!("tasks/get failed: {}", msg.to_json()));
        }
        out.push(((ready - t0).as_nanos() as u64, (end - ready).as_nanos().min(u32::MAX as u128) as u32));
        ready = end;
        // A served request is a task of its own that ends here; without a yield these loops
        // (whose store calls never wait) would hold the workers and starve the timer.
        tokio::task::yield_now().await;
    }
    Ok(out)
}

/// Runs `getters` loops until `stop`; returns every sample.
async fn run_getters(
    server: &Server,
    ids: &Arc<Vec<String>>,
    getters: usize,
    t0: Instant,
    stop: &Arc<AtomicBool>,
    work: impl std::future::Future<Output = ()>,
) -> Result<Vec<(u64, u32)>, String> {
    let handles: Vec<_> = (0..getters)
        .map(|g| {
            tokio::spawn(getter(server.clone(), ids.clone(), 0x9E37_79B9_7F4A_7C15 ^ (g as u64 + 1), t0, stop.clone()))
        })
        .collect();
    work.await;
    stop.store(true, Ordering::Relaxed);
    let mut all = Vec::new();
    for h in handles {
        all.extend(h.await.map_err(|e| e.to_string())??);
    }
    Ok(all)
}

fn us(ns: u32) -> f64 {
    f64::from(ns) / 1000.0
}

/// Adds `count` expired records to the store.
async fn add_expired(tasks: &Tasks, count: usize, now: u64) -> Result<(), String> {
    for _ in 0..count {
        // Created 20 s ago with a 10 s lifetime: expired 10 s ago.
        let rec = TaskRecord::new(new_task_id(), None, now - 20_000, Some(10_000));
        tasks.store().create(rec, CreateCaps::default()).await.map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Runs W6. `rss_kib` reads this process's resident memory.
pub async fn run(opts: &SweepOptions, rss_kib: impl Fn() -> u64) -> Result<Vec<SweepResult>, String> {
    let tasks = crate::ours::tasks(None)?;
    let server = crate::ours::server(&tasks)?;
    let expired = opts.tasks * opts.expired_percent / 100;
    let live = opts.tasks - expired;
    let now = conduit_mcp::clock::Clock::now_ms(&conduit_mcp::clock::SystemClock);
    let before = rss_kib();
    // Interleave: every k-th record is an expired one.
    let every = opts.tasks.checked_div(expired);
    let mut ids = Vec::with_capacity(live);
    for i in 0..opts.tasks {
        if every.is_some_and(|k| i % k == 0 && i / k < expired) {
            add_expired(&tasks, 1, now).await?;
        } else {
            let id = new_task_id();
            let rec = TaskRecord::new(id.clone(), None, now, Some(3_600_000));
            tasks.store().create(rec, CreateCaps::default()).await.map_err(|e| e.to_string())?;
            ids.push(id);
        }
    }
    let store_bytes_per_task = (rss_kib().saturating_sub(before) * 1024) as f64 / opts.tasks.max(1) as f64;
    let ids = Arc::new(ids);
    // Sanity: a live one reads back.
    tasks.store().get(&ids[0], Owner::Is(None)).await.map_err(|e| format!("populated store cannot read: {e}"))?;

    let mut results = Vec::new();
    for (round, &getters) in opts.getters.iter().enumerate() {
        if round > 0 {
            add_expired(&tasks, expired, now).await?;
        }
        // Baseline: no sweep.
        let t0 = Instant::now();
        let stop = Arc::new(AtomicBool::new(false));
        let mut base: Vec<u32> = run_getters(&server, &ids, getters, t0, &stop, tokio::time::sleep(opts.baseline))
            .await?
            .into_iter()
            .map(|(_, l)| l)
            .collect();
        base.sort_unstable();
        // The sweep, on a runtime worker like the janitor, with the getters running.
        let t0 = Instant::now();
        let stop = Arc::new(AtomicBool::new(false));
        let window = Arc::new(std::sync::Mutex::new((0u64, 0u64, 0usize)));
        let w2 = window.clone();
        let tasks2 = tasks.clone();
        let work = async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let sweep_task = tokio::spawn(async move {
                let s = Instant::now();
                let removed = sweep(&tasks2).await;
                (s, Instant::now(), removed)
            });
            if let Ok((s, e, removed)) = sweep_task.await
                && let Ok(mut w) = w2.lock()
            {
                *w = ((s - t0).as_nanos() as u64, (e - t0).as_nanos() as u64, removed.unwrap_or(0));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let samples = run_getters(&server, &ids, getters, t0, &stop, work).await?;
        let (s, e, removed) = *window.lock().map_err(|_| "poisoned")?;
        let mut during: Vec<u32> =
            samples.iter().filter(|(start, lat)| *start < e && start + u64::from(*lat) > s).map(|(_, l)| *l).collect();
        during.sort_unstable();
        results.push(SweepResult {
            getters,
            live,
            expired,
            removed,
            sweep_ms: (e - s) as f64 / 1e6,
            baseline_p50_us: us(quantile(&base, 0.5)),
            baseline_p99_us: us(quantile(&base, 0.99)),
            during_p99_us: us(quantile(&during, 0.99)),
            during_max_us: us(during.last().copied().unwrap_or(0)),
            during_samples: during.len(),
            store_bytes_per_task,
        });
    }
    Ok(results)
}
