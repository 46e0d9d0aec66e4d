//! The Events change log's cost and reach (issue 29).
//!
//! - W4 (task creation, the load generator) on a fresh bench server with the
//!   log off (no Events: the SQL store's change log is never turned on) and on
//!   (`bench-server --events`: Events installed and the log turned on, so every
//!   create writes its change row in its own transaction), on SQLite and PostgreSQL.
//! - Cross-node latency: two bench servers on one PostgreSQL schema; a
//!   `task.status_changed` push stream on node B; node A's admin route completes
//!   A's tasks one at a time; from just before that admin request to the
//!   terminal event arriving on B's stream (so it includes one loopback HTTP
//!   round trip to A's admin route).

use super::Sizes;
use super::server::{Node, call, request_with};
use crate::client::Conn;
use crate::load::{self, Load};
use crate::ours::StoreKind;
use crate::stats::quantile;
use crate::wire;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The static token both nodes take (`--bearer-token`): an event reaches its task's owner only.
const TOKEN: &str = "bench-events-token";

/// Where the SQL stores are.
#[derive(Debug, Clone)]
pub struct Stores {
    /// The SQLite file (removed before every server).
    pub sqlite: String,
    /// The PostgreSQL URL (`None`: PostgreSQL left out).
    pub database_url: Option<String>,
    /// The PostgreSQL schema (dropped before every server).
    pub pg_schema: String,
}

/// One W4 measurement.
#[derive(Debug, Clone)]
pub struct W4Sample {
    /// The store.
    pub store: StoreKind,
    /// The change log on.
    pub log: bool,
    /// The round (0-based).
    pub round: usize,
    /// Creates answered.
    pub requests: u64,
    /// Of them, failures.
    pub errors: u64,
    /// The first failure.
    pub first_error: Option<String>,
    /// Creates per second.
    pub rps: f64,
}

impl W4Sample {
    /// One log line.
    pub fn line(&self) -> String {
        format!(
            "events W4 {:<8} log {:<3} round {} {:.0} creates/s ({} requests, {} errors {})",
            self.store.as_str(),
            if self.log { "on" } else { "off" },
            self.round + 1,
            self.rps,
            self.requests,
            self.errors,
            self.first_error.as_deref().unwrap_or("")
        )
    }
}

/// The cross-node latency of one round.
#[derive(Debug, Clone)]
pub struct CrossNode {
    /// The round (0-based).
    pub round: usize,
    /// Tasks completed on node A.
    pub tasks: usize,
    /// Latencies, µs, sorted.
    pub latencies_us: Vec<u32>,
}

impl CrossNode {
    /// One log line.
    pub fn line(&self) -> String {
        format!(
            "events cross-node round {} {}/{} events  p50 {:.2} ms  p99 {:.2} ms",
            self.round + 1,
            self.latencies_us.len(),
            self.tasks,
            f64::from(quantile(&self.latencies_us, 0.5)) / 1e3,
            f64::from(quantile(&self.latencies_us, 0.99)) / 1e3
        )
    }
}

fn store_args(store: StoreKind, s: &Stores, fresh: bool) -> Result<Vec<String>, String> {
    let mut args = vec!["--store".to_owned(), store.as_str().to_owned()];
    match store {
        StoreKind::Memory => {}
        StoreKind::Sqlite => args.extend(["--database-url".to_owned(), s.sqlite.clone()]),
        StoreKind::Postgres => {
            let url = s.database_url.clone().ok_or("PostgreSQL needs a database URL")?;
            args.extend(["--database-url".to_owned(), url, "--pg-schema".to_owned(), s.pg_schema.clone()]);
        }
    }
    if fresh && store != StoreKind::Memory {
        args.push("--fresh".to_owned());
    }
    Ok(args)
}

/// W4 on a fresh `store`, the change log `log`.
pub async fn w4(
    server: &Path,
    store: StoreKind,
    log: bool,
    s: &Stores,
    z: &Sizes,
    round: usize,
) -> Result<W4Sample, String> {
    let mut args = store_args(store, s, true)?;
    if log {
        args.push("--events".to_owned());
    }
    let node = Node::start(server, &args)?;
    let host = node.host();
    let build: load::Builder = Arc::new(move |n, out| wire::http_request(out, &host, "/mcp", &wire::create_task(n)));
    let base = Load {
        addr: node.addr,
        conns: z.conns,
        duration: Some(Duration::from_millis(z.warmup_ms)),
        max_requests: None,
        expect: b"\"taskId\"",
        collect_ids: false,
        pace: None,
    };
    load::run(&base, build.clone()).await.map_err(|e| e.to_string())?;
    let measured = Load { duration: Some(Duration::from_millis(z.measure_ms)), ..base };
    let r = load::run(&measured, build).await.map_err(|e| e.to_string())?;
    Ok(W4Sample {
        store,
        log,
        round,
        requests: r.requests,
        errors: r.errors,
        rps: r.rps(),
        first_error: r.first_error.clone(),
    })
}

/// One round of the cross-node latency: `z.latency_tasks` tasks.
pub async fn cross_node(server: &Path, s: &Stores, z: &Sizes, round: usize) -> Result<CrossNode, String> {
    let auth = [format!("--bearer-token={TOKEN}"), "--events".to_owned()];
    let mut a_args = store_args(StoreKind::Postgres, s, true)?;
    a_args.extend(auth.iter().cloned());
    let a = Node::start(server, &a_args)?;
    let mut b_args = store_args(StoreKind::Postgres, s, false)?;
    b_args.extend(auth.iter().cloned());
    let b = Node::start(server, &b_args)?;
    let header = format!("Authorization: Bearer {TOKEN}");

    let mut req = Vec::new();
    let stream_call = call("events/stream", "task.status_changed", 1, r#""name":"task.status_changed""#);
    request_with(&mut req, &b.host(), &stream_call, &[&header]);
    let mut stream = Conn::connect(b.addr)
        .await
        .map_err(|e| e.to_string())?
        .open_stream(&req)
        .await
        .map_err(|e| format!("events/stream on node B: {e}"))?;
    let first = stream.next_data().await.map_err(|e| e.to_string())?.unwrap_or_default();
    if !first.contains("notifications/events/active") {
        return Err(format!("events/stream on node B began with {first:?}, not notifications/events/active"));
    }

    let n = z.latency_tasks;
    let created = a.create_tasks(n, "e", &header).await?;
    let mut admin = Conn::connect(a.addr).await.map_err(|e| e.to_string())?;
    let mut latencies_us = Vec::with_capacity(n);
    for id in &created {
        let t0 = Instant::now();
        a.complete(&mut admin, &[id.as_str()]).await?;
        let want = format!("\"taskId\":\"{id}\"");
        loop {
            let next = tokio::time::timeout(Duration::from_secs(10), stream.next_data()).await;
            let Ok(Ok(Some(data))) = next else {
                return Err(format!(
                    "node B's stream gave no terminal event within 10 s ({} of {n} seen)",
                    latencies_us.len()
                ));
            };
            if data.contains("notifications/events/event") && data.contains(&want) && data.contains("\"completed\"") {
                break;
            }
        }
        latencies_us.push(u32::try_from(t0.elapsed().as_micros()).unwrap_or(u32::MAX));
    }
    latencies_us.sort_unstable();
    Ok(CrossNode { round, tasks: n, latencies_us })
}
