//! The session store contract on `SqliteSessionStore` (a WAL file, and
//! `:memory:`), and sessions that outlive a reopen of the file.

use crate::support;

use conduit_mcp::clock::SystemClock;
use conduit_mcp::session::{SessionLimits, SessionRecord, SessionStore, new_session_id};
use conduit_mcp_sql::SqliteStore;
use std::sync::{Arc, Mutex};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_file_session_store_meets_the_contract() {
    let files = Arc::new(Mutex::new(Vec::new()));
    let made = files.clone();
    conduit_mcp::testing::session_store_contract(move || {
        let db = support::TempDb::new("sessions");
        let path = db.path().to_owned();
        made.lock().unwrap().push(db);
        async move { SqliteStore::open(&path, Arc::new(SystemClock)).await.expect("open").sessions() }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_memory_session_store_meets_the_contract() {
    conduit_mcp::testing::session_store_contract(|| async {
        SqliteStore::open(":memory:", Arc::new(SystemClock)).await.expect("open").sessions()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_outlives_a_reopen_and_its_id_is_not_in_the_file() {
    let db = support::TempDb::new("sessions-reopen");
    let id = new_session_id();
    let t0 = 1_800_000_000_000;
    {
        let store = SqliteStore::open(db.path(), Arc::new(SystemClock)).await.expect("open");
        let mut r = SessionRecord::new(id.clone(), Some("alice".into()), "2025-11-25", t0);
        r.client_info = serde_json::json!({"name": "probe", "version": "1"}).to_string();
        store.sessions().create(r, SessionLimits::default()).await.expect("create");
        store.close().await;
    }
    let bytes = std::fs::read(db.path()).expect("read the file");
    assert!(!bytes.windows(id.len()).any(|w| w == id.as_bytes()), "the session id is not stored in clear");
    let store = SqliteStore::open(db.path(), Arc::new(SystemClock)).await.expect("reopen");
    let got = store.sessions().touch(&id, Some("alice"), t0 + 1, 60_000).await.expect("still there");
    let info: serde_json::Value = serde_json::from_str(&got.client_info).expect("clientInfo is JSON");
    assert_eq!(info["name"], "probe");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_sessions_in_use_are_not_evicted_and_a_client_gets_a_quarter() {
    let db = support::TempDb::new("sessions-in-use");
    let store = SqliteStore::open(db.path(), Arc::new(SystemClock)).await.expect("open");
    support::in_use::an_open_stream_keeps_its_session(store.sessions()).await;
}
