//! The contract of [`TaskStore::create_with`] and [`TaskStore::update_with`]:
//! the hook runs once, on the record as written, only when something is
//! written; a failing hook leaves nothing behind; caps and duplicates refuse
//! before the hook runs. A store without transactions must refuse every
//! hook and write nothing. What the hook writes on the store's own
//! connection is the store crate's to test (it knows the connection).

use super::record;
use crate::clock::{Clock, ManualClock};
use crate::ext::tasks::store::{CreateCaps, Owner, TaskRecord, TaskStore};
use crate::protocol::tasks::TaskStatus;
use crate::task::{HookError, StoreError, StoreTransaction, TransactionHook, WrittenTask};
use async_trait::async_trait;
use std::sync::Mutex;

/// A hook that records what it saw (task id, version, status) and fails when told to.
#[derive(Default)]
struct Probe {
    fail: bool,
    seen: Mutex<Vec<(String, u64, TaskStatus)>>,
}

impl Probe {
    fn failing() -> Self {
        Self { fail: true, ..Self::default() }
    }

    fn seen(&self) -> Vec<(String, u64, TaskStatus)> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

#[async_trait]
impl TransactionHook for Probe {
    async fn run(&self, tx: &mut dyn StoreTransaction, task: WrittenTask<'_>) -> Result<(), HookError> {
        assert!(!tx.store().is_empty(), "a transaction names its store");
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).push((task.task_id.to_owned(), task.version, task.status));
        if self.fail { Err("the hook failed on purpose".into()) } else { Ok(()) }
    }
}

/// Runs every hook check on `store`, which must start empty (the cap check
/// counts rows); a store that refuses hooks must refuse them all and write
/// nothing.
pub async fn transaction_hooks(store: &dyn TaskStore, clock: &ManualClock) {
    let first = record(Some("alice"), Some(60_000), clock.now_ms());
    let probe = Probe::default();
    let created = match store.create_with(first.clone(), CreateCaps::default(), &probe).await {
        Err(StoreError::Unsupported(_)) => {
            assert_eq!(probe.seen(), Vec::new(), "a refused hook never runs");
            assert_eq!(store.get(&first.task_id, Owner::Any).await, Err(StoreError::NotFound));
            let done = store.update_with(&first.task_id, Owner::Any, &|r: &TaskRecord| Ok(r.clone()), &probe).await;
            assert!(matches!(done, Err(StoreError::Unsupported(_)) | Err(StoreError::NotFound)), "{done:?}");
            return;
        }
        done => done.expect("a hooked create"),
    };
    let stored = store.get(&first.task_id, Owner::Is(Some("alice"))).await.expect("the hooked task");
    assert_eq!(created, stored, "a hooked create returns the record as stored");
    assert_eq!(probe.seen(), vec![(first.task_id.clone(), stored.version, TaskStatus::Working)]);

    // A failing hook: nothing written, and no room under the cap taken.
    let capped = CreateCaps::new(Some(2), None);
    let lost = record(Some("alice"), Some(60_000), clock.now_ms());
    let failing = Probe::failing();
    let done = store.create_with(lost.clone(), capped, &failing).await;
    assert!(matches!(done, Err(StoreError::Hook { .. })), "{done:?}");
    assert_eq!(failing.seen().len(), 1, "the hook ran once");
    assert_eq!(store.get(&lost.task_id, Owner::Any).await, Err(StoreError::NotFound), "rolled back");
    let second = record(Some("alice"), Some(60_000), clock.now_ms());
    store.create_with(second.clone(), capped, &probe).await.expect("the room the failed create did not take");
    // The cap and a duplicate id refuse before the hook runs.
    let before = probe.seen().len();
    let over = record(Some("alice"), Some(60_000), clock.now_ms());
    assert_eq!(store.create_with(over.clone(), capped, &probe).await, Err(StoreError::TaskLimitReached));
    assert_eq!(store.create_with(first.clone(), CreateCaps::default(), &probe).await, Err(StoreError::Duplicate));
    assert_eq!(probe.seen().len(), before, "no hook for a refused create");
    assert_eq!(store.get(&over.task_id, Owner::Any).await, Err(StoreError::NotFound));

    // Updates: the hook sees the record as written.
    let message = |m: &'static str| {
        move |r: &TaskRecord| {
            let mut n = r.clone();
            n.status_message = Some(m.into());
            Ok(n)
        }
    };
    let updated = store.update_with(&first.task_id, Owner::Any, &message("answered"), &probe).await.expect("update");
    assert_eq!(updated.status_message.as_deref(), Some("answered"));
    assert_eq!(probe.seen().last(), Some(&(first.task_id.clone(), updated.version, TaskStatus::Working)));
    // A failing hook leaves the record as it was.
    let done = store.update_with(&first.task_id, Owner::Any, &message("lost"), &failing).await;
    assert!(matches!(done, Err(StoreError::Hook { .. })), "{done:?}");
    let now = store.get(&first.task_id, Owner::Any).await.expect("get");
    assert_eq!((now.version, now.status_message.as_deref()), (updated.version, Some("answered")));
    // A refusal and a terminal record write nothing, so no hook runs.
    let before = probe.seen().len();
    let refuse = |_: &TaskRecord| Err(StoreError::Refused("no".into()));
    let done = store.update_with(&first.task_id, Owner::Any, &refuse, &probe).await;
    assert_eq!(done, Err(StoreError::Refused("no".into())));
    store.cancel(&second.task_id, Owner::Any, None).await.expect("cancel");
    let terminal = store.update_with(&second.task_id, Owner::Any, &message("late"), &probe).await.expect("terminal");
    assert_eq!(terminal.status, TaskStatus::Cancelled);
    assert_eq!(probe.seen().len(), before, "no hook when nothing is written");
    // Another owner's task is not found, hook or not.
    let foreign = store.update_with(&first.task_id, Owner::Is(Some("bob")), &message("x"), &probe).await;
    assert_eq!(foreign, Err(StoreError::NotFound));
}
