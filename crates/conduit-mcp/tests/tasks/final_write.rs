//! The end of a task's work is not lost when the store is away at that
//! moment: the final write is retried with back-off until it lands, and
//! meanwhile the task's lease is still renewed (its work counts as running
//! until its end is recorded) — and only that of work still running.

use crate::client_support;
use crate::common;

use async_trait::async_trait;
use client_support::{connect, create_task, listen_tasks, next_notification};
use common::*;
use conduit_mcp::ext::tasks::{CreateCaps, MemoryStore, Owner, TaskRecord, TaskStore, Tasks, TasksConfig, UpdateFn};
use conduit_mcp::prelude::*;
use conduit_mcp::task::StoreError;
use serde_json::json;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

/// A memory store whose writes fail while `down` (an outage of the database).
struct Flaky {
    inner: MemoryStore,
    down: AtomicBool,
    failed_writes: AtomicUsize,
    failed: Notify,
    renewed: Mutex<Vec<Vec<String>>>,
    renewal: Notify,
}

#[async_trait]
impl TaskStore for Flaky {
    fn name(&self) -> &'static str {
        "flaky"
    }
    fn now_ms(&self) -> u64 {
        self.inner.now_ms()
    }
    async fn create(&self, record: TaskRecord, caps: CreateCaps) -> Result<TaskRecord, StoreError> {
        self.inner.create(record, caps).await
    }
    async fn get(&self, task_id: &str, owner: Owner<'_>) -> Result<TaskRecord, StoreError> {
        self.inner.get(task_id, owner).await
    }
    async fn update(&self, task_id: &str, owner: Owner<'_>, f: UpdateFn<'_>) -> Result<TaskRecord, StoreError> {
        if self.down.load(Ordering::SeqCst) {
            self.failed_writes.fetch_add(1, Ordering::SeqCst);
            self.failed.notify_waiters();
            return Err(StoreError::backend_message("flaky: the database is away"));
        }
        self.inner.update(task_id, owner, f).await
    }
    async fn renew_leases_of(&self, node: &str, ids: &[String], until_ms: u64) -> Result<usize, StoreError> {
        self.renewed.lock().unwrap().push(ids.to_vec());
        self.renewal.notify_waiters();
        self.inner.renew_leases_of(node, ids, until_ms).await
    }
    async fn lapsed_leases(&self, limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
        self.inner.lapsed_leases(limit).await
    }
    async fn leased_to(&self, node: &str, limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
        self.inner.leased_to(node, limit).await
    }
}

impl Flaky {
    /// Waits for the next lease renewal; returns the ids it renewed.
    async fn next_renewal(&self) -> Vec<String> {
        let n = self.renewal.notified();
        tokio::pin!(n);
        n.as_mut().enable();
        let before = self.renewed.lock().unwrap().len();
        guard("a lease renewal", async {
            loop {
                if let Some(ids) = self.renewed.lock().unwrap().get(before).cloned() {
                    return ids;
                }
                n.as_mut().await;
                n.set(self.renewal.notified());
            }
        })
        .await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_that_ends_during_an_outage_lands_when_the_store_returns() {
    let store = Arc::new(Flaky {
        inner: MemoryStore::new(),
        down: AtomicBool::new(false),
        failed_writes: AtomicUsize::new(0),
        failed: Notify::new(),
        renewed: Mutex::default(),
        renewal: Notify::new(),
    });
    let cfg = TasksConfig::enabled().store(store.clone()).lease(Duration::from_millis(300));
    let tasks = Tasks::new(cfg).unwrap();
    let release = Arc::new(Notify::new());
    let r = release.clone();
    let server = Server::builder("final", "1")
        .extension(tasks.clone())
        .tool(Tool::new("job", "ends when released").handle(move |_c, _a| {
            let r = r.clone();
            async move {
                Ok(TaskSpec::new().spawn(move |_ctx| async move {
                    r.notified().await;
                    Ok(CallToolResult::text("42 rows"))
                }))
            }
        }))
        .tool(
            Tool::new("forever", "never ends")
                .handle(|_c, _a| async { Ok(TaskSpec::new().spawn(|_ctx| std::future::pending())) }),
        )
        .build()
        .unwrap();
    let h = start(server).await;
    let c = connect(&h.url).await;
    let job = create_task(&c, "job").await;
    let other = create_task(&c, "forever").await;
    let (mut stream, _) = guard("a listen ack", listen_tasks(&c, &[&job])).await;

    // The database goes away; the work ends; its final write fails, twice.
    store.down.store(true, Ordering::SeqCst);
    let failed = store.failed.notified();
    tokio::pin!(failed);
    failed.as_mut().enable();
    release.notify_one();
    guard("two failed final writes", async {
        while store.failed_writes.load(Ordering::SeqCst) < 2 {
            failed.as_mut().await;
            failed.set(store.failed.notified());
        }
    })
    .await;
    // Meanwhile its lease is still renewed: the end is not recorded yet.
    let ids = store.next_renewal().await;
    assert!(ids.contains(&job) && ids.contains(&other), "{ids:?}");

    // The database returns: the result lands, exactly as the work returned it.
    store.down.store(false, Ordering::SeqCst);
    let n = guard("the completion", next_notification(&mut stream)).await;
    assert_eq!(n["status"], "completed", "{n}");
    assert_eq!(n["result"]["content"][0]["text"], "42 rows", "{n}");
    let g = c.request("tasks/get", json!({ "taskId": job })).await.expect("tasks/get");
    assert_eq!(g["status"], "completed");

    // From now on only the work still running is renewed (the second
    // renewal from now: the first may have read the running set before).
    store.next_renewal().await;
    let ids = store.next_renewal().await;
    assert_eq!(ids, vec![other.clone()]);
}
