//! The legacy store contract suite on `PostgresLegacyStore` (each store of
//! the suite in a schema of its own), a cursor issued on one node paged on
//! another, and `tasks/result`'s wait on one node woken by a completion on
//! another through `PgNotifier`. Needs `DATABASE_URL`.

use crate::support;

use conduit_mcp::clock::{Clock, ManualClock, SystemClock};
use conduit_mcp::ext::tasks::legacy_store::{LegacyTaskStore, LegacyTasks};
use conduit_mcp::ext::tasks::{CreateCaps, NotifierConfig, Owner, TaskRecord, TaskStore, TasksConfig, new_task_id};
use conduit_mcp::protocol::tasks::TaskStatus;
use conduit_mcp::protocol::tools::CallToolResult;
use conduit_mcp::testing::{ContractOptions, legacy_store_contract};
use conduit_mcp_sql::{PgNotifier, PostgresStore};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_legacy_store_meets_the_contract() {
    let Some(url) = support::pg_url("postgres_legacy_store_meets_the_contract") else { return };
    let schemas = support::Schemas::new(&url);
    legacy_store_contract(
        |clock| {
            let (url, schema) = (url.clone(), schemas.fresh());
            async move {
                let store = PostgresStore::with_schema(&url, &schema, clock).await.expect("connect");
                store.legacy().await.expect("legacy")
            }
        },
        ContractOptions::race(support::race_tasks(1_000), 64),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cursor_issued_on_one_node_pages_on_another() {
    let Some(url) = support::pg_url("a_cursor_issued_on_one_node_pages_on_another") else { return };
    let schemas = support::Schemas::new(&url);
    let schema = schemas.fresh();
    let clock = ManualClock::new(1_800_000_000_000);
    let a = PostgresStore::with_schema(&url, &schema, Arc::new(clock.clone())).await.expect("a");
    let b = PostgresStore::with_schema(&url, &schema, Arc::new(clock.clone())).await.expect("b");
    let (la, lb) = (a.legacy().await.expect("legacy a"), b.legacy().await.expect("legacy b"));
    let mut ids = Vec::new();
    for _ in 0..5 {
        clock.advance(1);
        let r = TaskRecord::new(new_task_id(), Some("alice".into()), clock.now_ms(), Some(60_000));
        ids.push(r.task_id.clone());
        la.create(r, CreateCaps::default()).await.expect("create on a");
    }
    let first = la.list(Some("alice"), None, 2).await.expect("list on a");
    let second = lb.list(Some("alice"), first.next_cursor.as_deref(), 2).await.expect("the cursor pages on b");
    let third = la.list(Some("alice"), second.next_cursor.as_deref(), 2).await.expect("and back on a");
    let seen: Vec<String> = [first.tasks, second.tasks, third.tasks].concat().into_iter().map(|t| t.task_id).collect();
    assert_eq!(seen, ids);
    assert_eq!(third.next_cursor, None);
    assert!(b.get(&ids[0], Owner::Any).await.is_err(), "legacy tasks are not in the modern table");
}

/// A node with a legacy runtime on the shared schema, its changes published on `channel`.
async fn node(url: &str, schema: &str, channel: &str) -> LegacyTasks {
    let clock = Arc::new(SystemClock);
    let store = PostgresStore::with_schema(url, schema, clock.clone()).await.expect("connect");
    let notifier = PgNotifier::connect(url, channel).await.expect("notifier");
    let config = TasksConfig::enabled().notifier(NotifierConfig::Custom(Arc::new(notifier.clone())));
    let legacy =
        LegacyTasks::with_store(config, Arc::new(store.legacy().await.expect("legacy")), clock).expect("config");
    notifier.attach(&legacy);
    legacy
}

type Waiter = tokio::task::JoinHandle<Result<TaskRecord, conduit_mcp::task::StoreError>>;

/// A `wait` on `node` for task `id` until `until`, and how many times it has read the task.
fn wait_on(
    node: &LegacyTasks,
    id: &str,
    until: impl Fn(&TaskRecord) -> bool + Send + Sync + 'static,
) -> (Waiter, Arc<AtomicUsize>) {
    let reads = Arc::new(AtomicUsize::new(0));
    let (node, id, counted) = (node.clone(), id.to_owned(), reads.clone());
    let waiter = tokio::spawn(async move {
        node.wait(&id, Owner::Is(Some("alice")), move |r| {
            counted.fetch_add(1, Ordering::SeqCst);
            until(r)
        })
        .await
    });
    (waiter, reads)
}

/// Returns once the waiter has read the task once (so a later change can reach it only by a wake-up).
async fn first_read(reads: &AtomicUsize) {
    while reads.load(Ordering::SeqCst) == 0 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_waiting_on_one_node_wakes_when_another_node_completes_the_task() {
    let Some(url) = support::pg_url("a_result_waiting_on_one_node_wakes_when_another_node_completes_the_task") else {
        return;
    };
    let schemas = support::Schemas::new(&url);
    let schema = schemas.fresh();
    let channel = format!("conduit_legacy_{:08x}", rand::random::<u32>());
    let (a, b) = (node(&url, &schema, &channel).await, node(&url, &schema, &channel).await);
    let rec = TaskRecord::new(new_task_id(), Some("alice".into()), a.store().now_ms(), Some(600_000));
    let id = a.create(rec).await.expect("create on a").task_id;
    // b's listener is up once a wait on b returns for a change made on a
    // (well before the 10 s backstop); until then a's notifications may go unheard.
    let mut heard = false;
    for n in 0..50 {
        let ping = format!("ping {n}");
        let (probe, reads) = wait_on(&b, &id, move |r| r.status_message.as_deref() == Some(ping.as_str()));
        first_read(&reads).await;
        a.progress(&id, format!("ping {n}")).await.expect("progress on a");
        if tokio::time::timeout(Duration::from_millis(200), probe).await.is_ok() {
            heard = true;
            break;
        }
    }
    assert!(heard, "b hears a's changes");
    // The waiter on b: it has read the task (working) before a completes it.
    let (waiter, reads) = wait_on(&b, &id, |r| r.is_terminal());
    first_read(&reads).await;
    assert!(!waiter.is_finished(), "a working task keeps tasks/result waiting");
    a.complete(&id, CallToolResult::text("done on a"), None).await.expect("complete on a");
    // The waiter's backstop re-read is 10 s away: only the notifier wakes it sooner.
    let done = tokio::time::timeout(Duration::from_secs(5), waiter).await.expect("woken through PgNotifier");
    let done = done.expect("join").expect("wait");
    assert_eq!(done.status, TaskStatus::Completed);
    assert_eq!(done.result.expect("result")["content"][0]["text"], "done on a");
}
