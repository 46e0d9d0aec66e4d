//! The DPoP replay stores (feature `oauth`) on both engines: a proof is taken
//! once within its window, another key's equal `jti` is another proof, a
//! proof whose window closed is taken again; on PostgreSQL two stores (two
//! nodes) given one proof at once let exactly one take it, and expired rows
//! are swept. `Stores::dpop_replay` is the database's store, `None` in memory.

use crate::support::{Schemas, TempDb, pg_url};
use ReplayVerdict::{Fresh, Replayed};
use conduit_mcp::auth::oauth::{DpopReplayStore, ReplayVerdict};
use conduit_mcp::clock::SystemClock;
use conduit_mcp_sql::{PostgresStore, SqliteStore, Stores};
use std::sync::Arc;

const NOW: u64 = 1_800_000_000_000;

/// Once per window, per key; again after the window.
async fn the_contract(store: &dyn DpopReplayStore) {
    assert_eq!(store.admit("key-a", "j1", NOW, NOW + 120_000).await.unwrap(), Fresh);
    assert_eq!(store.admit("key-a", "j1", NOW + 1, NOW + 120_001).await.unwrap(), Replayed);
    assert_eq!(store.admit("key-b", "j1", NOW + 2, NOW + 120_002).await.unwrap(), Fresh, "another key");
    assert_eq!(store.admit("key-a", "j2", NOW + 3, NOW + 120_003).await.unwrap(), Fresh, "another jti");
    // The replay did not extend the window: at its end the proof is dead, and taken anew.
    assert_eq!(store.admit("key-a", "j1", NOW + 119_999, NOW + 239_999).await.unwrap(), Replayed);
    assert_eq!(store.admit("key-a", "j1", NOW + 120_000, NOW + 240_000).await.unwrap(), Fresh);
    assert_eq!(store.admit("key-a", "j1", NOW + 120_001, NOW + 240_001).await.unwrap(), Replayed);
}

#[tokio::test]
async fn sqlite_takes_a_proof_once_per_window() {
    let db = TempDb::new("dpop");
    let store = SqliteStore::open(db.path(), Arc::new(SystemClock)).await.unwrap();
    the_contract(&store.dpop_replay()).await;
    // Another process on the file (here another store) sees the same proofs.
    let again = SqliteStore::open(db.path(), Arc::new(SystemClock)).await.unwrap();
    assert_eq!(again.dpop_replay().admit("key-b", "j1", NOW + 5, NOW + 5).await.unwrap(), Replayed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_takes_a_proof_once_across_nodes() {
    let Some(url) = pg_url("postgres_takes_a_proof_once_across_nodes") else { return };
    let schemas = Schemas::new(&url);
    let schema = schemas.fresh();
    let a = PostgresStore::with_schema(&url, &schema, Arc::new(SystemClock)).await.unwrap();
    let b = PostgresStore::with_schema(&url, &schema, Arc::new(SystemClock)).await.unwrap();
    the_contract(&a.dpop_replay()).await;
    // Node B knows node A's proofs.
    assert_eq!(b.dpop_replay().admit("key-a", "j2", NOW + 10, NOW + 10).await.unwrap(), Replayed);
    // One proof sent to both nodes at once, many times: each time exactly one takes it.
    for i in 0..20 {
        let jti = format!("race-{i}");
        let (ra, rb) = (a.dpop_replay(), b.dpop_replay());
        let (x, y) =
            tokio::join!(ra.admit("key-r", &jti, NOW, NOW + 120_000), rb.admit("key-r", &jti, NOW, NOW + 120_000));
        let fresh = [x.unwrap(), y.unwrap()].iter().filter(|v| **v == Fresh).count();
        assert_eq!(fresh, 1, "race {i}: exactly one node takes the proof");
    }
    // Long after every window closed, the next proof sweeps the dead rows.
    let later = NOW + 3_600_000;
    assert_eq!(b.dpop_replay().admit("key-z", "late", later, later + 120_000).await.unwrap(), Fresh);
    let rows: i64 = {
        use sqlx::Connection;
        let mut c = sqlx::PgConnection::connect(&url).await.unwrap();
        let q = format!("SELECT count(*) FROM \"{schema}\".conduit_dpop_jti");
        sqlx::query_scalar(sqlx::AssertSqlSafe(q)).fetch_one(&mut c).await.unwrap()
    };
    assert_eq!(rows, 1, "only the live proof is left");
}

#[tokio::test]
async fn stores_give_the_databases_replay_store() {
    assert!(Stores::open("memory").await.unwrap().dpop_replay().is_none(), "in memory: the server's own window");
    let db = TempDb::new("dpop-stores");
    let stores = Stores::open(&format!("sqlite:{}", db.path())).await.unwrap();
    let store = stores.dpop_replay().expect("the file's store");
    assert_eq!(store.admit("k", "j", NOW, NOW + 1000).await.unwrap(), Fresh);
    let direct = SqliteStore::open(db.path(), Arc::new(SystemClock)).await.unwrap().dpop_replay();
    assert_eq!(direct.admit("k", "j", NOW, NOW + 1000).await.unwrap(), Replayed, "one table");
}
