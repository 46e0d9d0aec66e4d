//! The store contract suite on `SqliteStore`: on a WAL file with the full
//! 64-writer race over 10 000 tasks (`CONDUIT_RACE_TASKS` changes it), and on
//! `:memory:` — one connection for everything — with a race over 1 000.

use crate::support;

use conduit_mcp::testing::{ContractOptions, store_contract};
use conduit_mcp_sql::SqliteStore;
use std::sync::{Arc, Mutex};
use std::time::Instant;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_file_store_meets_the_contract() {
    let files = Arc::new(Mutex::new(Vec::new()));
    let tasks = support::race_tasks(10_000);
    let t = Instant::now();
    let made = files.clone();
    store_contract(
        move |clock| {
            let db = support::TempDb::new("contract");
            let path = db.path().to_owned();
            made.lock().unwrap().push(db);
            async move { SqliteStore::open(&path, clock).await.expect("open") }
        },
        ContractOptions::race(tasks, 64),
    )
    .await;
    eprintln!("sqlite (WAL file) contract suite, race {tasks} tasks x 64 writers: {:?}", t.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_memory_store_meets_the_contract() {
    let t = Instant::now();
    store_contract(
        |clock| async move { SqliteStore::open(":memory:", clock).await.expect("open :memory:") },
        ContractOptions::race(1_000, 64),
    )
    .await;
    eprintln!("sqlite (:memory:) contract suite, race 1000 tasks x 64 writers: {:?}", t.elapsed());
}
