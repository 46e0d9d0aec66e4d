//! The janitor's sweep event (INFO only when it removed something),
//! unlimited-TTL eviction, and notifiers that panic or replace the default.

use crate::log_capture;

use conduit_mcp::clock::ManualClock;
use conduit_mcp::ext::tasks::{
    JanitorConfig, ListenNotifier, Notifier, NotifierConfig, TaskRecord, Tasks, TasksConfig, sweep,
};
use conduit_mcp::prelude::*;
use conduit_mcp::protocol::RequestId;
use conduit_mcp::protocol::jsonrpc::{Message, Request};
use conduit_mcp::protocol::tasks::TaskStatus;
use conduit_mcp::server::RequestEnv;
use log_capture::Events;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tracing_subscriber::layer::SubscriberExt;

async fn call(server: &Server, id: i64, tool: &str) -> Value {
    let req = Request {
        id: RequestId::Number(id),
        method: "tools/call".into(),
        params: Some(json!({ "name": tool, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": { "extensions": { "io.modelcontextprotocol/tasks": {} } }
        }})),
    };
    match server.handle_request(req, RequestEnv::default()).await {
        Message::Result { result, .. } => result,
        other => panic!("tools/call failed: {other:?}"),
    }
}

/// A server driven through `handle_request` directly, so it is started by hand (as a transport would).
fn server_with(tasks: &Tasks) -> Server {
    let server = Server::builder("j", "1")
        .extension(tasks.clone())
        .tool(Tool::new("short", "1 s").handle(|_c, _a| async { Ok(TaskSpec::new().ttl(Duration::from_secs(1))) }))
        .tool(Tool::new("forever", "no ttl").handle(|_c, _a| async { Ok(TaskSpec::new().unlimited_ttl()) }))
        .build()
        .unwrap();
    server.start();
    server
}

#[tokio::test(flavor = "current_thread")]
async fn sweeps_emit_the_cleanup_event_and_evict_old_terminal_unlimited_tasks() {
    let events = Events::default();
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(events.clone()));
    let clock = ManualClock::new(1_800_000_000_000);
    let cfg = TasksConfig::enabled()
        .janitor(JanitorConfig::Every { interval: Duration::from_secs(60), ttl: Duration::from_secs(3600) });
    let tasks = Tasks::with_clock(cfg, Arc::new(clock.clone())).unwrap();
    let server = server_with(&tasks);
    for i in 0..3 {
        call(&server, i, "short").await;
    }
    let forever = call(&server, 9, "forever").await["taskId"].as_str().unwrap().to_owned();
    assert!(call(&server, 10, "forever").await["ttlMs"].is_null());
    clock.advance(1_001);
    assert_eq!(sweep(&tasks).await.unwrap(), 3);
    tasks.complete(&forever, CallToolResult::text("done"), None).await.unwrap();
    clock.advance(3_600_000);
    assert_eq!(sweep(&tasks).await.unwrap(), 0, "terminal for exactly the ttl: kept");
    clock.advance(1);
    assert_eq!(sweep(&tasks).await.unwrap(), 1, "terminal and older than the ttl: evicted");
    assert!(tasks.status(&forever).await.is_err());
    let evs = events.0.lock().unwrap();
    let cleanups: Vec<_> = evs.iter().filter(|(t, _)| t == "conduit_mcp::ext_tasks::cleanup").collect();
    assert_eq!(cleanups.len(), 3);
    let f = &cleanups[0].1;
    assert!(f.contains(&("removed".into(), "3".into())), "{f:?}");
    assert!(f.contains(&("store".into(), "memory".into())), "{f:?}");
    // A sweep that removed something is worth an INFO line; an empty one only DEBUG.
    assert!(f.contains(&("level".into(), "INFO".into())), "{f:?}");
    let empty = &cleanups[1].1;
    assert!(empty.contains(&("removed".into(), "0".into())), "{empty:?}");
    assert!(empty.contains(&("level".into(), "DEBUG".into())), "{empty:?}");
}

struct Panicky;
impl Notifier for Panicky {
    fn task_changed(&self, _task: &TaskRecord, _listen: &ListenNotifier) {
        panic!("notifier failure on purpose");
    }
}

#[tokio::test]
async fn a_panicking_notifier_fails_neither_request_nor_worker() {
    let tasks = Tasks::new(TasksConfig::enabled().notifier(NotifierConfig::Custom(Arc::new(Panicky)))).unwrap();
    let server = server_with(&tasks);
    let c = call(&server, 1, "short").await;
    let id = c["taskId"].as_str().unwrap();
    tasks.progress(id, "still fine").await.unwrap();
    tasks.complete(id, CallToolResult::text("ok"), None).await.unwrap();
    assert_eq!(tasks.status(id).await.unwrap().status, TaskStatus::Completed);
}

#[derive(Default, Clone)]
struct Recording(Arc<Mutex<Vec<String>>>);
impl Notifier for Recording {
    fn task_changed(&self, task: &TaskRecord, listen: &ListenNotifier) {
        listen.task_changed(task);
        self.0.lock().unwrap().push(task.status.as_str().to_owned());
    }
}

#[tokio::test]
async fn a_custom_notifier_sees_every_write() {
    let rec = Recording::default();
    let tasks = Tasks::new(TasksConfig::enabled().notifier(NotifierConfig::Custom(Arc::new(rec.clone())))).unwrap();
    let server = server_with(&tasks);
    let id = call(&server, 1, "short").await["taskId"].as_str().unwrap().to_owned();
    tasks.progress(&id, "a").await.unwrap();
    tasks.fail(&id, RpcError::internal("x"), None).await.unwrap();
    assert_eq!(*rec.0.lock().unwrap(), ["working", "working", "failed"]);
}

async fn cleanup_events_after(events: &Events, advance: Duration) -> usize {
    tokio::time::advance(advance).await;
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    // The sweeps of the modern store: the handle's legacy twin sweeps its own on the same schedule.
    let modern = |fields: &[(String, String)]| fields.iter().any(|(k, v)| k == "store" && v == "memory");
    events.0.lock().unwrap().iter().filter(|(t, f)| t == "conduit_mcp::ext_tasks::cleanup" && modern(f)).count()
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_janitor_sweeps_on_its_interval() {
    let events = Events::default();
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(events.clone()));
    let clock = ManualClock::new(1_800_000_000_000);
    let cfg = TasksConfig::enabled()
        .janitor(JanitorConfig::Every { interval: Duration::from_secs(30), ttl: Duration::from_secs(3600) });
    let tasks = Tasks::with_clock(cfg, Arc::new(clock.clone())).unwrap();
    let server = server_with(&tasks);
    let id = call(&server, 1, "short").await["taskId"].as_str().unwrap().to_owned();
    clock.advance(1_001);
    assert_eq!(cleanup_events_after(&events, Duration::from_secs(29)).await, 0, "not before the interval");
    assert_eq!(cleanup_events_after(&events, Duration::from_secs(2)).await, 1, "one sweep per interval");
    assert!(tasks.status(&id).await.is_err());
    assert_eq!(cleanup_events_after(&events, Duration::from_secs(30)).await, 2);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_disabled_janitor_never_sweeps() {
    let events = Events::default();
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(events.clone()));
    let tasks = Tasks::new(TasksConfig::enabled().janitor(JanitorConfig::Disabled)).unwrap();
    let server = server_with(&tasks);
    call(&server, 1, "short").await;
    assert_eq!(cleanup_events_after(&events, Duration::from_secs(3600)).await, 0);
}
