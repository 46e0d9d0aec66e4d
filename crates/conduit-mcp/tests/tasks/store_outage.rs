//! While the task store is away, every request that needs it is answered
//! `-32603 "Task store unavailable"`, and the failure is logged at ERROR once
//! per window (with how many were suppressed), not once per request.

use crate::common;

use async_trait::async_trait;
use common::*;
use conduit_mcp::ext::tasks::{CreateCaps, MemoryStore, Owner, TaskRecord, TaskStore, Tasks, TasksConfig, UpdateFn};
use conduit_mcp::prelude::*;
use conduit_mcp::task::StoreError;
use serde_json::json;
use std::sync::{Arc, Mutex};
use tracing_subscriber::layer::{Context, SubscriberExt};

/// A store whose every call fails, as a database that is down.
struct Away(MemoryStore);

fn away() -> StoreError {
    StoreError::backend_message("away: the database is down")
}

#[async_trait]
impl TaskStore for Away {
    fn name(&self) -> &'static str {
        "away"
    }
    fn now_ms(&self) -> u64 {
        self.0.now_ms()
    }
    async fn create(&self, _record: TaskRecord, _caps: CreateCaps) -> Result<TaskRecord, StoreError> {
        Err(away())
    }
    async fn get(&self, _task_id: &str, _owner: Owner<'_>) -> Result<TaskRecord, StoreError> {
        Err(away())
    }
    async fn update(&self, _task_id: &str, _owner: Owner<'_>, _f: UpdateFn<'_>) -> Result<TaskRecord, StoreError> {
        Err(away())
    }
    async fn lapsed_leases(&self, _limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
        Err(away())
    }
    async fn leased_to(&self, _node: &str, _limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
        Err(away())
    }
}

/// The messages of the ERROR events seen.
#[derive(Clone, Default)]
struct Errors(Arc<Mutex<Vec<String>>>);

struct Message(String);

impl tracing::field::Visit for Message {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Errors {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        if *event.metadata().level() == tracing::Level::ERROR {
            let mut m = Message(String::new());
            event.record(&mut m);
            self.0.lock().unwrap().push(m.0);
        }
    }
}

#[tokio::test(flavor = "current_thread")]
async fn an_outage_is_answered_per_request_and_logged_once_per_window() {
    let errors = Errors::default();
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(errors.clone()));
    let tasks = Tasks::new(TasksConfig::enabled().store(Arc::new(Away(MemoryStore::new())))).expect("tasks");
    let server = Server::builder("outage", "1.0.0")
        .extension(tasks)
        .tool(Tool::new("job", "A task").handle(|_ctx, _args| async { Ok(TaskSpec::new()) }))
        .build()
        .expect("server");
    let h = start(server).await;
    let caps = json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } });
    for i in 0..40 {
        let body = if i % 2 == 0 {
            req(i, "tasks/get", json!({ "taskId": format!("t{i}"), "_meta": meta_with(caps.clone()) }))
        } else {
            req(i, "tools/call", json!({ "name": "job", "arguments": {}, "_meta": meta_with(caps.clone()) }))
        };
        let r = h.send(&body).await;
        assert_eq!(r.body["error"]["code"], -32603, "{}", r.text);
        assert_eq!(r.body["error"]["message"], "Task store unavailable", "{}", r.text);
    }
    let logged = errors.0.lock().unwrap().clone();
    assert_eq!(logged, vec!["task store failed".to_owned()], "40 failures, one ERROR line in the window");
}
