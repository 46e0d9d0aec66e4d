//! `soak mixed`: the reference server on SQLite or PostgreSQL with a small row
//! cap, `minutes` of mixed load ([`workers`]), a drain in which
//! every acknowledged task is ended, then the checks of [`Outcome`].
//!
//! "Every acknowledged task resolves": after the load, the soak ends what it
//! ends (cancels `sleep`s, answers `deploy`s, completes `job`s; `build`s end by
//! themselves) and polls until each is terminal, for at most two minutes; then a
//! final `tasks/get` of every acknowledged task must show `completed`, `failed`
//! or `cancelled`, or — only once `createdAt + ttlMs` has passed — not found
//! (expired). A task not found before its TTL is lost.

use super::ledger::Ledger;
use super::report::{Outcome, Resolution, Sample};
use super::rpc::{self, Client};
use super::server::ServerProc;
use super::workers::{self, Shared};
use clap::Args;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// `soak mixed` options.
#[derive(Debug, Args)]
pub struct MixedArgs {
    /// The `conduit-mcp` binary.
    #[arg(long)]
    server: PathBuf,
    /// `sqlite` or `postgres`.
    #[arg(long)]
    store: String,
    /// Minutes of load.
    #[arg(long, default_value_t = 10)]
    minutes: u32,
    /// The row cap (`[ext_tasks] max_rows`), reached early on purpose.
    #[arg(long, default_value_t = 1_000)]
    cap: u64,
    /// PostgreSQL URL.
    #[arg(long, default_value = "postgres://postgres@127.0.0.1:5432/test")]
    database_url: String,
    /// PostgreSQL schema, dropped before and after.
    #[arg(long, default_value = "conduit_soak_harden2")]
    pg_schema: String,
    /// Working directory for the config and the SQLite file (removed before and after).
    #[arg(long, default_value = "target/soak")]
    dir: PathBuf,
    /// Append the report to this file.
    #[arg(long)]
    out: Option<PathBuf>,
}

async fn prepare(a: &MixedArgs, sqlite: &str) -> Result<(), String> {
    match a.store.as_str() {
        "sqlite" => crate::ours::remove_sqlite_files(sqlite),
        "postgres" => crate::ours::drop_pg_schema(&a.database_url, &a.pg_schema).await,
        other => Err(format!("--store {other:?}: expected sqlite or postgres")),
    }
}

fn sample(minute: u32, server: &ServerProc, l: &Ledger, prev: &mut [u64; 9]) -> Sample {
    let n = &l.n;
    let now = [
        &n.requests,
        &n.created,
        &n.refused,
        &n.listens,
        &n.ended,
        &n.idle_closed,
        &n.kills,
        &n.expected,
        &n.unexpected,
    ]
    .map(|c| c.load(Ordering::Relaxed));
    let d: Vec<u64> = now.iter().zip(prev.iter()).map(|(a, b)| a - b).collect();
    *prev = now;
    Sample {
        minute,
        rss_kib: server.rss_kib(),
        fds: server.fds(),
        requests: d[0],
        created: d[1],
        refused: d[2],
        listens: d[3],
        ended: d[4],
        idle_closed: d[5],
        kills: d[6],
        expected: d[7],
        unexpected: d[8],
    }
}

/// Ends and polls every task until all are terminal or two minutes pass.
async fn drain(server: &ServerProc, l: &Ledger) {
    let mut c = Client::new(server.addr);
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline {
        let open = l.unresolved();
        if open.is_empty() {
            return;
        }
        for e in open {
            if !e.ended {
                workers::end_task(&mut c, l, &e).await;
            }
            let id = c.id();
            if let Some(v) = workers::call_ok(&mut c, l, &rpc::on_task(id, "tasks/get", &e.id), "tasks/get").await {
                l.saw(&e.id, v["status"].as_str().unwrap_or_default());
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The final `tasks/get` of every acknowledged task.
async fn resolve(server: &ServerProc, l: &Ledger) -> Resolution {
    let mut c = Client::new(server.addr);
    let mut r = Resolution::default();
    for e in l.all() {
        r.acknowledged += 1;
        let id = c.id();
        let reply = match c.send(&rpc::on_task(id, "tasks/get", &e.id)).await {
            Ok(reply) => reply,
            Err(err) => {
                l.error(false, format!("final tasks/get: {err}"));
                r.stuck += 1;
                continue;
            }
        };
        match (reply.result().and_then(|v| v["status"].as_str()), reply.code()) {
            (Some("completed"), _) => r.completed += 1,
            (Some("failed"), _) => r.failed += 1,
            (Some("cancelled"), _) => r.cancelled += 1,
            (Some(_), _) => r.stuck += 1,
            (None, Some(-32602)) => {
                let expired = e.ttl_ms.is_some_and(|ttl| e.acked.elapsed() >= Duration::from_millis(ttl));
                if expired { r.expired += 1 } else { r.lost += 1 }
            }
            (None, _) => {
                l.error(false, format!("final tasks/get: {}", reply.describe()));
                r.stuck += 1;
            }
        }
    }
    r
}

/// Runs the soak: `Ok(true)` on a pass.
pub async fn run(a: MixedArgs) -> Result<bool, String> {
    std::fs::create_dir_all(&a.dir).map_err(|e| format!("{}: {e}", a.dir.display()))?;
    let sqlite = a.dir.join("soak.db").display().to_string();
    prepare(&a, &sqlite).await?;
    let config = a.dir.join(format!("soak-{}.toml", a.store));
    let toml = format!("[ext_tasks]\nmax_rows = {}\njanitor = {{ interval_ms = 10000 }}\n", a.cap);
    std::fs::write(&config, toml).map_err(|e| format!("{}: {e}", config.display()))?;
    let mut args = vec!["--config".to_owned(), config.display().to_string()];
    args.extend(["--idle-timeout-s", "20", "--header-timeout-s", "5"].map(String::from));
    match a.store.as_str() {
        "sqlite" => args.extend(["--store".to_owned(), format!("sqlite:{sqlite}")]),
        _ => args.extend([
            "--store".to_owned(),
            format!("postgres:{}", a.database_url),
            "--pg-schema".to_owned(),
            a.pg_schema.clone(),
        ]),
    }
    let mut server = ServerProc::start(&a.server, &args)?;
    if a.store == "sqlite" {
        let abs = std::fs::canonicalize(&a.dir).map_err(|e| e.to_string())?.join("soak.db");
        server.set_db_file(&abs.display().to_string());
    }
    let fds_baseline = server.fds();
    let targets_baseline = server.fd_targets();
    let ledger = Arc::new(Ledger::default());
    let shared =
        Shared { addr: server.addr, ledger: ledger.clone(), stop: Arc::new(AtomicBool::new(false)), cap: a.cap };
    let mut joins = Vec::new();
    let counter = Arc::new(AtomicU64::new(0));
    for _ in 0..2 {
        joins.push(tokio::spawn(workers::creator(shared.clone(), counter.clone())));
    }
    for _ in 0..3 {
        joins.push(tokio::spawn(workers::poller(shared.clone())));
    }
    for _ in 0..2 {
        joins.push(tokio::spawn(workers::listener(shared.clone())));
    }
    for i in 0..20 {
        joins.push(tokio::spawn(workers::idler(shared.clone(), i % 2 == 0)));
    }
    // About half of what the soak ends is ended during the load, the rest in the drain.
    let every = Duration::from_millis((u64::from(a.minutes) * 60_000 / (a.cap / 2).max(1)).max(20));
    joins.push(tokio::spawn(workers::ender(shared.clone(), every)));
    if a.store == "postgres" {
        joins.push(tokio::spawn(workers::killer(shared.clone(), a.database_url.clone(), server.pid)));
    }
    let t0 = tokio::time::Instant::now();
    let mut samples = Vec::new();
    let mut prev = [0u64; 9];
    for minute in 1..=a.minutes {
        tokio::time::sleep_until(t0 + Duration::from_secs(60 * u64::from(minute))).await;
        let s = sample(minute, &server, &ledger, &mut prev);
        eprintln!(
            "minute {minute}: RSS {} KiB, fds {} ({} clients, {} db), {} requests, {} created, {} refused, {} unexpected errors",
            s.rss_kib, s.fds.total, s.fds.clients, s.fds.database, s.requests, s.created, s.refused, s.unexpected
        );
        samples.push(s);
        if !server.alive() {
            return Err(format!("the server died: {}", server.tail()));
        }
    }
    shared.stop.store(true, Ordering::Relaxed);
    for j in joins {
        j.await.map_err(|e| e.to_string())?;
    }
    drain(&server, &ledger).await;
    let resolution = resolve(&server, &ledger).await;
    // Every client is closed now: the server's client sockets go back to its listener alone.
    let settle = Instant::now();
    while server.fds().clients > fds_baseline.clients && settle.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let fds_end = server.fds();
    if fds_end.total - fds_end.database > fds_baseline.total - fds_baseline.database {
        let kind = |t: &String| {
            if t.starts_with('/') { t.clone() } else { t.split(['[', ':']).next().unwrap_or_default().to_owned() }
        };
        let mut before: Vec<String> = targets_baseline.iter().map(kind).collect();
        let mut after: Vec<String> = server.fd_targets().iter().map(kind).collect();
        before.sort();
        after.sort();
        eprintln!("fds at the start: {before:?}\nfds at the end: {after:?}");
    }
    let clean_exit = server.stop().is_ok_and(|s| s.success());
    prepare(&a, &sqlite).await?;
    let outcome = Outcome {
        store: a.store.clone(),
        cap: a.cap,
        samples,
        fds_baseline,
        fds_end,
        resolution,
        errors: ledger.error_table(),
        clean_exit,
    };
    let text = outcome.render();
    println!("{text}");
    for e in ledger.first_unexpected() {
        eprintln!("unexpected: {e}");
    }
    if let Some(out) = &a.out {
        use std::io::Write as _;
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(out).map_err(|e| e.to_string())?;
        writeln!(f, "{text}").map_err(|e| e.to_string())?;
    }
    Ok(outcome.problems().is_empty())
}
