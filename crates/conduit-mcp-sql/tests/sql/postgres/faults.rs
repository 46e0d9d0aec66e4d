//! `PostgresStore` under faults and across nodes: its sessions terminated
//! mid-request, two stores (nodes) racing on one schema, the row cap shared by
//! nodes. Needs `DATABASE_URL`; each test works in schemas of its own and
//! only ever terminates its own store's sessions.

use crate::support;

use conduit_mcp::clock::{Clock, ManualClock};
use conduit_mcp::ext::tasks::{CreateCaps, Owner, StatusFields, TaskRecord, TaskStore, new_task_id};
use conduit_mcp::protocol::tasks::TaskStatus;
use conduit_mcp::task::StoreError;
use conduit_mcp_sql::{PostgresOptions, PostgresStore};
use serde_json::json;
use sqlx::Connection;
use std::sync::Arc;
use std::time::{Duration, Instant};

const START: u64 = 1_800_000_000_000;

fn task(clock: &ManualClock) -> TaskRecord {
    TaskRecord::new(new_task_id(), Some("alice".into()), clock.now_ms(), Some(3_600_000))
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

async fn node(url: &str, schema: &str, app: &str, clock: &ManualClock) -> PostgresStore {
    PostgresOptions::new(url)
        .schema(schema)
        .application_name(app)
        .max_connections(4)
        .connect(Arc::new(clock.clone()))
        .await
        .expect("connect")
}

/// Terminates every session named `app`; how many there were.
async fn terminate(admin: &mut sqlx::PgConnection, app: &str) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1) t",
    )
    .bind(app)
    .fetch_one(admin)
    .await
    .expect("terminate")
}

/// Waits (up to 10 s) until no session named `app` is left on the server.
async fn sessions_gone(admin: &mut sqlx::PgConnection, app: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left: i64 = sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1")
            .bind(app)
            .fetch_one(&mut *admin)
            .await
            .expect("pg_stat_activity");
        if left == 0 {
            return;
        }
        assert!(Instant::now() < deadline, "the terminated sessions never ended");
        tokio::task::yield_now().await;
    }
}

/// The store's sessions are terminated while a write is in flight (blocked
/// on a row lock held by an admin session): that write fails with
/// `Backend` and is not applied, nothing acknowledged is lost, and the next
/// operations reconnect and succeed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminated_sessions_fail_in_flight_writes_and_the_store_reconnects() {
    let Some(url) = support::pg_url("terminated_sessions_fail_in_flight_writes_and_the_store_reconnects") else {
        return;
    };
    let schemas = support::Schemas::new(&url);
    let schema = schemas.fresh();
    let app = format!("conduit-fault-{schema}");
    let clock = ManualClock::new(START);
    let store = node(&url, &schema, &app, &clock).await;
    let (a, b) = (task(&clock), task(&clock));
    store.create(a.clone(), CreateCaps::default()).await.expect("create a");
    store.create(b.clone(), CreateCaps::default()).await.expect("create b");
    let a_acked = store.put_status(&a.task_id, TaskStatus::Working, progress("step 1")).await.expect("progress a");
    let b_acked = store.put_status(&b.task_id, TaskStatus::Completed, done()).await.expect("complete b");

    let mut admin = sqlx::PgConnection::connect(&url).await.expect("admin connection");
    sqlx::raw_sql("BEGIN").execute(&mut admin).await.expect("begin");
    sqlx::query(sqlx::AssertSqlSafe(format!("SELECT 1 FROM \"{schema}\".conduit_tasks WHERE task_id = $1 FOR UPDATE")))
        .bind(&a.task_id)
        .execute(&mut admin)
        .await
        .expect("lock a's row");
    let in_flight = {
        let (store, id) = (store.clone(), a.task_id.clone());
        tokio::spawn(async move { store.put_status(&id, TaskStatus::Completed, done()).await })
    };
    // Wait until the write is blocked on the row lock, inside the database.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'",
        )
        .bind(&app)
        .fetch_one(&mut admin)
        .await
        .expect("pg_stat_activity");
        if waiting > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "the write never reached the row lock");
        tokio::task::yield_now().await;
    }
    assert!(terminate(&mut admin, &app).await >= 1, "the store's sessions were terminated");
    let failed = in_flight.await.expect("join");
    assert!(matches!(failed, Err(StoreError::Backend { .. })), "the in-flight write fails: {failed:?}");
    let cause = failed.as_ref().err().and_then(std::error::Error::source);
    assert!(cause.is_some_and(|s| s.is::<sqlx::Error>()), "a backend error carries the driver's error");
    sqlx::raw_sql("ROLLBACK").execute(&mut admin).await.expect("release the lock");

    // Reads reconnect by themselves; nothing acknowledged was lost, and the
    // failed write did not land.
    assert_eq!(store.get(&a.task_id, Owner::Any).await.expect("read after the kill"), a_acked);
    assert_eq!(store.get(&b.task_id, Owner::Any).await.expect("read b"), b_acked);
    let completed = store.put_status(&a.task_id, TaskStatus::Completed, done()).await.expect("write after reconnect");
    assert_eq!(completed.status, TaskStatus::Completed);
    store.create(task(&clock), CreateCaps::default()).await.expect("create after reconnect");

    // Kill the idle sessions too: every later operation still ends well
    // (reads retry; a write may fail once per dead connection, with Backend).
    terminate(&mut admin, &app).await;
    // Wait until the terminated sessions are gone from the server.
    sessions_gone(&mut admin, &app).await;
    assert_eq!(store.get(&b.task_id, Owner::Is(Some("alice"))).await.expect("read"), b_acked);
    let c = task(&clock);
    let mut failures = 0;
    loop {
        match store.create(c.clone(), CreateCaps::default()).await {
            Ok(_) => break,
            Err(StoreError::Backend { .. }) if failures < 4 => failures += 1,
            other => panic!("create after idle sessions were killed: {other:?}"),
        }
    }
    assert!(store.get(&c.task_id, Owner::Any).await.is_ok());
    admin.close().await.expect("close admin");
    store.close().await;
}

/// Two nodes on one schema: racing writers on the same tasks (the
/// compare-and-swap alone keeps them apart: each node queues only its own),
/// and concurrent creates under one shared row cap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_share_tasks_and_the_row_cap() {
    let Some(url) = support::pg_url("two_nodes_share_tasks_and_the_row_cap") else { return };
    let schemas = support::Schemas::new(&url);
    let schema = schemas.fresh();
    let clock = ManualClock::new(START);
    let a = node(&url, &schema, "conduit-node-a", &clock).await;
    let b = node(&url, &schema, "conduit-node-b", &clock).await;

    let mut ids = Vec::new();
    for _ in 0..100 {
        let r = task(&clock);
        a.create(r.clone(), CreateCaps::default()).await.expect("create on a");
        ids.push(r.task_id);
    }
    for id in &ids {
        assert!(b.get(id, Owner::Is(Some("alice"))).await.is_ok(), "visible on the other node at once");
        assert_eq!(b.get(id, Owner::Is(Some("mallory"))).await, Err(StoreError::NotFound));
    }
    let mut set = tokio::task::JoinSet::new();
    for id in &ids {
        for w in 0..16usize {
            let store = if w % 2 == 0 { a.clone() } else { b.clone() };
            let id = id.clone();
            set.spawn(async move {
                let ok = match w % 8 {
                    0 | 1 => store.put_status(&id, TaskStatus::Completed, done()).await.is_ok(),
                    2 => store.cancel(&id, Owner::Is(Some("alice")), None).await.is_ok(),
                    _ => {
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
                    }
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
        let fin = a.get(id, Owner::Any).await.expect("final");
        assert!(fin.is_terminal());
        // `cancel` answers Ok on a finished task too; `put_status` only on a live one.
        let status_wins = results[id].iter().filter(|(w, ok)| w % 8 < 2 && *ok).count();
        let expected = if fin.status == TaskStatus::Cancelled { 0 } else { 1 };
        assert_eq!(status_wins, expected, "exactly one terminal transition across nodes ({:?})", fin.status);
        for (w, _) in results[id].iter().filter(|(w, ok)| w % 8 >= 3 && *ok) {
            assert!(fin.input_responses.contains_key(&format!("w{w}")), "acknowledged answer w{w} lost");
        }
    }

    // The cap is shared: 100 rows exist, cap 150, 2 x 40 concurrent creates.
    let mut set = tokio::task::JoinSet::new();
    for i in 0..80 {
        let store = if i % 2 == 0 { a.clone() } else { b.clone() };
        let r = task(&clock);
        set.spawn(async move { store.create(r, CreateCaps::rows(Some(150))).await });
    }
    let (mut ok, mut capped) = (0, 0);
    while let Some(r) = set.join_next().await {
        match r.expect("creator") {
            Ok(_) => ok += 1,
            Err(StoreError::TaskLimitReached) => capped += 1,
            Err(e) => panic!("unexpected {e:?}"),
        }
    }
    assert_eq!((ok, capped), (50, 30), "exactly up to the cap, across nodes");
    // Cleanup on one node frees room for both.
    clock.advance(3_600_001);
    assert_eq!(b.cleanup(3_600_000).await.expect("cleanup"), 150);
    a.create(task(&clock), CreateCaps::rows(Some(1))).await.expect("room again");
    a.close().await;
    b.close().await;
}

/// The soak's finding (issue 11): connections killed while idle in the pool
/// failed the next creates that picked them up, long after the database was
/// back. A create now writes again on a fresh connection, alone and in a batch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creates_after_idle_connections_were_killed_land() {
    let Some(url) = support::pg_url("creates_after_idle_connections_were_killed_land") else {
        return;
    };
    let schemas = support::Schemas::new(&url);
    let schema = schemas.fresh();
    let app = format!("conduit-idle-kill-{schema}");
    let clock = ManualClock::new(START);
    let store = node(&url, &schema, &app, &clock).await;
    // Fill the pool with idle connections: a burst of creates and reads at once.
    let warm: Vec<TaskRecord> = (0..16).map(|_| task(&clock)).collect();
    let mut burst = Vec::new();
    for t in &warm {
        let (store, t) = (store.clone(), t.clone());
        burst.push(tokio::spawn(async move { store.create(t, CreateCaps::default()).await }));
    }
    for b in burst {
        b.await.expect("join").expect("warm-up create");
    }

    let mut admin = sqlx::PgConnection::connect(&url).await.expect("admin connection");
    assert!(terminate(&mut admin, &app).await >= 1, "the store's idle sessions were terminated");
    // pg_terminate_backend only signals: wait until the sessions are gone.
    sessions_gone(&mut admin, &app).await;

    // One create alone, then a batch of concurrent ones: every one lands.
    let alone = task(&clock);
    store.create(alone.clone(), CreateCaps::default()).await.expect("a create after the kill lands");
    let batch: Vec<TaskRecord> = (0..32).map(|_| task(&clock)).collect();
    let mut running = Vec::new();
    for t in &batch {
        let (store, t) = (store.clone(), t.clone());
        running.push(tokio::spawn(async move { store.create(t, CreateCaps::default()).await }));
    }
    for r in running {
        r.await.expect("join").expect("a batched create after the kill lands");
    }
    for t in std::iter::once(&alone).chain(&batch).chain(&warm) {
        let got = store.get(&t.task_id, Owner::Any).await.expect("every create is stored");
        assert_eq!(got.task_id, t.task_id);
    }
    // A real duplicate is still refused.
    assert!(matches!(store.create(alone.clone(), CreateCaps::default()).await, Err(StoreError::Duplicate)));
}
