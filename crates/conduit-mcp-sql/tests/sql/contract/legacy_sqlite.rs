//! The legacy store contract suite on `SqliteLegacyStore` (a WAL file, and
//! `:memory:`), and cursors honoured across two processes' stores on one file.

use crate::support;

use conduit_mcp::clock::{Clock, ManualClock};
use conduit_mcp::ext::tasks::legacy_store::LegacyTaskStore;
use conduit_mcp::ext::tasks::{CreateCaps, TaskRecord, TaskStore, new_task_id};
use conduit_mcp::testing::{ContractOptions, legacy_store_contract};
use conduit_mcp_sql::SqliteStore;
use std::sync::{Arc, Mutex};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_file_legacy_store_meets_the_contract() {
    let files = Arc::new(Mutex::new(Vec::new()));
    let made = files.clone();
    legacy_store_contract(
        move |clock| {
            let db = support::TempDb::new("legacy-contract");
            let path = db.path().to_owned();
            made.lock().unwrap().push(db);
            async move { SqliteStore::open(&path, clock).await.expect("open").legacy().await.expect("legacy") }
        },
        ContractOptions::race(support::race_tasks(2_000), 64),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_memory_legacy_store_meets_the_contract() {
    legacy_store_contract(
        |clock| async move { SqliteStore::open(":memory:", clock).await.expect("open").legacy().await.expect("legacy") },
        ContractOptions::race(500, 32),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cursor_from_one_store_pages_on_another_on_the_same_file_and_the_stores_stay_apart() {
    let db = support::TempDb::new("legacy-cursor");
    let clock = ManualClock::new(1_800_000_000_000);
    let a = SqliteStore::open(db.path(), Arc::new(clock.clone())).await.expect("open a");
    let b = SqliteStore::open(db.path(), Arc::new(clock.clone())).await.expect("open b");
    let (la, lb) = (a.legacy().await.expect("legacy a"), b.legacy().await.expect("legacy b"));
    let mut ids = Vec::new();
    for _ in 0..3 {
        clock.advance(1);
        let r = TaskRecord::new(new_task_id(), Some("alice".into()), clock.now_ms(), Some(60_000));
        ids.push(r.task_id.clone());
        la.create(r, CreateCaps::default()).await.expect("create");
    }
    let first = la.list(Some("alice"), None, 2).await.expect("list on a");
    let rest = lb.list(Some("alice"), first.next_cursor.as_deref(), 2).await.expect("the cursor pages on b");
    assert_eq!(rest.tasks.iter().map(|t| t.task_id.clone()).collect::<Vec<_>>(), ids[2..].to_vec());
    assert!(b.get(&ids[0], conduit_mcp::ext::tasks::Owner::Any).await.is_err(), "not in the modern table");
    let other = support::TempDb::new("legacy-cursor-other");
    let c = SqliteStore::open(other.path(), Arc::new(clock.clone())).await.expect("open c").legacy().await.expect("c");
    assert_eq!(
        c.list(Some("alice"), first.next_cursor.as_deref(), 2).await,
        Err(conduit_mcp::task::StoreError::InvalidCursor),
        "another database's key refuses the cursor"
    );
}
