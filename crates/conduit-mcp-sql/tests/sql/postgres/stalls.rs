//! `PostgresStore` when the database's connections hang instead of being
//! refused (a network that drops packets, a stopped host): every store call
//! fails within the operation timeout and closes its connection, a request
//! is answered `-32603 "Task store unavailable"` long before a client gives
//! up, and the end of a task's work that met the stall lands once the
//! database answers again. Starting a store logs no PostgreSQL notice at
//! INFO. Needs `DATABASE_URL`; the stall is a proxy in front of it
//! (`support/stall.rs`).

use crate::support;

use conduit_mcp::clock::{Clock, SystemClock};
use conduit_mcp::ext::tasks::{
    CreateCaps, ListenNotifier, Notifier, NotifierConfig, Owner, TaskRecord, TaskStore, Tasks, TasksConfig, new_task_id,
};
use conduit_mcp::prelude::*;
use conduit_mcp::protocol::tasks::TaskStatus;
use conduit_mcp::task::StoreError;
use conduit_mcp_sql::{PostgresOptions, PostgresStore};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::stall::{StallProxy, upstream_of};
use tokio::sync::{Notify, oneshot};

/// The operation timeout the stores below run with.
const OP_TIMEOUT: Duration = Duration::from_millis(400);

/// Fails the test instead of hanging when `what` never happens.
async fn within<F: std::future::Future>(what: &str, fut: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(20), fut).await.unwrap_or_else(|_| panic!("timed out: {what}"))
}

async fn store_behind(proxy: &StallProxy, url: &str, schema: &str) -> PostgresStore {
    PostgresOptions::new(proxy.url_for(url))
        .schema(schema)
        .max_connections(2)
        .operation_timeout(OP_TIMEOUT)
        .connect(Arc::new(SystemClock))
        .await
        .expect("connect through the proxy")
}

fn record() -> TaskRecord {
    TaskRecord::new(new_task_id(), Some("alice".into()), SystemClock.now_ms(), Some(3_600_000))
}

/// Asserts `r` is the backend error of a call that ran out of time, and that
/// it came within a few operation timeouts of `started`.
#[track_caller]
fn assert_timed_out<T: std::fmt::Debug>(r: Result<T, StoreError>, started: Instant) {
    match r {
        Err(StoreError::Backend { message, .. }) => {
            assert!(message.contains("did not answer in time"), "{message}")
        }
        other => panic!("expected a timed-out backend error, got {other:?}"),
    }
    assert!(started.elapsed() < OP_TIMEOUT * 4, "answered after {:?}", started.elapsed());
}

#[tokio::test]
async fn store_calls_fail_within_the_operation_timeout_while_connections_hang() {
    let Some(url) = support::pg_url("store_calls_fail_within_the_operation_timeout_while_connections_hang") else {
        return;
    };
    let schemas = support::Schemas::new(&url);
    let schema = schemas.fresh();
    let proxy = StallProxy::start(upstream_of(&url)).await;
    let store = store_behind(&proxy, &url, &schema).await;
    let known = record();
    store.create(known.clone(), CreateCaps::default()).await.expect("create before the stall");

    proxy.stall();
    let t = Instant::now();
    assert_timed_out(within("a read", store.get(&known.task_id, Owner::Any)).await, t);
    let t = Instant::now();
    assert_timed_out(within("a create", store.create(record(), CreateCaps::default())).await, t);
    let t = Instant::now();
    let same = |r: &TaskRecord| Ok(r.clone());
    let update = store.update(&known.task_id, Owner::Any, &same);
    assert_timed_out(within("an update", update).await, t);
    // Every connection the pool holds is hung now; a caller still gets its
    // answer in time (waiting for a connection counts against the deadline).
    let calls = (0..6).map(|_| store.get(&known.task_id, Owner::Any));
    let t = Instant::now();
    for r in within("six reads at once", futures_util::future::join_all(calls)).await {
        assert_timed_out(r, t);
    }

    proxy.resume();
    // The hung connections were closed, not kept: the next calls open new ones.
    let read = within("a read after the stall", store.get(&known.task_id, Owner::Any)).await.expect("read");
    assert_eq!(read.task_id, known.task_id);
    within("a create after the stall", store.create(record(), CreateCaps::default())).await.expect("create");
}

/// Each task id and status a notifier saw, in order.
type Statuses = Mutex<Vec<(String, TaskStatus)>>;

/// A notifier that records each status a task passes through and wakes waiters.
#[derive(Clone, Default)]
struct Seen(Arc<(Statuses, Notify)>);

impl Notifier for Seen {
    fn task_changed(&self, task: &TaskRecord, listen: &ListenNotifier) {
        listen.task_changed(task);
        self.0.0.lock().unwrap().push((task.task_id.clone(), task.status));
        self.0.1.notify_waiters();
    }
}

impl Seen {
    async fn until(&self, id: &str, status: TaskStatus) {
        loop {
            let woken = self.0.1.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            if self.0.0.lock().unwrap().iter().any(|(t, s)| t == id && *s == status) {
                return;
            }
            woken.await;
        }
    }
}

fn call(id: u64, tool: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "name": tool, "arguments": {},
        "_meta": { "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                   "io.modelcontextprotocol/clientCapabilities":
                       { "extensions": { "io.modelcontextprotocol/tasks": {} } } } } })
}

async fn post(url: &str, body: &Value) -> Value {
    let r = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", body["params"]["name"].as_str().unwrap_or_default())
        .timeout(Duration::from_secs(30))
        .body(body.to_string())
        .send()
        .await
        .expect("answered before the client's own 30 s timeout");
    r.json().await.expect("a JSON answer")
}

#[tokio::test]
async fn a_request_meets_the_stall_with_the_store_error_and_the_work_lands_after_it() {
    let Some(url) = support::pg_url("a_request_meets_the_stall_with_the_store_error_and_the_work_lands_after_it")
    else {
        return;
    };
    let schemas = support::Schemas::new(&url);
    let schema = schemas.fresh();
    let proxy = StallProxy::start(upstream_of(&url)).await;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let store = store_behind(&proxy, &url, &schema).await;
    let seen = Seen::default();
    let config = TasksConfig::enabled().store(Arc::new(store)).notifier(NotifierConfig::Custom(Arc::new(seen.clone())));
    let tasks = Tasks::with_clock(config, clock.clone()).expect("tasks");
    // The work of `slow` ends when the test says so.
    let (finish_tx, finish_rx) = oneshot::channel::<()>();
    let finish = Arc::new(Mutex::new(Some(finish_rx)));
    let server = Server::builder("stalls", "1.0.0")
        .clock(clock)
        .extension(tasks.clone())
        .tool(Tool::new("slow", "Ends when told").handle(move |_ctx, _args| {
            let finish = finish.lock().unwrap().take();
            async move {
                Ok(ToolOutput::Task(TaskSpec::new().spawn(move |_task| async move {
                    if let Some(f) = finish {
                        let _ = f.await;
                    }
                    Ok(CallToolResult::text("done"))
                })))
            }
        }))
        .build()
        .expect("server");
    let bound = conduit_mcp::transport::http::bind("127.0.0.1:0".parse().expect("addr")).await.expect("bind");
    let endpoint = format!("http://{}/mcp", bound.local_addr());
    let stop = Arc::new(Notify::new());
    let stopped = stop.clone();
    tokio::spawn(
        async move { bound.serve(server, HttpConfig::default(), async move { stopped.notified().await }).await },
    );

    let created = post(&endpoint, &call(1, "slow")).await;
    let task_id = created["result"]["taskId"].as_str().unwrap_or_else(|| panic!("a task: {created}")).to_owned();

    proxy.stall();
    let t = Instant::now();
    let refused = post(&endpoint, &call(2, "slow")).await;
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    assert_eq!(refused["error"]["message"], "Task store unavailable", "{refused}");
    assert!(t.elapsed() < OP_TIMEOUT * 4, "answered after {:?}", t.elapsed());
    // The work ends during the stall: its final write fails and is retried.
    finish_tx.send(()).expect("the work is waiting");

    proxy.resume();
    within("the completion written after the stall", seen.until(&task_id, TaskStatus::Completed)).await;
    assert_eq!(tasks.status(&task_id).await.expect("the task").status, TaskStatus::Completed);
    stop.notify_one();
}

/// Counts events of the PostgreSQL notice target at INFO or above.
#[derive(Clone, Default)]
struct Notices(Arc<Mutex<Vec<String>>>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Notices {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: tracing_subscriber::layer::Context<'_, S>) {
        let m = event.metadata();
        if m.target().starts_with("sqlx::postgres::notice") && *m.level() <= tracing::Level::INFO {
            self.0.lock().unwrap().push(format!("{} {}", m.level(), m.target()));
        }
    }
}

#[tokio::test(flavor = "current_thread")]
async fn opening_an_existing_store_logs_no_notice() {
    use tracing_subscriber::layer::SubscriberExt;
    let Some(url) = support::pg_url("opening_an_existing_store_logs_no_notice") else { return };
    let schemas = support::Schemas::new(&url);
    let schema = schemas.fresh();
    let notices = Notices::default();
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(notices.clone()));
    for _ in 0..2 {
        let store = PostgresStore::with_schema(&url, &schema, Arc::new(SystemClock)).await.expect("open");
        store.close().await;
    }
    assert_eq!(*notices.0.lock().unwrap(), Vec::<String>::new());
}
