//! The session store contract on `PostgresSessionStore` (a schema of its own
//! per store), and two nodes serving one session. Needs `DATABASE_URL`.

use crate::support;

use conduit_mcp::clock::SystemClock;
use conduit_mcp::session::{SessionError, SessionLimits, SessionRecord, SessionStore, new_session_id};
use conduit_mcp_sql::PostgresStore;
use std::sync::Arc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_session_store_meets_the_contract() {
    let Some(url) = support::pg_url("postgres_session_store_meets_the_contract") else { return };
    let schemas = support::Schemas::new(&url);
    conduit_mcp::testing::session_store_contract(|| {
        let (url, schema) = (url.clone(), schemas.fresh());
        async move {
            PostgresStore::with_schema(&url, &schema, Arc::new(SystemClock)).await.expect("connect").sessions()
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_node_serves_a_session_another_opened_and_ids_are_not_stored() {
    let Some(url) = support::pg_url("any_node_serves_a_session_another_opened_and_ids_are_not_stored") else {
        return;
    };
    let schemas = support::Schemas::new(&url);
    let schema = schemas.fresh();
    let a = PostgresStore::with_schema(&url, &schema, Arc::new(SystemClock)).await.expect("a");
    let b = PostgresStore::with_schema(&url, &schema, Arc::new(SystemClock)).await.expect("b");
    let (sa, sb) = (a.sessions(), b.sessions());
    let t0 = 1_800_000_000_000;
    let idle = 60_000;
    let mut limits = SessionLimits::default();
    (limits.max_sessions, limits.idle_ms, limits.evict_idle_ms) = (2, idle, 10_000);
    let id = new_session_id();
    sa.create(SessionRecord::new(id.clone(), Some("alice".into()), "2025-11-25", t0), limits).await.expect("open on a");
    let mut got = sb.touch(&id, Some("alice"), t0 + 1, idle).await.expect("b serves it");
    got.initialized = true;
    got.log_level = Some("info".into());
    sb.update(&got).await.expect("update on b");
    let back = sa.touch(&id, Some("alice"), t0 + 2, idle).await.expect("a sees b's update");
    assert!(back.initialized && back.log_level.as_deref() == Some("info"));
    assert!(matches!(sb.touch(&id, Some("mallory"), t0 + 3, idle).await, Err(SessionError::NotFound)));
    // The cap is shared: one more on b fills it, a third (nobody idle 10 s) is refused on a.
    sb.create(SessionRecord::new(new_session_id(), None, "2025-11-25", t0 + 3), limits).await.expect("second");
    let mut third = SessionRecord::new(new_session_id(), None, "2025-11-25", t0 + 4);
    third.client_key = "ip:192.0.2.3".into(); // another client: the total cap refuses it
    assert!(matches!(sa.create(third, limits).await, Err(SessionError::LimitReached)));
    // The table holds no usable id: only its hash.
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(&url).await.expect("connect");
    let stored: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT row_to_json(s)::text FROM \"{schema}\".conduit_legacy_sessions s"
    )))
    .fetch_all(&mut conn)
    .await
    .expect("read the table");
    assert_eq!(stored.len(), 2);
    assert!(stored.iter().all(|row| !row.contains(&id)), "the session id is not stored in clear");
    sa.delete(&id, Some("alice")).await.expect("end it on a");
    assert!(matches!(sb.touch(&id, Some("alice"), t0 + 5, idle).await, Err(SessionError::NotFound)), "gone on b");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cap_holds_under_concurrent_creates_on_two_nodes() {
    let Some(url) = support::pg_url("the_cap_holds_under_concurrent_creates_on_two_nodes") else { return };
    let schemas = support::Schemas::new(&url);
    let schema = schemas.fresh();
    let a = PostgresStore::with_schema(&url, &schema, Arc::new(SystemClock)).await.expect("a").sessions();
    let b = PostgresStore::with_schema(&url, &schema, Arc::new(SystemClock)).await.expect("b").sessions();
    let mut limits = SessionLimits::default();
    (limits.max_sessions, limits.evict_idle_ms) = (5, 3_600_000);
    let mut set = tokio::task::JoinSet::new();
    for i in 0..40u64 {
        let store = if i % 2 == 0 { a.clone() } else { b.clone() };
        set.spawn(async move {
            // Forty clients: the total cap is what refuses (each client's share is one).
            let mut r = SessionRecord::new(new_session_id(), None, "2025-11-25", 1_800_000_000_000 + i);
            r.client_key = format!("ip:192.0.2.{i}");
            store.create(r, limits).await
        });
    }
    let (mut ok, mut full) = (0, 0);
    while let Some(r) = set.join_next().await {
        match r.expect("join") {
            Ok(_) => ok += 1,
            Err(SessionError::LimitReached) => full += 1,
            Err(e) => panic!("unexpected {e}"),
        }
    }
    assert_eq!((ok, full), (5, 35), "exactly the cap's worth of sessions, across both nodes");
    assert_eq!(a.count().await.expect("count"), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_sessions_in_use_are_not_evicted_and_a_client_gets_a_quarter() {
    let Some(url) = support::pg_url("postgres_sessions_in_use_are_not_evicted_and_a_client_gets_a_quarter") else {
        return;
    };
    let schemas = support::Schemas::new(&url);
    let store = PostgresStore::with_schema(&url, &schemas.fresh(), Arc::new(SystemClock)).await.expect("connect");
    support::in_use::an_open_stream_keeps_its_session(store.sessions()).await;
}
