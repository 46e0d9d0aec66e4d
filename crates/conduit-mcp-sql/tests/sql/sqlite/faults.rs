//! `SqliteStore` under faults: a database locked by another process, a store
//! closed and reopened, two processes on one file. Nothing acknowledged is
//! lost, failures are `StoreError::Backend`, and the store recovers.

use crate::support;

use conduit_mcp::clock::{Clock, ManualClock};
use conduit_mcp::ext::tasks::{CreateCaps, Owner, StatusFields, TaskRecord, TaskStore, new_task_id};
use conduit_mcp::protocol::tasks::TaskStatus;
use conduit_mcp::task::StoreError;
use conduit_mcp_sql::{SqliteOptions, SqliteStore};
use serde_json::json;
use sqlx::Connection;
use std::sync::Arc;
use std::time::Duration;

const START: u64 = 1_800_000_000_000;

fn task(clock: &ManualClock, ttl: Option<u64>) -> TaskRecord {
    TaskRecord::new(new_task_id(), Some("alice".into()), clock.now_ms(), ttl)
}

fn progress(msg: &str) -> StatusFields {
    let mut f = StatusFields::default();
    f.status_message = Some(msg.into());
    f
}

fn done() -> StatusFields {
    let mut f = StatusFields::default();
    f.result = Some(json!({"content": [{"type": "text", "text": "ok"}]}));
    f
}

/// A `Backend` failure that carries the driver's error as its source.
fn is_backend(r: &Result<impl std::fmt::Debug, StoreError>) -> bool {
    match r {
        Err(e @ StoreError::Backend { .. }) => std::error::Error::source(e).is_some_and(|s| s.is::<sqlx::Error>()),
        _ => false,
    }
}

/// Another process holds the write lock past the busy timeout: writes fail
/// with `Backend` (reads go on, WAL), nothing acknowledged changes, and once
/// the lock is gone the same writes succeed. A write waiting on the lock
/// when it is released goes through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locked_database_fails_writes_and_recovers() {
    let db = support::TempDb::new("locked");
    let clock = ManualClock::new(START);
    let store = SqliteOptions::new(db.path())
        .busy_timeout(Duration::from_millis(300))
        .open(Arc::new(clock.clone()))
        .await
        .expect("open");
    let (a, b) = (task(&clock, Some(3_600_000)), task(&clock, Some(3_600_000)));
    store.create(a.clone(), CreateCaps::default()).await.expect("create a");
    store.create(b.clone(), CreateCaps::default()).await.expect("create b");
    store.put_status(&a.task_id, TaskStatus::Working, progress("step 1")).await.expect("progress a");
    let b_done = store.put_status(&b.task_id, TaskStatus::Completed, done()).await.expect("complete b");

    let mut other =
        sqlx::SqliteConnection::connect(&format!("sqlite://{}", db.path())).await.expect("second connection");
    sqlx::raw_sql("BEGIN EXCLUSIVE").execute(&mut other).await.expect("lock");

    let failed = store.put_status(&a.task_id, TaskStatus::Completed, done()).await;
    assert!(is_backend(&failed), "a write under a foreign lock is a backend error: {failed:?}");
    let msg = format!("{:?}", failed.unwrap_err());
    assert!(msg.contains("locked"), "the error says why: {msg}");
    assert!(is_backend(&store.create(task(&clock, None), CreateCaps::default()).await), "create too");
    assert!(is_backend(&store.cancel(&a.task_id, Owner::Any, None).await), "cancel too");
    // Reads still work, and show exactly what was acknowledged.
    let got = store.get(&a.task_id, Owner::Any).await.expect("read under the lock");
    assert_eq!((got.status, got.status_message.as_deref()), (TaskStatus::Working, Some("step 1")));
    assert_eq!(store.get(&b.task_id, Owner::Any).await.expect("read b"), b_done);

    sqlx::raw_sql("ROLLBACK").execute(&mut other).await.expect("unlock");
    let completed = store.put_status(&a.task_id, TaskStatus::Completed, done()).await.expect("write after unlock");
    assert_eq!(completed.status, TaskStatus::Completed);
    store.create(task(&clock, None), CreateCaps::default()).await.expect("create after unlock");

    // A write that is waiting on the lock when it is released succeeds.
    let slow = SqliteOptions::new(db.path())
        .busy_timeout(Duration::from_secs(10))
        .open(Arc::new(clock.clone()))
        .await
        .expect("open with a long busy timeout");
    let c = task(&clock, None);
    slow.create(c.clone(), CreateCaps::default()).await.expect("create c");
    sqlx::raw_sql("BEGIN EXCLUSIVE").execute(&mut other).await.expect("lock again");
    let waiting = {
        let (slow, id) = (slow.clone(), c.task_id.clone());
        tokio::spawn(async move { slow.put_status(&id, TaskStatus::Completed, done()).await })
    };
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    assert!(!waiting.is_finished(), "the write waits for the lock");
    sqlx::raw_sql("ROLLBACK").execute(&mut other).await.expect("unlock again");
    let r = waiting.await.expect("join").expect("the waiting write lands");
    assert_eq!(r.status, TaskStatus::Completed);
    other.close().await.expect("close");
}

/// Closing the store fails later calls with `Backend`; reopening the file
/// finds every acknowledged write, and the row cap still counts them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reopening_keeps_everything_acknowledged() {
    let db = support::TempDb::new("reopen");
    let clock = ManualClock::new(START);
    let store = SqliteStore::open(db.path(), Arc::new(clock.clone())).await.expect("open");
    let mut acked = Vec::new();
    for i in 0..40 {
        let r = task(&clock, if i % 2 == 0 { Some(3_600_000) } else { None });
        store.create(r.clone(), CreateCaps::default()).await.expect("create");
        let rec = match i % 4 {
            0 => store.put_status(&r.task_id, TaskStatus::Completed, done()).await.expect("complete"),
            1 => store.cancel(&r.task_id, Owner::Is(Some("alice")), None).await.expect("cancel"),
            2 => {
                let f = |t: &TaskRecord| {
                    let mut n = t.clone();
                    n.input_responses.insert("k".into(), json!({"action": "accept"}));
                    Ok(n)
                };
                store.update(&r.task_id, Owner::Any, &f).await.expect("update")
            }
            _ => store.put_status(&r.task_id, TaskStatus::Working, progress(&format!("p{i}"))).await.expect("progress"),
        };
        acked.push(rec);
    }
    store.close().await;
    assert!(is_backend(&store.get(&acked[0].task_id, Owner::Any).await), "a closed store answers Backend");
    assert!(is_backend(&store.create(task(&clock, None), CreateCaps::default()).await));

    let reopened = SqliteStore::open(db.path(), Arc::new(clock.clone())).await.expect("reopen");
    for rec in &acked {
        assert_eq!(&reopened.get(&rec.task_id, Owner::Any).await.expect("still there"), rec);
    }
    assert_eq!(
        reopened.create(task(&clock, None), CreateCaps::rows(Some(40))).await,
        Err(StoreError::TaskLimitReached)
    );
    reopened.create(task(&clock, None), CreateCaps::rows(Some(41))).await.expect("under the cap");
}

/// Two stores on one file (two processes) racing on the same tasks: the
/// compare-and-swap alone keeps exactly one terminal transition per task and
/// every acknowledged answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_on_one_file_race_safely() {
    let db = support::TempDb::new("two");
    let clock = ManualClock::new(START);
    let one = SqliteStore::open(db.path(), Arc::new(clock.clone())).await.expect("open one");
    let two = SqliteStore::open(db.path(), Arc::new(clock.clone())).await.expect("open two");
    let ids: Vec<String> = {
        let mut ids = Vec::new();
        for _ in 0..100 {
            let r = task(&clock, Some(3_600_000));
            one.create(r.clone(), CreateCaps::default()).await.expect("create");
            ids.push(r.task_id);
        }
        ids
    };
    let mut set = tokio::task::JoinSet::new();
    for id in &ids {
        for w in 0..16usize {
            let store = if w % 2 == 0 { one.clone() } else { two.clone() };
            let id = id.clone();
            set.spawn(async move {
                let ok = if w % 8 == 0 {
                    store.put_status(&id, TaskStatus::Completed, done()).await.is_ok()
                } else {
                    let key = format!("w{w}");
                    let f = move |t: &TaskRecord| {
                        if t.is_terminal() {
                            return Err(StoreError::Terminal);
                        }
                        let mut n = t.clone();
                        n.input_responses.insert(key.clone(), json!(w));
                        Ok(n)
                    };
                    store.update(&id, Owner::Any, &f).await.is_ok()
                };
                (id, w, ok)
            });
        }
    }
    let mut results = std::collections::HashMap::<String, Vec<(usize, bool)>>::new();
    while let Some(r) = set.join_next().await {
        let (id, w, ok) = r.expect("writer");
        results.entry(id).or_default().push((w, ok));
    }
    for id in &ids {
        let fin = two.get(id, Owner::Any).await.expect("final");
        assert_eq!(fin.status, TaskStatus::Completed);
        let wins = results[id].iter().filter(|(w, ok)| w % 8 == 0 && *ok).count();
        assert_eq!(wins, 1, "exactly one terminal transition");
        for (w, _) in results[id].iter().filter(|(w, ok)| w % 8 != 0 && *ok) {
            assert!(fin.input_responses.contains_key(&format!("w{w}")), "acknowledged answer w{w} lost");
        }
    }
}

/// The row cap holds across cleanup; lease renewal moves the version (so a
/// compare-and-swap based on the old lease fails) and never touches terminal
/// rows; expired tasks are not reported as lapsed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counter_and_leases() {
    let clock = ManualClock::new(START);
    let store = SqliteStore::open(":memory:", Arc::new(clock.clone())).await.expect("open");
    for _ in 0..3 {
        store.create(task(&clock, Some(100)), CreateCaps::rows(Some(3))).await.expect("under the cap");
    }
    assert_eq!(
        store.create(task(&clock, Some(100)), CreateCaps::rows(Some(3))).await,
        Err(StoreError::TaskLimitReached)
    );
    clock.advance(101);
    assert_eq!(store.cleanup(3_600_000).await.expect("cleanup"), 3);
    store.create(task(&clock, Some(100)), CreateCaps::rows(Some(3))).await.expect("room again after cleanup");

    let mut leased = task(&clock, Some(1_000));
    leased.lease = Some(conduit_mcp::ext::tasks::Lease { node: "n1".into(), expires_at_ms: clock.now_ms() + 10 });
    store.create(leased.clone(), CreateCaps::default()).await.expect("create leased");
    let before = store.get(&leased.task_id, Owner::Any).await.expect("get");
    assert_eq!(store.renew_leases("n1", clock.now_ms() + 500).await.expect("renew"), 1);
    let after = store.get(&leased.task_id, Owner::Any).await.expect("get");
    assert!(after.version > before.version, "a renewal moves the version");
    assert_eq!(after.lease.as_ref().map(|l| l.expires_at_ms), Some(clock.now_ms() + 500));
    assert_eq!(store.renew_leases("n1", clock.now_ms() + 100).await.expect("renew"), 1);
    let kept = store.get(&leased.task_id, Owner::Any).await.expect("get");
    assert_eq!(kept.lease.as_ref().map(|l| l.expires_at_ms), Some(clock.now_ms() + 500), "never shortened");
    clock.advance(600);
    assert_eq!(store.lapsed_leases(10).await.expect("lapsed").len(), 1);
    clock.advance(1_000);
    assert!(store.lapsed_leases(10).await.expect("lapsed").is_empty(), "an expired task is not reported");
    assert!(store.leased_to("n1", 10).await.expect("leased_to").is_empty());
}
