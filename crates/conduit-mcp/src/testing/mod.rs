//! The `TaskStore` contract suite (feature `testing`), and [`RequestLog`]
//! (with `http`), which counts what a test's server saw.
//!
//! Every store — ours or yours — proves itself against the same checks:
//!
//! ```no_run
//! # use conduit_mcp::clock::Clock;
//! # use conduit_mcp::ext::tasks::MemoryStore;
//! # use std::sync::Arc;
//! # struct MyStore;
//! # impl MyStore {
//! #     async fn new(clock: Arc<dyn Clock>) -> MemoryStore { MemoryStore::with_clock(clock) }
//! # }
//! // In a test file, under `#[tokio::test(flavor = "multi_thread")]`:
//! async fn my_store_meets_the_contract() {
//!     conduit_mcp::testing::store_contract(|clock| async move { MyStore::new(clock).await }, Default::default()).await;
//! }
//! ```
//!
//! The factory receives the clock the store must read time from; the suite
//! moves it (a [`ManualClock`]) instead of sleeping. Each check creates its
//! own tasks, so the suite may share one database with other tests.

mod hooks;
mod legacy_store;
#[cfg(feature = "http")]
mod request_log;
mod terminal;

pub use legacy_store::{
    cursors_are_tamper_evident, expired_tasks_are_not_listed, legacy_store_contract, list_is_owner_scoped_and_ordered,
    page_size_is_clamped, pages_cover_every_task_once, removed_terminal_tasks_are_not_listed,
};
mod sessions;
mod webhooks;

pub use hooks::transaction_hooks;
#[cfg(feature = "http")]
pub use request_log::{RequestLog, SeenRequests};
pub use sessions::session_store_contract;
pub use terminal::{
    a_terminal_task_makes_room_under_the_row_cap, trim_keeps_the_newest_terminal_tasks_within_the_bound,
};
pub use webhooks::{
    a_stale_node_cannot_settle, a_terminated_envelope_waits_for_the_rest_of_its_outbox,
    caps_count_live_subscriptions_and_their_bytes, claims_go_by_due_then_position_under_exclusive_leases,
    feed_is_compare_and_set, live_walks_subscriptions_in_id_order, reads_and_removal_are_scoped_to_the_principal,
    settling_moves_the_safe_watermark_and_failure_state, sweep_removes_lapsed_subscriptions_and_unused_verifications,
    upsert_creates_then_refreshes, verification_is_per_principal_and_url, webhook_store_contract,
};
pub use webhooks::{entry as outbox_entry, subscription as webhook_subscription};

use crate::clock::{Clock, ManualClock};
use crate::ext::tasks::store::{CreateCaps, Lease, Owner, StatusFields, TaskRecord, TaskStore, new_task_id};
use crate::protocol::tasks::TaskStatus;
use crate::task::StoreError;
use serde_json::{Value, json};
use std::future::Future;
use std::sync::Arc;

/// Sizes of the contract suite's race test.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
#[must_use]
pub struct ContractOptions {
    /// Tasks raced on (default 10 000).
    pub race_tasks: usize,
    /// Concurrent writers per task (default 64).
    pub race_writers: usize,
    /// Whether the store counts owners: the per-principal cap on live tasks
    /// (`create`'s `max_rows_per_owner`) and the terminal bounds (`trim_terminal`,
    /// `evict_oldest_terminal`; default true).
    pub owner_cap: bool,
}

impl Default for ContractOptions {
    fn default() -> Self {
        Self { race_tasks: 10_000, race_writers: 64, owner_cap: true }
    }
}

impl ContractOptions {
    /// Options with these race sizes.
    pub fn race(tasks: usize, writers: usize) -> Self {
        Self { race_tasks: tasks, race_writers: writers, owner_cap: true }
    }

    /// Leaves out the per-principal cap and terminal bound checks, for a
    /// store that counts no owners (its `create` enforces the row cap alone,
    /// and the provided terminal methods remove nothing).
    pub fn without_owner_cap(mut self) -> Self {
        self.owner_cap = false;
        self
    }
}

const START: u64 = 1_800_000_000_000;

fn record(owner: Option<&str>, ttl_ms: Option<u64>, now: u64) -> TaskRecord {
    TaskRecord::new(new_task_id(), owner.map(String::from), now, ttl_ms)
}

/// Runs every check against stores built by `make`, which must return an
/// empty store on each call (the cleanup and row-cap checks count rows).
pub async fn store_contract<S, F, Fut>(make: F, options: ContractOptions)
where
    S: TaskStore,
    F: Fn(Arc<dyn Clock>) -> Fut,
    Fut: Future<Output = S>,
{
    let clock = ManualClock::new(START);
    let store = Arc::new(make(Arc::new(clock.clone())).await);
    create_and_get(&*store, &clock).await;
    owner_scoping(&*store, &clock).await;
    update_is_atomic_and_refusals_change_nothing(&*store, &clock).await;
    cancel_semantics(&*store, &clock).await;
    terminal_states_are_final(&*store, &clock).await;
    expired_reads_as_missing(&*store, &clock).await;
    leases(&*store, &clock).await;
    // Cleanup and the row cap count every row, so they run on stores of their own.
    let swept = make(Arc::new(clock.clone())).await;
    cleanup_removes_what_expired(&swept, &clock).await;
    let capped = make(Arc::new(clock.clone())).await;
    row_cap(&capped, &clock).await;
    if options.owner_cap {
        let owner_capped = make(Arc::new(clock.clone())).await;
        owner_cap(&owner_capped, &clock).await;
        trim_keeps_the_newest_terminal_tasks_within_the_bound(&*store, &clock).await;
        let full = make(Arc::new(clock.clone())).await;
        a_terminal_task_makes_room_under_the_row_cap(&full, &clock).await;
    }
    let hooked = make(Arc::new(clock.clone())).await;
    transaction_hooks(&hooked, &clock).await;
    race(store, &clock, options).await;
}

/// `create` returns the record as stored (at version 1), and a `get` then
/// finds it, whole; a duplicate id is refused.
pub async fn create_and_get(store: &dyn TaskStore, clock: &ManualClock) {
    let mut r = record(Some("alice"), Some(60_000), clock.now_ms());
    r.status_message = Some("Queued".into());
    r.poll_interval_ms = Some(500);
    let created = store.create(r.clone(), CreateCaps::default()).await.expect("create");
    assert_eq!(created.version, 1, "create stores version 1");
    let got = store.get(&r.task_id, Owner::Is(Some("alice"))).await.expect("get after create");
    assert_eq!(got, created, "create returns the record as stored");
    assert_eq!(got.task_id, r.task_id);
    assert_eq!(got.status, TaskStatus::Working);
    assert_eq!(got.status_message.as_deref(), Some("Queued"));
    assert_eq!((got.created_at_ms, got.ttl_ms, got.poll_interval_ms), (r.created_at_ms, Some(60_000), Some(500)));
    assert_eq!(
        store.create(r.clone(), CreateCaps::default()).await,
        Err(StoreError::Duplicate),
        "duplicate ids are refused"
    );
    assert_eq!(store.get("no-such-task", Owner::Any).await, Err(StoreError::NotFound));
}

/// Another owner's task answers exactly like a missing one; `Any` sees everything.
pub async fn owner_scoping(store: &dyn TaskStore, clock: &ManualClock) {
    let r = record(Some("alice"), Some(60_000), clock.now_ms());
    store.create(r.clone(), CreateCaps::default()).await.expect("create");
    assert_eq!(store.get(&r.task_id, Owner::Is(Some("bob"))).await, Err(StoreError::NotFound));
    assert_eq!(store.get(&r.task_id, Owner::Is(None)).await, Err(StoreError::NotFound));
    assert!(store.get(&r.task_id, Owner::Any).await.is_ok());
    assert_eq!(store.cancel(&r.task_id, Owner::Is(Some("bob")), None).await, Err(StoreError::NotFound));
    let f = |t: &TaskRecord| Ok(t.clone());
    assert_eq!(store.update(&r.task_id, Owner::Is(Some("bob")), &f).await.map(|_| ()), Err(StoreError::NotFound));
    let anon = record(None, Some(60_000), clock.now_ms());
    store.create(anon.clone(), CreateCaps::default()).await.expect("create");
    assert!(store.get(&anon.task_id, Owner::Is(None)).await.is_ok(), "unauthenticated task, unauthenticated reader");
    assert_eq!(store.get(&anon.task_id, Owner::Is(Some("alice"))).await, Err(StoreError::NotFound));
}

/// `update` replaces the record with the function's output; a refusal leaves it as it was.
pub async fn update_is_atomic_and_refusals_change_nothing(store: &dyn TaskStore, clock: &ManualClock) {
    let r = record(Some("alice"), Some(60_000), clock.now_ms());
    store.create(r.clone(), CreateCaps::default()).await.expect("create");
    let before = store.get(&r.task_id, Owner::Any).await.expect("get");
    clock.advance(5);
    let now = clock.now_ms();
    let set = move |t: &TaskRecord| {
        let mut n = t.clone();
        n.status_message = Some("step 1".into());
        n.input_responses.insert("k".into(), json!({"action": "accept"}));
        n.touch(now);
        Ok(n)
    };
    let after = store.update(&r.task_id, Owner::Is(Some("alice")), &set).await.expect("update");
    assert!(after.version > before.version, "every write bumps the version");
    let got = store.get(&r.task_id, Owner::Any).await.expect("get");
    assert_eq!(got.status_message.as_deref(), Some("step 1"));
    assert_eq!(got.input_responses.get("k"), Some(&json!({"action": "accept"})));
    assert_eq!(got.last_updated_at_ms, now);
    let refuse = |_: &TaskRecord| Err(StoreError::Refused("no".into()));
    assert_eq!(store.update(&r.task_id, Owner::Any, &refuse).await, Err(StoreError::Refused("no".into())));
    assert_eq!(store.get(&r.task_id, Owner::Any).await.expect("get"), got, "a refusal changes nothing");
}

/// `cancel` moves a live task to `cancelled` at the store's `now_ms` (its
/// injected clock) and returns a terminal one unchanged.
pub async fn cancel_semantics(store: &dyn TaskStore, clock: &ManualClock) {
    let r = record(Some("alice"), Some(60_000), clock.now_ms());
    store.create(r.clone(), CreateCaps::default()).await.expect("create");
    clock.advance(7);
    assert_eq!(store.now_ms(), clock.now_ms(), "the store reads the clock it was given");
    let c = store.cancel(&r.task_id, Owner::Is(Some("alice")), None).await.expect("cancel");
    assert_eq!(c.status, TaskStatus::Cancelled);
    assert_eq!(c.terminal_at_ms, Some(clock.now_ms()), "the transition is stamped with the store's clock");
    let again = store.cancel(&r.task_id, Owner::Is(Some("alice")), Some("again")).await.expect("cancel again");
    assert_eq!(again, c, "cancelling a terminal task changes nothing");
    let done = record(None, Some(60_000), clock.now_ms());
    store.create(done.clone(), CreateCaps::default()).await.expect("create");
    let fields = StatusFields { result: Some(json!({"content": []})), ..StatusFields::default() };
    let completed = store.put_status(&done.task_id, TaskStatus::Completed, fields).await.expect("complete");
    assert_eq!(store.cancel(&done.task_id, Owner::Is(None), None).await.expect("cancel"), completed);
}

/// `put_status` on a terminal task answers `Terminal`; nothing changes it.
pub async fn terminal_states_are_final(store: &dyn TaskStore, clock: &ManualClock) {
    let r = record(None, Some(60_000), clock.now_ms());
    store.create(r.clone(), CreateCaps::default()).await.expect("create");
    let fields = StatusFields {
        status_message: Some("done".into()),
        result: Some(json!({"resultType": "complete", "content": [{"type": "text", "text": "ok"}]})),
        error: None,
    };
    let done = store.put_status(&r.task_id, TaskStatus::Completed, fields).await.expect("complete");
    assert_eq!(done.status, TaskStatus::Completed);
    assert_eq!(done.status_message.as_deref(), Some("done"));
    for s in [TaskStatus::Working, TaskStatus::Failed, TaskStatus::Completed, TaskStatus::InputRequired] {
        assert_eq!(store.put_status(&r.task_id, s, StatusFields::default()).await, Err(StoreError::Terminal));
    }
    let revive = |t: &TaskRecord| {
        let mut n = t.clone();
        n.status = TaskStatus::Working;
        Ok(n)
    };
    let _ = store.update(&r.task_id, Owner::Any, &revive).await;
    assert_eq!(store.get(&r.task_id, Owner::Any).await.expect("get"), done, "a terminal record never changes");
}

/// A task past `created_at + ttl` reads as missing before any cleanup.
pub async fn expired_reads_as_missing(store: &dyn TaskStore, clock: &ManualClock) {
    let r = record(Some("alice"), Some(1_000), clock.now_ms());
    store.create(r.clone(), CreateCaps::default()).await.expect("create");
    clock.advance(1_000);
    assert!(store.get(&r.task_id, Owner::Any).await.is_ok(), "retrievable for the whole ttl");
    clock.advance(1);
    assert_eq!(store.get(&r.task_id, Owner::Is(Some("alice"))).await, Err(StoreError::NotFound));
    assert_eq!(store.cancel(&r.task_id, Owner::Is(Some("alice")), None).await, Err(StoreError::NotFound));
    assert_eq!(
        store.put_status(&r.task_id, TaskStatus::Completed, StatusFields::default()).await,
        Err(StoreError::NotFound)
    );
}

/// `cleanup` evicts expired tasks and old terminal unlimited-TTL ones, and nothing else.
pub async fn cleanup_removes_what_expired(store: &dyn TaskStore, clock: &ManualClock) {
    let now = clock.now_ms();
    let short: Vec<TaskRecord> = (0..3).map(|_| record(None, Some(100), now)).collect();
    let long = record(None, Some(10_000_000), now);
    let forever_live = record(None, None, now);
    let forever_done = record(None, None, now);
    for r in short.iter().chain([&long, &forever_live, &forever_done]) {
        store.create(r.clone(), CreateCaps::default()).await.expect("create");
    }
    store.put_status(&forever_done.task_id, TaskStatus::Failed, StatusFields::default()).await.expect("fail");
    assert_eq!(store.cleanup(3_600_000).await.expect("cleanup"), 0, "nothing has expired yet");
    clock.advance(101);
    assert_eq!(store.cleanup(3_600_000).await.expect("cleanup"), 3, "the three short tasks");
    for r in &short {
        assert_eq!(store.get(&r.task_id, Owner::Any).await, Err(StoreError::NotFound));
    }
    clock.advance(3_600_000);
    assert_eq!(store.cleanup(3_600_000).await.expect("cleanup"), 1, "the old terminal unlimited task");
    assert_eq!(store.get(&forever_done.task_id, Owner::Any).await, Err(StoreError::NotFound));
    assert!(store.get(&forever_live.task_id, Owner::Any).await.is_ok(), "a live unlimited task stays");
    assert!(store.get(&long.task_id, Owner::Any).await.is_ok());
}

/// Leases: renewed per node, reported back on read, listed once lapsed or by node.
pub async fn leases(store: &dyn TaskStore, clock: &ManualClock) {
    let start = clock.now_ms();
    let lease = |node: &str| Some(Lease { node: node.into(), expires_at_ms: start + 1_000 });
    let mut mine = record(None, Some(3_600_000), start);
    mine.lease = lease("contract-n1");
    let mut theirs = record(None, Some(3_600_000), start);
    theirs.lease = lease("contract-n2");
    let mut done = record(None, Some(3_600_000), start);
    done.lease = lease("contract-n2");
    let plain = record(None, Some(3_600_000), start);
    // Leased to node 1, but its work there has ended: node 1 renews only what it still runs.
    let mut ended = record(None, Some(3_600_000), start);
    ended.lease = lease("contract-n1");
    for r in [&mine, &theirs, &done, &plain, &ended] {
        store.create(r.clone(), CreateCaps::default()).await.expect("create");
    }
    store.put_status(&done.task_id, TaskStatus::Completed, StatusFields::default()).await.expect("complete");
    let ids = |v: Vec<TaskRecord>| v.into_iter().map(|r| r.task_id).collect::<Vec<_>>();
    let mut leased = ids(store.leased_to("contract-n1", 100).await.expect("leased_to"));
    leased.sort();
    let mut expected = vec![mine.task_id.clone(), ended.task_id.clone()];
    expected.sort();
    assert_eq!(leased, expected);
    clock.advance(500);
    let running = [mine.task_id.clone(), theirs.task_id.clone(), done.task_id.clone()];
    let renewed = store.renew_leases_of("contract-n1", &running, clock.now_ms() + 1_000).await.expect("renew");
    assert_eq!(renewed, 1, "only node 1's own live task among those named");
    let got = store.get(&mine.task_id, Owner::Any).await.expect("get");
    assert_eq!(got.lease.as_ref().map(|l| l.expires_at_ms), Some(start + 1_500), "a renewal is visible on read");
    clock.advance(600);
    let lapsed = ids(store.lapsed_leases(1_000).await.expect("lapsed"));
    assert!(lapsed.contains(&theirs.task_id), "an unrenewed lease lapses");
    assert!(!lapsed.contains(&mine.task_id), "a renewed lease holds");
    assert!(!lapsed.contains(&done.task_id), "terminal tasks hold no lease");
    assert!(!lapsed.contains(&plain.task_id));
    assert!(lapsed.contains(&ended.task_id), "a lease not named in the renewal lapses");
    clock.advance(1_000);
    assert!(ids(store.lapsed_leases(1_000).await.expect("lapsed")).contains(&mine.task_id));
}

/// `create` stops at `max_rows`; `None` means unlimited.
pub async fn row_cap(store: &dyn TaskStore, clock: &ManualClock) {
    for _ in 0..3 {
        store
            .create(record(None, Some(60_000), clock.now_ms()), CreateCaps::rows(Some(3)))
            .await
            .expect("under the cap");
    }
    assert_eq!(
        store.create(record(None, Some(60_000), clock.now_ms()), CreateCaps::rows(Some(3))).await,
        Err(StoreError::TaskLimitReached)
    );
    store.create(record(None, Some(60_000), clock.now_ms()), CreateCaps::default()).await.expect("no cap");
}

/// `create` stops one owner at `max_rows_per_owner` live tasks
/// (`OwnerLimitReached`) without stopping others or owner-less tasks; its
/// terminal tasks do not count (they stay readable, and ending a task frees
/// its slot at once), and a swept task frees its slot.
pub async fn owner_cap(store: &dyn TaskStore, clock: &ManualClock) {
    let caps = CreateCaps::new(Some(100), Some(2));
    let short = record(Some("alice"), Some(1_000), clock.now_ms());
    store.create(short, caps).await.expect("alice's first");
    let second = record(Some("alice"), Some(60_000), clock.now_ms());
    store.create(second.clone(), caps).await.expect("alice's second");
    let third = store.create(record(Some("alice"), Some(60_000), clock.now_ms()), caps).await;
    assert_eq!(third, Err(StoreError::OwnerLimitReached), "alice is at her cap");
    store.create(record(Some("bob"), Some(60_000), clock.now_ms()), caps).await.expect("bob is not");
    for _ in 0..3 {
        store.create(record(None, Some(60_000), clock.now_ms()), caps).await.expect("no owner, no owner cap");
    }
    let full = CreateCaps::new(Some(6), Some(2));
    let r = store.create(record(Some("carol"), Some(60_000), clock.now_ms()), full).await;
    assert_eq!(r, Err(StoreError::TaskLimitReached), "the row cap still holds");
    // Ending a task frees its slot under her cap at once, cancelled or completed.
    store.cancel(&second.task_id, Owner::Is(Some("alice")), None).await.expect("cancel");
    let fourth = record(Some("alice"), Some(60_000), clock.now_ms());
    store.create(fourth.clone(), caps).await.expect("a cancelled task holds no live slot");
    let fields = StatusFields { result: Some(json!({"content": []})), ..StatusFields::default() };
    store.put_status(&fourth.task_id, TaskStatus::Completed, fields).await.expect("complete");
    store.create(record(Some("alice"), Some(60_000), clock.now_ms()), caps).await.expect("nor a completed one");
    let over = store.create(record(Some("alice"), Some(60_000), clock.now_ms()), caps).await;
    assert_eq!(over, Err(StoreError::OwnerLimitReached), "two live tasks again");
    let ended = store.get(&second.task_id, Owner::Is(Some("alice"))).await.expect("still readable");
    assert_eq!(ended.status, TaskStatus::Cancelled);
    clock.advance(2_000);
    assert_eq!(store.cleanup(u64::MAX).await.expect("cleanup"), 1, "alice's short task expired");
    store.create(record(Some("alice"), Some(60_000), clock.now_ms()), caps).await.expect("a freed slot");
}

/// Many writers per task race `complete`, `fail`, `cancel` and answer updates:
/// exactly one terminal transition per task, and no acknowledged answer lost.
pub async fn race<S: TaskStore>(store: Arc<S>, clock: &ManualClock, options: ContractOptions) {
    let mut ids = Vec::with_capacity(options.race_tasks);
    for _ in 0..options.race_tasks {
        let r = record(Some("racer"), Some(86_400_000), clock.now_ms());
        ids.push(r.task_id.clone());
        store.create(r, CreateCaps::default()).await.expect("create");
    }
    let mut set = tokio::task::JoinSet::new();
    for id in &ids {
        for w in 0..options.race_writers {
            let (store, id) = (store.clone(), id.clone());
            set.spawn(async move {
                let op = w % 4;
                let ok = match op {
                    0 => {
                        let f =
                            StatusFields { result: Some(json!({"content": [], "w": w})), ..StatusFields::default() };
                        store.put_status(&id, TaskStatus::Completed, f).await.is_ok()
                    }
                    1 => {
                        let f = StatusFields {
                            error: Some(crate::ext::tasks::store::TaskFailure {
                                code: -32603,
                                message: format!("w{w}"),
                                data: None,
                            }),
                            ..StatusFields::default()
                        };
                        store.put_status(&id, TaskStatus::Failed, f).await.is_ok()
                    }
                    2 => store.cancel(&id, Owner::Is(Some("racer")), None).await.is_ok(),
                    _ => {
                        let key = format!("w{w}");
                        let f = move |t: &TaskRecord| {
                            if t.is_terminal() {
                                return Err(StoreError::Terminal);
                            }
                            let mut n = t.clone();
                            n.input_responses.insert(key.clone(), Value::from(w));
                            Ok(n)
                        };
                        store.update(&id, Owner::Is(Some("racer")), &f).await.is_ok()
                    }
                };
                (id, op, w, ok)
            });
        }
    }
    let mut outcomes: std::collections::HashMap<String, Vec<(usize, usize, bool)>> = Default::default();
    while let Some(r) = set.join_next().await {
        let (id, op, w, ok) = r.expect("writer task");
        outcomes.entry(id).or_default().push((op, w, ok));
    }
    for id in &ids {
        let fin = store.get(id, Owner::Any).await.expect("final state");
        assert!(fin.is_terminal(), "every task ends terminal");
        let ops = &outcomes[id];
        let status_wins = ops.iter().filter(|(op, _, ok)| *op < 2 && *ok).count();
        match fin.status {
            TaskStatus::Cancelled => assert_eq!(status_wins, 0, "a cancelled task had no other terminal write"),
            TaskStatus::Completed | TaskStatus::Failed => {
                assert_eq!(status_wins, 1, "exactly one terminal transition");
                let (op, _, _) = ops.iter().find(|(op, _, ok)| *op < 2 && *ok).copied().unwrap_or((9, 0, false));
                assert_eq!(fin.status, if op == 0 { TaskStatus::Completed } else { TaskStatus::Failed });
            }
            s => panic!("unexpected final status {s:?}"),
        }
        for (_, w, _) in ops.iter().filter(|(op, _, ok)| *op == 3 && *ok) {
            assert!(fin.input_responses.contains_key(&format!("w{w}")), "acknowledged answer w{w} was lost");
        }
    }
}
