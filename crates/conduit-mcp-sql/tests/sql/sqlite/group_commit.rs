//! `SqliteStore::create` under concurrency: creates queued behind the writer
//! are committed together, yet each keeps its own cap check and its own
//! result (a duplicate id fails alone), and a caller that gives up strands
//! no one.
//!
//! On a current-thread runtime, futures joined together all reach the queue
//! before any flush runs, so those tests build one batch deterministically.

use crate::support;

use conduit_mcp::clock::{Clock, ManualClock};
use conduit_mcp::ext::tasks::{CreateCaps, Owner, TaskRecord, TaskStore, new_task_id};
use conduit_mcp::task::StoreError;
use conduit_mcp_sql::SqliteStore;
use futures_util::FutureExt;
use futures_util::future::join_all;
use std::sync::Arc;

const START: u64 = 1_800_000_000_000;

fn task(clock: &ManualClock, id: &str) -> TaskRecord {
    TaskRecord::new(id.to_owned(), Some("alice".into()), clock.now_ms(), None)
}

async fn open(db: &support::TempDb, clock: &ManualClock) -> SqliteStore {
    SqliteStore::open(db.path(), Arc::new(clock.clone())).await.expect("open")
}

/// The row counter is exactly `n`: one more create fits under `n + 1` and
/// not under `n` (it leaves one extra row behind).
async fn assert_count(store: &SqliteStore, clock: &ManualClock, n: usize) {
    let r = store.create(task(clock, &new_task_id()), CreateCaps::rows(Some(n))).await;
    assert_eq!(r, Err(StoreError::TaskLimitReached), "the counter should be {n}");
    store
        .create(task(clock, &new_task_id()), CreateCaps::rows(Some(n + 1)))
        .await
        .expect("the counter should be below n + 1");
}

async fn cap_race(store: SqliteStore, clock: &ManualClock, spawn: bool) {
    let ids: Vec<String> = (0..200).map(|_| new_task_id()).collect();
    let results: Vec<Result<TaskRecord, StoreError>> = if spawn {
        let handles: Vec<_> = ids
            .iter()
            .map(|id| {
                let (store, t) = (store.clone(), task(clock, id));
                tokio::spawn(async move { store.create(t, CreateCaps::rows(Some(50))).await })
            })
            .collect();
        join_all(handles).await.into_iter().map(|r| r.expect("create task")).collect()
    } else {
        join_all(ids.iter().map(|id| store.create(task(clock, id), CreateCaps::rows(Some(50))))).await
    };
    let ok = results.iter().filter(|r| r.is_ok()).count();
    let refused = results.iter().filter(|r| matches!(r, Err(StoreError::TaskLimitReached))).count();
    assert_eq!((ok, refused), (50, 150), "{results:?}");
    for (id, r) in ids.iter().zip(&results) {
        let got = store.get(id, Owner::Any).await;
        assert_eq!(got.is_ok(), r.is_ok(), "task {id}: create said {r:?}, get says {got:?}");
    }
    assert_count(&store, clock, 50).await;
}

/// 200 creates racing for 50 slots on a multi-threaded runtime: exactly 50
/// win, every winner is readable, every loser is absent, the counter is 50.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_creates_respect_the_cap() {
    let db = support::TempDb::new("gc-cap");
    let clock = ManualClock::new(START);
    cap_race(open(&db, &clock).await, &clock, true).await;
}

/// The same 200 creates in one batch (all queued before the first flush).
#[tokio::test]
async fn one_batch_respects_the_cap() {
    let db = support::TempDb::new("gc-cap1");
    let clock = ManualClock::new(START);
    cap_race(open(&db, &clock).await, &clock, false).await;
}

/// The same on `:memory:` (one connection for reads and writes).
#[tokio::test]
async fn one_batch_respects_the_cap_in_memory() {
    let clock = ManualClock::new(START);
    let store = SqliteStore::open(":memory:", Arc::new(clock.clone())).await.expect("open");
    cap_race(store, &clock, false).await;
}

/// Each create in a batch is judged against its own cap, in queue order.
#[tokio::test]
async fn each_create_in_a_batch_has_its_own_cap() {
    let db = support::TempDb::new("gc-caps");
    let clock = ManualClock::new(START);
    let store = open(&db, &clock).await;
    let caps = [Some(1), Some(1), None, Some(3), Some(2), Some(5)];
    let ids: Vec<String> = caps.iter().map(|_| new_task_id()).collect();
    let creates = ids.iter().zip(caps).map(|(id, cap)| store.create(task(&clock, id), CreateCaps::rows(cap)));
    let results: Vec<_> = join_all(creates).await.into_iter().map(|r| r.map(drop)).collect();
    let limit = Err(StoreError::TaskLimitReached);
    assert_eq!(results, vec![Ok(()), limit.clone(), Ok(()), Ok(()), limit, Ok(())]);
    assert_count(&store, &clock, 4).await;
}

/// A duplicate id in the middle of a batch fails alone (against a row
/// already stored and against another create of the same batch), and the
/// slot it did not take goes to a later create under the cap.
#[tokio::test]
async fn a_duplicate_in_a_batch_fails_alone() {
    let db = support::TempDb::new("gc-dup");
    let clock = ManualClock::new(START);
    let store = open(&db, &clock).await;
    let old = new_task_id();
    store.create(task(&clock, &old), CreateCaps::default()).await.expect("first create");
    let (a, b, c) = (new_task_id(), new_task_id(), new_task_id());
    let batch = [(&a, Some(4)), (&old, Some(4)), (&b, Some(4)), (&a, Some(4)), (&c, Some(4))];
    let creates = batch.iter().map(|(id, cap)| store.create(task(&clock, id), CreateCaps::rows(*cap)));
    let results: Vec<_> = join_all(creates).await.into_iter().map(|r| r.map(drop)).collect();
    assert_eq!(
        results,
        vec![Ok(()), Err(StoreError::Duplicate), Ok(()), Err(StoreError::Duplicate), Ok(())],
        "the rows are {old} {a} {b} {c}"
    );
    for id in [&old, &a, &b, &c] {
        store.get(id, Owner::Any).await.expect("stored");
    }
    assert_count(&store, &clock, 4).await;
}

/// A queued create whose caller stops waiting still lands (the flush goes
/// on without it), and the creates queued with it get their results. A
/// create that runs on its own and is dropped mid-statement costs the
/// writer connection (as any cancelled write does) and nothing else.
#[tokio::test]
async fn a_dropped_create_strands_no_one() {
    let db = support::TempDb::new("gc-drop");
    let clock = ManualClock::new(START);
    let store = open(&db, &clock).await;
    // Alone, so it runs its statement directly; dropped in the middle (or
    // done already: SQLite may answer within the one poll).
    let alone = new_task_id();
    let _ = store.create(task(&clock, &alone), CreateCaps::default()).now_or_never();
    // A create still waiting for SQLite, so that the next one queues.
    let mut done_at_once = 0;
    let first = loop {
        let mut f = store.create(task(&clock, &new_task_id()), CreateCaps::default());
        match (&mut f).now_or_never() {
            None => break f,
            Some(r) => {
                r.expect("a create that ran alone");
                done_at_once += 1;
            }
        }
    };
    // Queued behind `first`, then dropped.
    let gone = new_task_id();
    assert!(store.create(task(&clock, &gone), CreateCaps::default()).now_or_never().is_none(), "a queued create waits");
    let ids: Vec<String> = (0..8).map(|_| new_task_id()).collect();
    let (first, results) = futures_util::join!(
        first,
        join_all(ids.iter().map(|id| store.create(task(&clock, id), CreateCaps::default())))
    );
    first.expect("the create that ran alone");
    assert!(results.iter().all(|r| r.is_ok()), "{results:?}");
    for id in ids.iter().chain([&gone]) {
        store.get(id, Owner::Any).await.expect("stored");
    }
    // `alone`'s statement ran on the writer connection the store gave up, so
    // it may commit after everything above (even after a read of it): the
    // rows and the row counter are read in one snapshot, where they agree
    // whether it has landed or not.
    let (rows, counted) = rows_and_counter(&db).await;
    assert_eq!(rows, counted, "the row counter counts every row");
    let made = 10 + done_at_once;
    assert!(rows == made || rows == made + 1, "{rows} rows: {made} creates and perhaps the dropped one");
}

/// The rows of `conduit_tasks` and its row counter, in one read transaction.
async fn rows_and_counter(db: &support::TempDb) -> (i64, i64) {
    use sqlx::Connection;
    let opts = sqlx::sqlite::SqliteConnectOptions::new().filename(db.path());
    let mut conn = sqlx::sqlite::SqliteConnection::connect_with(&opts).await.expect("connect");
    let mut tx = conn.begin().await.expect("begin");
    let rows = sqlx::query_scalar("SELECT count(*) FROM conduit_tasks").fetch_one(&mut *tx).await.expect("rows");
    let counted =
        sqlx::query_scalar("SELECT n FROM conduit_task_count WHERE id = 1").fetch_one(&mut *tx).await.expect("counter");
    tx.commit().await.expect("end");
    (rows, counted)
}
