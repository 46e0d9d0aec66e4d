//! `LegacyTasks`: creates under the row cap, lists per owner, wakes a
//! `tasks/result`-style waiter on a change, and lets the extension's `Tasks`
//! handle complete a legacy task by id without knowing its era.

use conduit_mcp::clock::{Clock, ManualClock};
use conduit_mcp::ext::tasks::legacy_store::LegacyTasks;
use conduit_mcp::ext::tasks::{CreateCaps, Owner, TaskRecord, Tasks, TasksConfig, new_task_id, sweep};
use conduit_mcp::prelude::*;
use conduit_mcp::protocol::tasks::TaskStatus;
use conduit_mcp::task::StoreError;
use conduit_mcp::task::WorkerError;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

const T0: u64 = 1_800_000_000_000;

fn handles(max_rows: usize) -> (Tasks, LegacyTasks, ManualClock) {
    let clock = ManualClock::new(T0);
    let mut config = TasksConfig::enabled();
    config.max_rows = Some(max_rows);
    config.max_rows_per_principal = Some(max_rows);
    let modern = Tasks::with_clock(config.clone(), Arc::new(clock.clone())).expect("config");
    let legacy = LegacyTasks::with_clock(config, Arc::new(clock.clone())).expect("config");
    modern.drive_legacy(&legacy);
    (modern, legacy, clock)
}

fn record(owner: &str, clock: &ManualClock) -> TaskRecord {
    TaskRecord::new(new_task_id(), Some(owner.into()), clock.now_ms(), Some(60_000))
}

#[tokio::test]
async fn a_legacy_task_is_created_under_its_own_cap_and_listed_for_its_owner_only() {
    let (modern, legacy, clock) = handles(2);
    let a = legacy.create(record("alice", &clock)).await.expect("create");
    clock.advance(1);
    let b = legacy.create(record("alice", &clock)).await.expect("create");
    assert_eq!(legacy.create(record("bob", &clock)).await, Err(StoreError::TaskLimitReached), "the legacy cap");
    // The stores are separate: the modern one has no legacy task and its cap is its own.
    assert_eq!(modern.store().get(&a.task_id, Owner::Any).await, Err(StoreError::NotFound));
    modern
        .store()
        .create(record("bob", &clock), CreateCaps::rows(Some(2)))
        .await
        .expect("the modern store is not full");
    let page = legacy.list(Some("alice"), None, 10).await.expect("list");
    let ids: Vec<&str> = page.tasks.iter().map(|t| t.task_id.as_str()).collect();
    assert_eq!(ids, vec![a.task_id.as_str(), b.task_id.as_str()]);
    assert!(legacy.list(Some("bob"), None, 10).await.expect("list").tasks.is_empty());
}

#[tokio::test]
async fn the_extension_handle_completes_a_legacy_task_by_id_and_wakes_its_waiter() {
    let (modern, legacy, clock) = handles(100);
    let task = legacy.create(record("alice", &clock)).await.expect("create");
    let id = task.task_id.clone();
    let reads = Arc::new(AtomicUsize::new(0));
    let waiter = {
        let (legacy, id, reads) = (legacy.clone(), id.clone(), reads.clone());
        tokio::spawn(async move {
            legacy
                .wait(&id, Owner::Is(Some("alice")), move |r| {
                    reads.fetch_add(1, Ordering::SeqCst);
                    r.is_terminal()
                })
                .await
                .expect("wait")
        })
    };
    // Once the waiter has seen the task working, only a wake-up can end its wait early.
    while reads.load(Ordering::SeqCst) == 0 {
        tokio::task::yield_now().await;
    }
    // The worker knows only the id and the extension's handle.
    modern.progress(&id, "halfway").await.expect("progress finds the legacy task");
    assert_eq!(modern.status(&id).await.expect("status").status_message.as_deref(), Some("halfway"));
    assert!(!modern.cancelled(&id).await);
    modern.complete(&id, CallToolResult::text("done"), None).await.expect("complete finds the legacy task");
    let done = tokio::time::timeout(Duration::from_secs(5), waiter).await.expect("woken, not by the backstop");
    let done = done.expect("join");
    assert_eq!(done.status, TaskStatus::Completed);
    assert_eq!(done.result.expect("result")["content"][0]["text"], "done");
    assert!(reads.load(Ordering::SeqCst) >= 2, "read again after the wake-up");
    assert!(
        matches!(modern.fail(&id, RpcError::internal("late"), None).await, Err(WorkerError::Terminal)),
        "a terminal legacy task stays as it is"
    );
    assert!(modern.status("no-such-task").await.is_err(), "an unknown id is unknown in both stores");
}

#[tokio::test]
async fn the_janitor_sweeps_expired_legacy_tasks_out_of_the_store_and_the_list() {
    let (_modern, legacy, clock) = handles(100);
    let short = TaskRecord::new(new_task_id(), Some("alice".into()), clock.now_ms(), Some(1_000));
    legacy.create(short).await.expect("create");
    clock.advance(1);
    let long = legacy.create(record("alice", &clock)).await.expect("create");
    clock.advance(1_000);
    assert_eq!(sweep(&legacy).await, Ok(1), "the expired task goes");
    let page = legacy.list(Some("alice"), None, 10).await.expect("list");
    assert_eq!(page.tasks.iter().map(|t| t.task_id.clone()).collect::<Vec<_>>(), vec![long.task_id]);
    assert_eq!(legacy.tasks().store().name(), "memory-legacy", "the sweep event names the legacy store");
}

#[tokio::test]
async fn a_waiter_returns_at_once_for_a_settled_task_and_not_found_for_a_foreign_one() {
    let (_modern, legacy, clock) = handles(100);
    let task = legacy.create(record("alice", &clock)).await.expect("create");
    assert_eq!(
        legacy.wait(&task.task_id, Owner::Is(Some("bob")), |_| true).await,
        Err(StoreError::NotFound),
        "a foreign task is missing"
    );
    let now = legacy.wait(&task.task_id, Owner::Is(Some("alice")), |r| r.status == TaskStatus::Working).await;
    assert_eq!(now.expect("wait").status, TaskStatus::Working);
    legacy.fail(&task.task_id, RpcError::internal("boom"), Some("boom".into())).await.expect("fail");
    let failed = legacy.wait(&task.task_id, Owner::Is(Some("alice")), |_| false).await.expect("wait");
    assert_eq!(failed.status, TaskStatus::Failed, "a terminal task ends the wait whatever was asked");
}
