//! A worker holding the extension's `Tasks` (paired with the legacy era's by
//! `drive_legacy`) drives a 2025-11-25 task by id in the store its id was
//! minted for: no read of the extension's store first, which on PostgreSQL
//! is a database round trip per worker call.

use crate::common;
use crate::legacy_common;

use async_trait::async_trait;
use common::start;
use conduit_mcp::ext::tasks::legacy_store::LegacyTasks;
use conduit_mcp::ext::tasks::{CreateCaps, MemoryStore, Owner, TaskRecord, TaskStore, Tasks, TasksConfig, UpdateFn};
use conduit_mcp::prelude::*;
use conduit_mcp::task::StoreError;
use legacy_common::*;
use serde_json::json;
use std::sync::{Arc, Mutex};

/// The extension's store, recording the ids it was asked to read or change.
#[derive(Default)]
struct Watched {
    inner: MemoryStore,
    touched: Mutex<Vec<String>>,
}

impl Watched {
    fn saw(&self, id: &str) {
        self.touched.lock().expect("lock").push(id.to_owned());
    }
}

#[async_trait]
impl TaskStore for Watched {
    fn name(&self) -> &'static str {
        "watched"
    }

    fn now_ms(&self) -> u64 {
        self.inner.now_ms()
    }

    async fn create(&self, record: TaskRecord, caps: CreateCaps) -> Result<TaskRecord, StoreError> {
        self.inner.create(record, caps).await
    }

    async fn get(&self, task_id: &str, owner: Owner<'_>) -> Result<TaskRecord, StoreError> {
        self.saw(task_id);
        self.inner.get(task_id, owner).await
    }

    async fn update(&self, task_id: &str, owner: Owner<'_>, f: UpdateFn<'_>) -> Result<TaskRecord, StoreError> {
        self.saw(task_id);
        self.inner.update(task_id, owner, f).await
    }
}

#[tokio::test]
async fn a_worker_call_on_a_legacy_task_reads_only_the_legacy_store() {
    let modern_store = Arc::new(Watched::default());
    let tasks = Tasks::new(TasksConfig::enabled().store(modern_store.clone())).expect("valid config");
    let legacy = LegacyTasks::new(TasksConfig::enabled()).expect("valid config");
    tasks.drive_legacy(&legacy);
    let server = Server::builder("by-id", "1.0.0")
        .extension(tasks.clone())
        .tool(
            Tool::new("wait", "A task a worker finishes")
                .task_support(TaskSupport::Optional)
                .handle(|_c, _a| async { Ok(ToolOutput::Task(TaskSpec::new().spawn(|_t| std::future::pending()))) }),
        )
        .build()
        .expect("valid server");
    let h = start(server).await;
    let mut c = Legacy::new(&h.url);
    c.initialize(json!({ "tasks": {} })).await;
    let created = c.result(1, "tools/call", json!({ "name": "wait", "task": {} })).await;
    let id = created["task"]["taskId"].as_str().expect("a task id").to_owned();

    // The worker knows only the id and the extension's handle.
    tasks.progress(&id, "halfway").await.expect("progress finds the legacy task");
    assert_eq!(tasks.status(&id).await.expect("status").status_message.as_deref(), Some("halfway"));
    tasks.complete(&id, CallToolResult::text("done"), None).await.expect("complete finds the legacy task");
    let got = c.result(2, "tasks/get", json!({ "taskId": id })).await;
    assert_eq!(got["status"], "completed", "{got}");
    assert!(modern_store.touched.lock().expect("lock").is_empty(), "the extension's store was read for a legacy task");

    // A modern task's calls still land in the extension's store, and an unknown id is missing in both.
    let modern_id = conduit_mcp::ext::tasks::new_task_id();
    assert!(matches!(tasks.status(&modern_id).await, Err(conduit_mcp::task::WorkerError::NotFound)));
    assert_eq!(modern_store.touched.lock().expect("lock").as_slice(), [modern_id]);
    h.assert_alive().await;
}
