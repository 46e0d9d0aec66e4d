//! Killing a server (SIGKILL) with tasks in flight loses no task: every id
//! still resolves and every task reaches a terminal state within one lease
//! period — on SQLite after a restart on the same file, on PostgreSQL with a
//! second node taking over.

use crate::common;

use common::*;
use serde_json::json;
use std::collections::HashSet;
use std::time::{Duration, Instant};

const IN_FLIGHT: usize = 200;
const RESUMABLE: usize = 20;
const LEASE_MS: u64 = 4_000;

/// Waits, on a listen stream of `node`, until every id is terminal; returns when that happened.
async fn all_terminal(node: &Node, ids: &[String]) -> Instant {
    let mut pending: HashSet<String> = ids.iter().cloned().collect();
    let mut streams = Vec::new();
    for (i, chunk) in ids.chunks(1000).enumerate() {
        let mut s = Events::listen(node, None, chunk).await;
        let acked = s.ack(Duration::from_secs(10)).await;
        assert_eq!(acked.len(), chunk.len(), "every id still resolves (stream {i})");
        streams.push(s);
    }
    for id in ids {
        let g = get(node, None, id).await;
        let status = g["status"].as_str().unwrap_or_else(|| panic!("task lost: {g}")).to_owned();
        if matches!(status.as_str(), "completed" | "failed" | "cancelled") {
            pending.remove(id);
        }
    }
    let limit = Duration::from_millis(3 * LEASE_MS);
    for s in &mut streams {
        while !pending.is_empty() {
            let (_, n) = s.notification(limit).await;
            let status = n["status"].as_str().unwrap_or_default();
            if matches!(status, "completed" | "failed" | "cancelled") {
                pending.remove(n["taskId"].as_str().unwrap_or_default());
            }
            if streams_done(&pending, ids) {
                break;
            }
        }
    }
    assert!(pending.is_empty(), "{} tasks never finished", pending.len());
    Instant::now()
}

fn streams_done(pending: &HashSet<String>, _ids: &[String]) -> bool {
    pending.is_empty()
}

async fn start_work(node: &Node) -> (Vec<String>, Vec<String>) {
    let mut sleepers = Vec::new();
    for _ in 0..IN_FLIGHT - RESUMABLE {
        sleepers.push(create(node, None, "sleep", json!({ "seconds": 3600 })).await);
    }
    let mut counters = Vec::new();
    for _ in 0..RESUMABLE {
        counters.push(create(node, None, "countdown", json!({ "from": 1 })).await);
    }
    (sleepers, counters)
}

async fn check_outcomes(node: &Node, sleepers: &[String], counters: &[String]) {
    for id in sleepers {
        let r = get(node, None, id).await;
        assert_eq!(r["status"], "failed", "{r}");
        assert_eq!(r["error"]["code"], -32603);
        // A restart under the same id: "... stopped"; another node, after the lease lapsed: "... stopped renewing its lease".
        let why = r["error"]["message"].as_str().unwrap_or_default();
        assert!(why.starts_with("interrupted: the server running this task stopped"), "{r}");
    }
    for id in counters {
        let r = get(node, None, id).await;
        assert_eq!(r["status"], "completed", "resumable work ran again: {r}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_restart_recovers_every_task() {
    let path = std::env::temp_dir().join(format!("conduit-crash-{:016x}.db", rand::random::<u64>()));
    let store = format!("sqlite:{}", path.display());
    let lease = LEASE_MS.to_string();
    let args = ["--store", &store, "--node-id", "crash-node", "--lease-ms", &lease];
    let mut node = Node::start(&args).await;
    let (sleepers, counters) = start_work(&node).await;
    node.kill();
    let killed = Instant::now();
    let node = Node::start(&args).await;
    let all: Vec<String> = sleepers.iter().chain(&counters).cloned().collect();
    let done = all_terminal(&node, &all).await;
    let took = done - killed;
    eprintln!(
        "sqlite: {} tasks in flight, {} recovered ({} failed as interrupted, {} resumed), {:?} after SIGKILL",
        all.len(),
        all.len(),
        sleepers.len(),
        counters.len(),
        took
    );
    assert!(
        took <= Duration::from_millis(LEASE_MS) + Duration::from_secs(2),
        "within one lease period (plus the restart): {took:?}"
    );
    check_outcomes(&node, &sleepers, &counters).await;
    drop(node);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_second_node_takes_over() {
    let Some(url) = database_url() else { return };
    let schema = Schema::new(&url);
    let store = format!("postgres:{url}");
    let lease = LEASE_MS.to_string();
    let mut a =
        Node::start(&["--store", &store, "--pg-schema", &schema.name, "--node-id", "node-a", "--lease-ms", &lease])
            .await;
    let b = Node::start(&["--store", &store, "--pg-schema", &schema.name, "--node-id", "node-b", "--lease-ms", &lease])
        .await;
    let (sleepers, counters) = start_work(&a).await;
    a.kill();
    let killed = Instant::now();
    let all: Vec<String> = sleepers.iter().chain(&counters).cloned().collect();
    let done = all_terminal(&b, &all).await;
    let took = done - killed;
    eprintln!(
        "postgres: {} tasks in flight on node A, all recovered by node B {:?} after SIGKILL (lease {LEASE_MS} ms)",
        all.len(),
        took
    );
    // The lease lapses at most one period after the kill (renewals come every third of it);
    // recovery follows within a tenth of it, and the resumed countdowns then need their second
    // of work. Twice the period bounds all of that with room for a loaded machine.
    assert!(took <= Duration::from_millis(2 * LEASE_MS), "recovered within one lease period of the lapse: {took:?}");
    check_outcomes(&b, &sleepers, &counters).await;
    drop(b);
    schema.drop_now().await;
}
