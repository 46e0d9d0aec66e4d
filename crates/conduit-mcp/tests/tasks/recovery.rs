//! Work leases: when the node running a task's work stops renewing its lease,
//! another node fails the task as interrupted, or restarts resumable work.
//! Two `Tasks` handles on one store play the two nodes; time is a `ManualClock`.

use crate::log_capture;

use conduit_mcp::clock::{Clock, ManualClock};
use conduit_mcp::ext::tasks::{CreateCaps, MemoryStore, TaskStore, Tasks, TasksConfig, recover, recover_own};
use conduit_mcp::prelude::*;
use conduit_mcp::protocol::RequestId;
use conduit_mcp::protocol::jsonrpc::{Message, Request};
use conduit_mcp::protocol::tasks::TaskStatus;
use conduit_mcp::server::RequestEnv;
use log_capture::Events;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tracing_subscriber::layer::SubscriberExt;

const LEASE: Duration = Duration::from_secs(30);

fn node(name: &str, store: &Arc<MemoryStore>, clock: &ManualClock) -> (Tasks, Server) {
    let cfg = TasksConfig::enabled().store(store.clone()).node_id(name).lease(LEASE);
    let tasks = Tasks::with_clock(cfg, Arc::new(clock.clone())).unwrap();
    tasks.resumable(
        "count",
        |_task, args| async move { Ok(CallToolResult::text(format!("counted to {}", args["to"]))) },
    );
    let server = Server::builder(name, "1")
        .extension(tasks.clone())
        .tool(Tool::new("stuck", "work that never ends").handle(|_c, _a| async {
            Ok(TaskSpec::new().spawn(|task| async move {
                task.cancelled().await;
                Err(RpcError::internal("cancelled"))
            }))
        }))
        .tool(
            Tool::new("count", "resumable work")
                .handle(|_c, _a| async { Ok(TaskSpec::new().spawn_resumable("count", json!({ "to": 3 }))) }),
        )
        .tool(
            Tool::new("unknown_work", "names work nobody registered")
                .handle(|_c, _a| async { Ok(TaskSpec::new().spawn_resumable("nope", json!({}))) }),
        )
        .build()
        .unwrap();
    (tasks, server)
}

async fn call(server: &Server, tool: &str) -> Result<Value, conduit_mcp::protocol::RpcError> {
    let req = Request {
        id: RequestId::Number(1),
        method: "tools/call".into(),
        params: Some(json!({ "name": tool, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": { "extensions": { "io.modelcontextprotocol/tasks": {} } }
        }})),
    };
    match server.handle_request(req, RequestEnv::default()).await {
        Message::Result { result, .. } => Ok(result),
        Message::Error { error, .. } => Err(error),
        other => panic!("unexpected {other:?}"),
    }
}

async fn wait_terminal(tasks: &Tasks, id: &str) -> conduit_mcp::ext::tasks::TaskRecord {
    let notify_timeout = Duration::from_secs(10);
    tokio::time::timeout(notify_timeout, async {
        loop {
            let r = tasks.status(id).await.unwrap();
            if r.is_terminal() {
                return r;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the task reached a terminal state")
}

#[tokio::test]
async fn a_lapsed_lease_fails_the_task_as_interrupted() {
    let clock = ManualClock::new(1_800_000_000_000);
    let store = Arc::new(MemoryStore::with_clock(Arc::new(clock.clone())));
    let (a, server_a) = node("node-a", &store, &clock);
    let (b, _server_b) = node("node-b", &store, &clock);
    let id = call(&server_a, "stuck").await.unwrap()["taskId"].as_str().unwrap().to_owned();
    let rec = a.status(&id).await.unwrap();
    assert_eq!(rec.lease.as_ref().map(|l| l.node.as_str()), Some("node-a"));
    // Within the lease nothing happens.
    clock.advance(LEASE.as_millis() as u64);
    assert_eq!(recover(&b).await.unwrap().failed, 0);
    // Node A stopped renewing: B fails the task.
    clock.advance(1);
    let r = recover(&b).await.unwrap();
    assert_eq!((r.failed, r.resumed), (1, 0));
    let rec = b.status(&id).await.unwrap();
    assert_eq!(rec.status, TaskStatus::Failed);
    let err = rec.error.unwrap();
    assert_eq!(
        (err.code, err.message.as_str()),
        (-32603, "interrupted: the server running this task stopped renewing its lease"),
        "node A may only have lost its lease: the message does not claim it stopped"
    );
    assert_eq!(recover(&b).await.unwrap().failed, 0, "recovered once");
}

#[tokio::test]
async fn renewed_leases_hold() {
    let clock = ManualClock::new(1_800_000_000_000);
    let store = Arc::new(MemoryStore::with_clock(Arc::new(clock.clone())));
    let (a, server_a) = node("node-a", &store, &clock);
    let (b, _server_b) = node("node-b", &store, &clock);
    let id = call(&server_a, "stuck").await.unwrap()["taskId"].as_str().unwrap().to_owned();
    for _ in 0..5 {
        clock.advance(LEASE.as_millis() as u64 / 2);
        let until = clock.now_ms() + LEASE.as_millis() as u64;
        assert_eq!(store.renew_leases(a.node_id(), until).await.unwrap(), 1);
        assert_eq!(recover(&b).await.unwrap(), Default::default());
    }
    assert_eq!(b.status(&id).await.unwrap().status, TaskStatus::Working);
}

#[tokio::test]
async fn resumable_work_restarts_on_a_live_node() {
    let clock = ManualClock::new(1_800_000_000_000);
    let store = Arc::new(MemoryStore::with_clock(Arc::new(clock.clone())));
    // Node A registers the work but is "dead": it never ran it (its tasks are only in the store).
    let (_a, server_a) = node("node-a", &store, &clock);
    let (b, _server_b) = node("node-b", &store, &clock);
    let created = call(&server_a, "count").await.unwrap();
    let id = created["taskId"].as_str().unwrap().to_owned();
    let rec = wait_terminal(&b, &id).await;
    assert_eq!(rec.status, TaskStatus::Completed, "node A ran it to completion");
    // A second one, with node A gone before it ran: simulate by a lapsed lease on a live task.
    let mut orphan = b.status(&id).await.unwrap();
    orphan.task_id = conduit_mcp::ext::tasks::new_task_id();
    orphan.status = TaskStatus::Working;
    orphan.result = None;
    orphan.terminal_at_ms = None;
    orphan.lease = Some(conduit_mcp::ext::tasks::Lease { node: "node-dead".into(), expires_at_ms: clock.now_ms() });
    store.create(orphan.clone(), CreateCaps::default()).await.unwrap();
    clock.advance(1);
    let r = recover(&b).await.unwrap();
    assert_eq!((r.resumed, r.failed), (1, 0));
    let rec = wait_terminal(&b, &orphan.task_id).await;
    assert_eq!(rec.status, TaskStatus::Completed);
    assert_eq!(rec.result.unwrap()["content"][0]["text"], "counted to 3");
}

#[tokio::test]
async fn a_restarted_node_recovers_its_own_tasks_at_once() {
    let clock = ManualClock::new(1_800_000_000_000);
    let store = Arc::new(MemoryStore::with_clock(Arc::new(clock.clone())));
    let (_old, server_old) = node("node-a", &store, &clock);
    let id = call(&server_old, "stuck").await.unwrap()["taskId"].as_str().unwrap().to_owned();
    // The same node id comes back (a restart): no need to wait for the lease.
    clock.advance(1);
    let (again, server) = node("node-a", &store, &clock);
    // Work the new process starts itself is never mistaken for the old process's.
    let fresh = call(&server, "stuck").await.unwrap()["taskId"].as_str().unwrap().to_owned();
    let r = recover_own(&again).await.unwrap();
    assert_eq!(r.failed, 1);
    assert_eq!(again.status(&id).await.unwrap().status, TaskStatus::Failed);
    assert_eq!(again.status(&fresh).await.unwrap().status, TaskStatus::Working);
}

#[tokio::test]
async fn unknown_resumable_work_is_an_invalid_attribute() {
    let clock = ManualClock::new(1_800_000_000_000);
    let store = Arc::new(MemoryStore::with_clock(Arc::new(clock.clone())));
    let (_a, server) = node("node-a", &store, &clock);
    let e = call(&server, "unknown_work").await.unwrap_err();
    assert_eq!(e.code, -32603);
    assert!(store.is_empty(), "no task was created");
}

#[tokio::test(flavor = "current_thread")]
async fn a_node_that_lost_its_lease_says_its_result_was_dropped() {
    let events = Events::default();
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(events.clone()));
    let clock = ManualClock::new(1_800_000_000_000);
    let store = Arc::new(MemoryStore::with_clock(Arc::new(clock.clone())));
    let (a, _) = node("node-a", &store, &clock);
    let (b, _) = node("node-b", &store, &clock);
    // Node A's work, held until the test lets it finish.
    let gate = Arc::new(Notify::new());
    let g = gate.clone();
    let server_a = Server::builder("node-a", "1")
        .extension(a.clone())
        .tool(Tool::new("gated", "finishes when the gate opens").handle(move |_c, _a| {
            let g = g.clone();
            async move {
                Ok(TaskSpec::new().spawn(move |task| async move {
                    task.progress("step 1 of 2").await.ok();
                    g.notified().await;
                    Ok(CallToolResult::text("A's result"))
                }))
            }
        }))
        .build()
        .unwrap();
    let id = call(&server_a, "gated").await.unwrap()["taskId"].as_str().unwrap().to_owned();
    // A stops renewing (a stall, a lost store) past its lease: B takes the task over.
    clock.advance(LEASE.as_millis() as u64 + 1);
    assert_eq!(recover(&b).await.unwrap().failed, 1);
    gate.notify_one();
    let rec = wait_terminal(&a, &id).await;
    assert_eq!(rec.status, TaskStatus::Failed, "B's outcome stands");
    let dropped = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let Some(m) = events.messages().into_iter().find(|(_, m)| m.contains("result was dropped")) {
                return m;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("node A logs what became of its result");
    assert_eq!(dropped.0, "WARN", "{dropped:?}");
    assert!(
        !events.messages().iter().any(|(_, m)| m.starts_with("recorded the end")),
        "A never claims it recorded the result: {:?}",
        events.messages()
    );
}
