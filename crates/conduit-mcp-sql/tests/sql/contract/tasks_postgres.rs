//! The store contract suite on `PostgresStore`, including the 64-writer race.
//! Needs `DATABASE_URL`; each store of the suite gets a schema of its own.
//!
//! The race runs at the suite's full size, 10 000 tasks by 64 writers. Every
//! `create` of its setup is a separately committed insert and every one of its
//! operations a round trip to the server, so it is the slowest test here (about
//! a minute on a quiet 2-core machine that shares its cores with PostgreSQL);
//! `CONDUIT_RACE_TASKS=1000` shortens it for a quick local run.

use crate::support;

use conduit_mcp::testing::{ContractOptions, store_contract};
use conduit_mcp_sql::PostgresStore;
use std::time::Instant;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_store_meets_the_contract() {
    let Some(url) = support::pg_url("postgres_store_meets_the_contract") else { return };
    let schemas = support::Schemas::new(&url);
    let tasks = support::race_tasks(10_000);
    let t = Instant::now();
    store_contract(
        |clock| {
            let (url, schema) = (url.clone(), schemas.fresh());
            async move { PostgresStore::with_schema(&url, &schema, clock).await.expect("connect") }
        },
        ContractOptions::race(tasks, 64),
    )
    .await;
    eprintln!("postgres contract suite, race {tasks} tasks x 64 writers: {:?}", t.elapsed());
}
