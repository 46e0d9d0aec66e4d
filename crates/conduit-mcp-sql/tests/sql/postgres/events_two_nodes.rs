//! The PostgreSQL task change log (migrations 0035, 0036) and
//! `task.status_changed` on two nodes: positions follow commit order even when
//! transactions commit out of order, both task tables feed one log, a push
//! stream on node B receives the change of a task that node A's worker
//! finished (woken through `PgNotifier`), and a poll on either node names the
//! change with the same `eventId`. Needs `DATABASE_URL`.

use crate::support;
use crate::support::numbered::head_reaches;
use crate::support::served::{
    self, Served, events_request as request, post_as_alice as post, result_as_alice as result,
};

use conduit_mcp::auth::{BearerTokens, Principal};
use conduit_mcp::clock::{Clock, SystemClock};
use conduit_mcp::ext::events::{Events, EventsConfig};
use conduit_mcp::ext::tasks::{ChangeQuery, CreateCaps, TaskRecord, TaskStore, new_task_id};
use conduit_mcp::prelude::*;
use conduit_mcp::protocol::tasks::TaskStatus;
use conduit_mcp::task::{HookError, StoreTransaction, TransactionHook, WrittenTask};
use conduit_mcp_sql::{PostgresStore, StoresOptions};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

const ALL: [TaskStatus; 5] =
    [TaskStatus::Working, TaskStatus::InputRequired, TaskStatus::Completed, TaskStatus::Failed, TaskStatus::Cancelled];

fn record(owner: &str) -> TaskRecord {
    TaskRecord::new(new_task_id(), Some(owner.into()), SystemClock.now_ms(), Some(600_000))
}

/// Holds its transaction open until the test lets it go.
struct Hold(Mutex<Option<(oneshot::Sender<()>, oneshot::Receiver<()>)>>);

#[async_trait::async_trait]
impl TransactionHook for Hold {
    async fn run(&self, _tx: &mut dyn StoreTransaction, _task: WrittenTask<'_>) -> Result<(), HookError> {
        let (inside, go) = self.0.lock().unwrap().take().expect("once");
        inside.send(()).expect("the test waits");
        go.await.map_err(|e| e.into())
    }
}

#[tokio::test]
async fn positions_follow_commit_order_across_concurrent_transactions() {
    let Some(url) = support::pg_url("positions_follow_commit_order_across_concurrent_transactions") else { return };
    let schemas = support::Schemas::new(&url);
    let store = PostgresStore::with_schema(&url, &schemas.fresh(), Arc::new(SystemClock)).await.expect("store");
    let legacy = store.legacy().await.expect("legacy store");
    let feed = store.change_feed().expect("PostgreSQL keeps a change log");
    let start = feed.head().await.expect("head");
    assert_ne!(feed.epoch(), 0);

    let before = store.create(record("bob"), CreateCaps::default()).await.expect("create");
    // Numbered once no older transaction on the server (another test's) runs.
    let head = || async { feed.head().await.expect("head") };
    head_reaches("the first create", start + 1, head).await;
    // A create (of alice: a principal's creates take turns) whose transaction stays open...
    let (inside_tx, inside) = oneshot::channel();
    let (go, go_rx) = oneshot::channel();
    let hold = Arc::new(Hold(Mutex::new(Some((inside_tx, go_rx)))));
    let slow = record("alice");
    let slow_id = slow.task_id.clone();
    let held = {
        let (store, hold) = (store.clone(), hold.clone());
        tokio::spawn(async move { store.create_with(slow, CreateCaps::default(), hold.as_ref()).await })
    };
    inside.await.expect("the hook runs inside its transaction");
    // ...while two later writes, of both tables, commit before it.
    let fast = store.create(record("bob"), CreateCaps::default()).await.expect("create");
    let old_era = legacy.create(record("bob"), CreateCaps::default()).await.expect("legacy create");
    let mid = feed.head().await.expect("head");
    let seen = feed.read(ChangeQuery::new(start, "bob", &ALL, 10)).await.expect("read");
    let ids: Vec<&str> = seen.changes.iter().map(|c| c.task_id.as_str()).collect();
    assert_eq!(ids, [before.task_id.as_str()], "what committed after the open transaction began waits for it");
    assert_eq!(seen.through, mid);
    // Committed and not numbered: the reader is told to read again by itself
    // (if the open transaction ended without a task write, no NOTIFY would).
    assert!(seen.settling, "two committed changes wait for a position");
    go.send(()).expect("release");
    held.await.expect("joined").expect("the held create commits");
    head_reaches("the three commits", mid + 3, head).await;
    // Then all three, the open one first (its transaction is older): a reader at `mid` misses nothing.
    let alice = feed.read(ChangeQuery::new(mid, "alice", &ALL, 10)).await.expect("read");
    let bob = feed.read(ChangeQuery::new(mid, "bob", &ALL, 10)).await.expect("read");
    assert_eq!(alice.changes.iter().map(|c| c.task_id.as_str()).collect::<Vec<_>>(), [slow_id.as_str()]);
    let ids: Vec<&str> = bob.changes.iter().map(|c| c.task_id.as_str()).collect();
    assert_eq!(ids, [fast.task_id.as_str(), old_era.task_id.as_str()]);
    assert!(alice.changes[0].seq > mid && alice.changes[0].seq < bob.changes[0].seq);
    assert!(!alice.settling && !bob.settling, "every committed change has its position");
}

/// One node: its endpoint and its Tasks handle; stops when dropped.
struct Node {
    served: Served,
    tasks: Tasks,
}

async fn node(url: &str, schema: &str) -> Node {
    let stores = StoresOptions::new(url).schema(schema).open().await.expect("stores");
    let tasks = stores.tasks(TasksConfig::enabled()).expect("config");
    let events = Events::new(EventsConfig::new().cursor_key([7; 32])).expect("events");
    events.task_status(&tasks);
    let server = Server::builder("events-two-nodes", "1")
        .extension(tasks.clone())
        .extension(events)
        .tool(Tool::new("job", "A task a worker finishes").handle(|_c, _a| async { Ok(TaskSpec::new()) }))
        .build()
        .expect("server");
    let http = HttpConfig::default().auth(BearerTokens::new().token("alice-token", Principal::new("alice")));
    Node { served: served::serve(server, http).await, tasks }
}

#[tokio::test]
async fn a_push_stream_on_node_b_receives_a_task_finished_on_node_a() {
    let Some(url) = support::pg_url("a_push_stream_on_node_b_receives_a_task_finished_on_node_a") else { return };
    let schemas = support::Schemas::new(&url);
    let schema = schemas.fresh();
    let a = node(&url, &schema).await;
    let b = node(&url, &schema).await;
    let poll = |cursor: Value| request(2, "events/poll", json!({ "name": "task.status_changed", "cursor": cursor }));
    let start = result(&b.served.url, &poll(Value::Null)).await["cursor"].clone();
    let mut stream = post(&b.served.url, &request(3, "events/stream", json!({ "name": "task.status_changed" })))
        .send()
        .await
        .expect("stream");
    let mut seen = String::new();
    let mut next = async |seen: &mut String, method: &str| -> Value {
        tokio::time::timeout(std::time::Duration::from_secs(10), async {
            loop {
                let found = seen
                    .split("\n\n")
                    .filter_map(|block| block.lines().find_map(|l| l.strip_prefix("data:")))
                    .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
                    .find(|m| m["method"] == method);
                if let Some(m) = found {
                    return m;
                }
                let chunk = stream.chunk().await.expect("read").expect("the stream is open");
                seen.push_str(&String::from_utf8_lossy(&chunk));
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no {method} within 10 s: {seen}"))
    };
    next(&mut seen, "notifications/events/active").await;

    let created = result(&a.served.url, &request(1, "tools/call", json!({ "name": "job" }))).await;
    let id = created["taskId"].as_str().expect("a task").to_owned();
    a.tasks.complete(&id, CallToolResult::text("done"), None).await.expect("A's worker completes it");
    let pushed = next(&mut seen, "notifications/events/event").await;
    assert_eq!(pushed["params"]["data"]["taskId"], json!(id));
    assert_eq!(pushed["params"]["data"]["status"], "completed");

    // Either node names the change alike.
    let on_a = result(&a.served.url, &poll(start.clone())).await;
    let on_b = result(&b.served.url, &poll(start)).await;
    assert_eq!(on_a["events"], on_b["events"]);
    assert_eq!(on_a["events"][0]["eventId"], pushed["params"]["eventId"]);
    drop(b.tasks.clone());
}
