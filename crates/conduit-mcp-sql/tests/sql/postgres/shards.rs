//! The row cap on the sharded counter (migration 0014): two store instances
//! creating at once near the cap never pass it, the shards' counts always
//! add up to the rows, and a schema from before the shards (one counter row)
//! is migrated with counts taken from its rows. Needs `DATABASE_URL`.

use crate::support;

use conduit_mcp::clock::{Clock, ManualClock};
use conduit_mcp::ext::tasks::{CreateCaps, Owner, TaskRecord, TaskStore, new_task_id};
use conduit_mcp::task::StoreError;
use conduit_mcp_sql::{PostgresOptions, PostgresStore};
use sqlx::Connection;
use std::sync::Arc;

const START: u64 = 1_800_000_000_000;

fn task(clock: &ManualClock, ttl_ms: u64) -> TaskRecord {
    TaskRecord::new(new_task_id(), None, clock.now_ms(), Some(ttl_ms))
}

async fn node(url: &str, schema: &str, clock: &ManualClock) -> PostgresStore {
    PostgresOptions::new(url).schema(schema).max_connections(6).connect(Arc::new(clock.clone())).await.expect("connect")
}

async fn admin(url: &str, schema: &str) -> sqlx::PgConnection {
    let mut c = sqlx::PgConnection::connect(url).await.expect("admin connection");
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("SET search_path TO \"{schema}\"")))
        .execute(&mut c)
        .await
        .expect("search_path");
    c
}

/// The rows, the shards' counts summed, and the room handed out summed.
async fn tally(c: &mut sqlx::PgConnection) -> (i64, i64, i64) {
    sqlx::query_as(
        "SELECT (SELECT count(*) FROM conduit_tasks), \
                (SELECT sum(n)::bigint FROM conduit_task_shards), (SELECT sum(free)::bigint FROM conduit_task_shards)",
    )
    .fetch_one(c)
    .await
    .expect("tally")
}

/// `store` is at exactly `n` rows: a create under `n` is refused, one under `n + 1` fits.
async fn assert_count(store: &dyn TaskStore, clock: &ManualClock, n: usize) {
    let r = store.create(task(clock, 3_600_000), CreateCaps::rows(Some(n))).await;
    assert_eq!(r, Err(StoreError::TaskLimitReached), "the count should be {n}");
    store.create(task(clock, 3_600_000), CreateCaps::rows(Some(n + 1))).await.expect("the count should be below n + 1");
}

/// Rounds of 300 creates from two nodes at once, 30 concurrent callers each,
/// into the last slots under a cap of 600; between rounds a sweep frees some.
/// Every round fills exactly the free slots, never more, and the shards'
/// counts always equal the rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_nodes_creating_near_the_cap_never_pass_it() {
    let Some(url) = support::pg_url("two_nodes_creating_near_the_cap_never_pass_it") else { return };
    let schemas = support::Schemas::new(&url);
    let schema = schemas.fresh();
    let clock = ManualClock::new(START);
    let (a, b) = (node(&url, &schema, &clock).await, node(&url, &schema, &clock).await);
    let mut admin = admin(&url, &schema).await;
    const CAP: usize = 600;
    // 500 rows first (short-lived ones among them, for the sweeps), from both nodes.
    let mut setup = Vec::new();
    for i in 0..500 {
        let store = if i % 2 == 0 { a.clone() } else { b.clone() };
        let t = task(&clock, if i % 5 == 0 { (i / 100) as u64 * 1_000 + 500 } else { 3_600_000 });
        setup.push(tokio::spawn(async move { store.create(t, CreateCaps::rows(Some(CAP))).await }));
    }
    for s in setup {
        s.await.expect("join").expect("under the cap");
    }
    for round in 0..4 {
        let (rows, _, _) = tally(&mut admin).await;
        let room = CAP - usize::try_from(rows).expect("rows");
        let mut set = tokio::task::JoinSet::new();
        for w in 0..60 {
            let store = if w % 2 == 0 { a.clone() } else { b.clone() };
            let clock = clock.clone();
            set.spawn(async move {
                let mut won = 0;
                for _ in 0..5 {
                    match store.create(task(&clock, 3_600_000), CreateCaps::rows(Some(CAP))).await {
                        Ok(_) => won += 1,
                        Err(StoreError::TaskLimitReached) => {}
                        Err(e) => panic!("unexpected {e:?}"),
                    }
                }
                won
            });
        }
        let mut won = 0;
        while let Some(r) = set.join_next().await {
            won += r.expect("creator");
        }
        assert_eq!(won, room, "round {round}: exactly the free slots are taken");
        let (rows, counted, free) = tally(&mut admin).await;
        assert_eq!(rows, CAP as i64, "round {round}: the table is at the cap, not past it");
        assert_eq!(counted, rows, "round {round}: the shards count every row");
        assert_eq!(free, 0, "round {round}: no room is left to hand out");
        // A sweep on either node frees the tasks that expired.
        clock.advance(1_000);
        let swept = if round % 2 == 0 { a.cleanup(u64::MAX).await } else { b.cleanup(u64::MAX).await };
        assert!(swept.expect("cleanup") > 0, "round {round}: some tasks expired");
        let (rows, counted, _) = tally(&mut admin).await;
        assert_eq!(counted, rows, "round {round}: a sweep lowers the shards it deletes from");
    }
    a.close().await;
    b.close().await;
}

/// Creates without a cap take no room from the capped ones' count, but are
/// counted: a capped create afterwards sees them. Then a different cap on
/// the other node is judged exactly too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uncapped_creates_and_changed_caps_stay_exact() {
    let Some(url) = support::pg_url("uncapped_creates_and_changed_caps_stay_exact") else { return };
    let schemas = support::Schemas::new(&url);
    let schema = schemas.fresh();
    let clock = ManualClock::new(START);
    let (a, b) = (node(&url, &schema, &clock).await, node(&url, &schema, &clock).await);
    let mut admin = admin(&url, &schema).await;
    for _ in 0..10 {
        a.create(task(&clock, 3_600_000), CreateCaps::rows(Some(1_000))).await.expect("capped");
    }
    let mut set = tokio::task::JoinSet::new();
    for i in 0..40 {
        let store = if i % 2 == 0 { a.clone() } else { b.clone() };
        let t = task(&clock, 3_600_000);
        set.spawn(async move { store.create(t, CreateCaps::default()).await });
    }
    while let Some(r) = set.join_next().await {
        r.expect("join").expect("uncapped");
    }
    assert_count(&b, &clock, 50).await;
    assert_count(&a, &clock, 51).await;
    let (rows, counted, free) = tally(&mut admin).await;
    assert_eq!((rows, counted), (52, 52));
    assert!(free <= 1_000 - 52, "the room handed out fits under the cap: {free}");
    a.close().await;
    b.close().await;
}

/// A schema at version 13 (one counter row, whatever its value) is migrated
/// to the shards with the count taken from the rows; its tasks stay readable
/// and a sweep of one of them lowers the count.
#[tokio::test]
async fn the_migration_from_one_counter_row_counts_the_rows() {
    let Some(url) = support::pg_url("the_migration_from_one_counter_row_counts_the_rows") else { return };
    let schemas = support::Schemas::new(&url);
    let schema = schemas.fresh();
    let clock = ManualClock::new(START);
    let mut admin = sqlx::PgConnection::connect(&url).await.expect("admin connection");
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE SCHEMA \"{schema}\"; SET search_path TO \"{schema}\"")))
        .execute(&mut admin)
        .await
        .expect("schema");
    for sql in [
        include_str!("../../../migrations/postgres/0001_conduit_tasks.sql"),
        include_str!("../../../migrations/postgres/0002_conduit_legacy_tasks.sql"),
        include_str!("../../../migrations/postgres/0013_owner_index.sql"),
        "CREATE TABLE conduit_schema_migrations (version BIGINT NOT NULL PRIMARY KEY, \
         description TEXT NOT NULL, applied_at_ms BIGINT NOT NULL); \
         INSERT INTO conduit_schema_migrations VALUES (1, 'v1', 0), (2, 'v2', 0), (13, 'v13', 0); \
         UPDATE conduit_task_count SET n = 3 WHERE id = 1",
    ] {
        sqlx::raw_sql(sql).execute(&mut admin).await.expect("version 13 schema");
    }
    // Seven rows the old counter says are three: the migration counts the rows.
    let mut ids = Vec::new();
    for i in 0..7u64 {
        let t = TaskRecord::new(new_task_id(), Some("alice".into()), clock.now_ms(), Some(500 + i * 1_000_000));
        sqlx::query(
            "INSERT INTO conduit_tasks (task_id, owner, status, version, created_at_ms, expires_at_ms, doc) \
             VALUES ($1, $2, 'working', 1, $3, $4, $5::json)",
        )
        .bind(&t.task_id)
        .bind(t.owner.as_deref())
        .bind(i64::try_from(t.created_at_ms).expect("ms"))
        .bind(t.expires_at_ms().map(|v| i64::try_from(v).expect("ms")))
        .bind(serde_json::to_string(&t).expect("json"))
        .execute(&mut admin)
        .await
        .expect("old row");
        ids.push(t.task_id);
    }
    let store = node(&url, &schema, &clock).await;
    let (rows, counted, free) = tally(&mut admin).await;
    assert_eq!((rows, counted, free), (7, 7, 0), "counted from the rows");
    let old: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'conduit_task_count'",
    )
    .bind(&schema)
    .fetch_one(&mut admin)
    .await
    .expect("tables");
    assert_eq!(old, 0, "the old counter is gone (an old node fails instead of miscounting)");
    for id in &ids {
        store.get(id, Owner::Any).await.expect("an old task is readable");
    }
    assert_count(&store, &clock, 7).await;
    clock.advance(1_000);
    assert_eq!(store.cleanup(u64::MAX).await.expect("cleanup"), 1, "the first old task expired");
    assert_count(&store, &clock, 7).await;
    let (rows, counted, _) = tally(&mut admin).await;
    assert_eq!((rows, counted), (8, 8));
    store.close().await;
}
