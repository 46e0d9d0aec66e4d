//! `soak churn`: the two memory figures of issue 11's "Done when" 3, on the
//! reference server (memory store) as a child process.
//!
//! 1. Listen churn: one live task (`sleep`), `warmup` `subscriptions/listen`
//!    open/close cycles naming it, RSS, `cycles` more, RSS again: the growth must
//!    stay under 1 MiB.
//! 2. Byte budget: on a fresh server, creates of the largest kind a client can
//!    make (capabilities padded past what a task keeps, a name past the status
//!    message bound) until the default row cap refuses: the RSS growth must stay
//!    under `TasksConfig::byte_budget()`.

use super::rpc::{self, Client};
use super::server::ServerProc;
use conduit_mcp::ext::tasks::TasksConfig;
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

/// The growth 30 000 listen cycles may cause.
pub const LISTEN_GROWTH_LIMIT_KIB: u64 = 1024;

/// What `soak churn` measured.
#[derive(Debug, Clone, Default)]
pub struct ChurnResult {
    /// Listen cycles measured (after the warm-up).
    pub cycles: u64,
    /// RSS after the warm-up and after the cycles, KiB.
    pub rss_before_kib: u64,
    /// See `rss_before_kib`.
    pub rss_after_kib: u64,
    /// How long the measured cycles took.
    pub cycles_elapsed: Duration,
    /// Creates acknowledged before the cap refused.
    pub creates: u64,
    /// Bytes of one create request body.
    pub create_body_bytes: usize,
    /// RSS before and after the creates, KiB.
    pub rss_empty_kib: u64,
    /// See `rss_empty_kib`.
    pub rss_full_kib: u64,
    /// `TasksConfig::byte_budget()` at the default row cap, bytes.
    pub budget_bytes: u64,
}

impl ChurnResult {
    /// Listen churn growth, KiB (0 when RSS fell).
    pub fn listen_growth_kib(&self) -> u64 {
        self.rss_after_kib.saturating_sub(self.rss_before_kib)
    }

    /// RSS the full table added, KiB.
    pub fn table_growth_kib(&self) -> u64 {
        self.rss_full_kib.saturating_sub(self.rss_empty_kib)
    }

    /// The verdict: both figures under their limits, and the cap reached.
    pub fn pass(&self) -> bool {
        self.listen_growth_kib() < LISTEN_GROWTH_LIMIT_KIB
            && self.table_growth_kib() * 1024 < self.budget_bytes
            && self.creates > 0
    }
}

async fn listen_cycles(addr: std::net::SocketAddr, task: &str, n: u64, workers: u64) -> Result<(), String> {
    let mut joins = Vec::new();
    for w in 0..workers {
        let task = vec![task.to_owned()];
        let count = n / workers + u64::from(w < n % workers);
        joins.push(tokio::spawn(async move {
            let mut c = Client::new(addr);
            for _ in 0..count {
                // Acknowledged, then dropped: the connection closes under the server.
                drop(c.open_listen(&task).await?);
            }
            Ok::<_, String>(())
        }));
    }
    for j in joins {
        j.await.map_err(|e| e.to_string())??;
    }
    Ok(())
}

/// Waits until the server holds no client connection (only its listener): it has
/// seen every close, so what the closed streams held is released.
async fn connections_settle(server: &ServerProc) -> Result<(), String> {
    let t0 = Instant::now();
    while server.fds().clients > 1 {
        if t0.elapsed() > Duration::from_secs(30) {
            return Err(format!(
                "{} client connections still open 30 s after the last close",
                server.fds().clients - 1
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

async fn listen_churn(bin: &Path, warmup: u64, cycles: u64, r: &mut ChurnResult) -> Result<(), String> {
    let server = ServerProc::start(bin, &[])?;
    let mut c = Client::new(server.addr);
    let id = c.id();
    let created = c.send(&rpc::tool(id, "sleep", json!({ "seconds": 3600 }))).await?;
    let task = created.result().and_then(|r| r["taskId"].as_str()).ok_or(format!("create: {}", created.json))?;
    let task = task.to_owned();
    c.close();
    listen_cycles(server.addr, &task, warmup, 4).await?;
    connections_settle(&server).await?;
    r.rss_before_kib = server.rss_kib();
    let t0 = Instant::now();
    listen_cycles(server.addr, &task, cycles, 4).await?;
    r.cycles_elapsed = t0.elapsed();
    connections_settle(&server).await?;
    r.rss_after_kib = server.rss_kib();
    r.cycles = cycles;
    // The task is still live and still listenable.
    let id = c.id();
    let got = c.send(&rpc::on_task(id, "tasks/get", &task)).await?;
    if got.result().and_then(|r| r["status"].as_str()) != Some("working") {
        return Err(format!("the listened task is no longer working: {}", got.json));
    }
    server.stop()?;
    Ok(())
}

async fn byte_budget(bin: &Path, r: &mut ChurnResult) -> Result<(), String> {
    let cfg = TasksConfig::enabled();
    r.budget_bytes = cfg.byte_budget().ok_or("the default config has no row cap")? as u64;
    let cap = cfg.max_rows.unwrap_or(0) as u64;
    let server = ServerProc::start(bin, &[])?;
    let addr = server.addr;
    r.rss_empty_kib = server.rss_kib();
    // Past every bound a create has: 32 KiB of capabilities no task keeps, a
    // name longer than the status message a task keeps.
    let junk = "x".repeat(16 * 1024);
    let caps = json!({
        "elicitation": { "form": {}, "url": {} }, "sampling": { "tools": {} }, "roots": { "listChanged": true },
        "experimental": { "junk": junk }, "extensions": { (crate::wire::TASKS_EXTENSION): {}, "x-pad": { "junk": junk } }
    });
    let name = "n".repeat(8 * 1024);
    let workers = 8u64;
    let mut joins = Vec::new();
    for w in 0..workers {
        let (caps, name) = (caps.clone(), name.clone());
        joins.push(tokio::spawn(async move {
            let mut c = Client::new(addr);
            let (mut acked, mut bytes) = (0u64, 0usize);
            for _ in 0..cap / workers + u64::from(w < cap % workers) {
                let id = c.id();
                let mut call = rpc::tool(id, "job", json!({ "name": name }));
                let mut v: serde_json::Value = serde_json::from_str(&call.body).map_err(|e| e.to_string())?;
                v["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = caps.clone();
                call.body = v.to_string();
                bytes = call.body.len();
                let reply = c.send(&call).await?;
                if reply.result().and_then(|r| r["taskId"].as_str()).is_none() {
                    return Err(format!("create {acked} of worker {w} refused: {}", reply.json));
                }
                acked += 1;
            }
            Ok::<_, String>((acked, bytes))
        }));
    }
    for j in joins {
        let (acked, bytes) = j.await.map_err(|e| e.to_string())??;
        r.creates += acked;
        r.create_body_bytes = bytes;
    }
    let mut c = Client::new(addr);
    let id = c.id();
    let refused = c.send(&rpc::tool(id, "job", json!({ "name": "one more" }))).await?;
    if refused.code() != Some(-32603) {
        return Err(format!("the create past the cap was not refused: {}", refused.json));
    }
    c.close();
    connections_settle(&server).await?;
    r.rss_full_kib = server.rss_kib();
    server.stop()?;
    Ok(())
}

/// Runs both measurements and prints them; `Err` on a failed run, `Ok(false)` on a failed verdict.
pub async fn run(bin: &Path, warmup: u64, cycles: u64) -> Result<bool, String> {
    let mut r = ChurnResult::default();
    listen_churn(bin, warmup, cycles, &mut r).await?;
    eprintln!(
        "listen churn: {} cycles in {:.1} s; RSS {} KiB after {warmup} warm-up cycles, {} KiB after; growth {} KiB (limit {} KiB)",
        r.cycles,
        r.cycles_elapsed.as_secs_f64(),
        r.rss_before_kib,
        r.rss_after_kib,
        r.listen_growth_kib(),
        LISTEN_GROWTH_LIMIT_KIB
    );
    byte_budget(bin, &mut r).await?;
    eprintln!(
        "byte budget: {} creates of {} bytes each, then refused by the cap; RSS {} KiB empty, {} KiB full: \
         +{} KiB ({:.0} bytes per task) against a budget of {} KiB ({} bytes per task)",
        r.creates,
        r.create_body_bytes,
        r.rss_empty_kib,
        r.rss_full_kib,
        r.table_growth_kib(),
        (r.table_growth_kib() * 1024) as f64 / r.creates.max(1) as f64,
        r.budget_bytes / 1024,
        r.budget_bytes / r.creates.max(1)
    );
    let bounds = super::bounds::run(bin).await?;
    let pass = r.pass() && bounds.pass();
    eprintln!("verdict: {}", if pass { "PASS" } else { "FAIL" });
    Ok(pass)
}
