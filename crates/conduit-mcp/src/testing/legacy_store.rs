//! The `LegacyTaskStore` contract suite: the whole `TaskStore` suite (both
//! caps and the terminal bounds included), then the listing checks (owner
//! scoping, order, paging, cursors, clamping, removed terminal tasks).

use super::{ContractOptions, START, store_contract};
use crate::clock::{Clock, ManualClock};
use crate::ext::tasks::store::legacy_store::{LegacyTaskStore, MAX_PAGE_SIZE};
use crate::ext::tasks::store::{CreateCaps, Owner, StatusFields, TaskRecord, new_task_id};
use crate::protocol::tasks::TaskStatus;
use crate::task::StoreError;
use serde_json::json;
use std::future::Future;
use std::sync::Arc;

/// Runs [`store_contract`] and every listing check against stores built by
/// `make`, which must return an empty store on each call (the listing checks
/// count what an owner has, so each runs on a store of its own).
///
/// ```no_run
/// # use conduit_mcp::ext::tasks::legacy_store::MemoryLegacyStore;
/// // In a test file, under `#[tokio::test(flavor = "multi_thread")]`:
/// async fn my_store_meets_the_legacy_contract() {
///     conduit_mcp::testing::legacy_store_contract(
///         |clock| async move { MemoryLegacyStore::with_clock(clock) },
///         conduit_mcp::testing::ContractOptions::race(1_000, 16),
///     )
///     .await;
/// }
/// ```
pub async fn legacy_store_contract<S, F, Fut>(make: F, options: ContractOptions)
where
    S: LegacyTaskStore,
    F: Fn(Arc<dyn Clock>) -> Fut,
    Fut: Future<Output = S>,
{
    // Legacy stores enforce both caps, the per-principal one included (issue 20, finding 6).
    store_contract(&make, options).await;
    let clock = ManualClock::new(START);
    let fresh = || make(Arc::new(clock.clone()));
    list_is_owner_scoped_and_ordered(&fresh().await, &clock).await;
    pages_cover_every_task_once(&fresh().await, &clock).await;
    cursors_are_tamper_evident(&fresh().await, &clock).await;
    expired_tasks_are_not_listed(&fresh().await, &clock).await;
    page_size_is_clamped(&fresh().await, &clock).await;
    removed_terminal_tasks_are_not_listed(&fresh().await, &clock).await;
}

/// Terminal tasks are listed as they ended; once `trim_terminal` or
/// `evict_oldest_terminal` removed one, it is listed nowhere (the listing
/// index forgets it with the record).
pub async fn removed_terminal_tasks_are_not_listed(store: &dyn LegacyTaskStore, clock: &ManualClock) {
    use crate::ext::tasks::store::TerminalBound;
    let all = create_n(store, clock, Some("alice"), 4).await;
    for id in &all[..3] {
        clock.advance(1);
        store.cancel(id, Owner::Is(Some("alice")), None).await.expect("cancel");
    }
    let listed = store.list(Some("alice"), None, 50).await.expect("list");
    let statuses: Vec<TaskStatus> = listed.tasks.iter().map(|t| t.status).collect();
    assert_eq!(ids(&listed.tasks), all, "cancelled tasks are listed until their TTL");
    assert_eq!(statuses[..3], [TaskStatus::Cancelled; 3]);
    assert!(store.evict_oldest_terminal("alice").await.expect("evict"));
    assert_eq!(ids(&store.list(Some("alice"), None, 50).await.expect("list").tasks), all[1..].to_vec());
    let trimmed = store.trim_terminal("alice", TerminalBound::new(Some(1), None)).await.expect("trim");
    assert_eq!(trimmed, 1, "one of the two terminal tasks left");
    let (rest, _) = list_all(store, Some("alice"), 1).await;
    assert_eq!(rest, vec![all[2].clone(), all[3].clone()], "the newest terminal task and the live one");
    clock.advance(3_600_001);
    store.cleanup(3_600_000).await.expect("cleanup");
    assert!(store.list(Some("alice"), None, 50).await.expect("list").tasks.is_empty(), "all past their TTL");
}

fn ids(tasks: &[TaskRecord]) -> Vec<String> {
    tasks.iter().map(|t| t.task_id.clone()).collect()
}

/// Creates `n` tasks of `owner`, each one millisecond after the last; returns their ids in order.
async fn create_n(store: &dyn LegacyTaskStore, clock: &ManualClock, owner: Option<&str>, n: usize) -> Vec<String> {
    let mut out = Vec::new();
    for _ in 0..n {
        clock.advance(1);
        let r = TaskRecord::new(new_task_id(), owner.map(String::from), clock.now_ms(), Some(3_600_000));
        out.push(r.task_id.clone());
        store.create(r, CreateCaps::default()).await.expect("create");
    }
    out
}

/// Everything `owner` lists, page by page, with the pages' sizes.
async fn list_all(store: &dyn LegacyTaskStore, owner: Option<&str>, limit: usize) -> (Vec<String>, Vec<usize>) {
    let (mut all, mut sizes, mut cursor) = (Vec::new(), Vec::new(), None::<String>);
    loop {
        let page = store.list(owner, cursor.as_deref(), limit).await.expect("list");
        sizes.push(page.tasks.len());
        all.extend(ids(&page.tasks));
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => return (all, sizes),
        }
        assert!(sizes.len() <= 10_000, "the pages never end");
    }
}

/// `list` returns exactly the caller's tasks, oldest first, terminal ones included.
pub async fn list_is_owner_scoped_and_ordered(store: &dyn LegacyTaskStore, clock: &ManualClock) {
    let alice = create_n(store, clock, Some("alice"), 3).await;
    let bob = create_n(store, clock, Some("bob"), 2).await;
    let mut alice_all = alice.clone();
    alice_all.extend(create_n(store, clock, Some("alice"), 2).await);
    let anon = create_n(store, clock, None, 2).await;
    let fields = StatusFields { result: Some(json!({"content": []})), ..StatusFields::default() };
    store.put_status(&alice[1], TaskStatus::Completed, fields).await.expect("complete");
    store.cancel(&bob[0], Owner::Is(Some("bob")), None).await.expect("cancel");
    let page = store.list(Some("alice"), None, 50).await.expect("list");
    assert_eq!(ids(&page.tasks), alice_all, "alice's tasks, oldest first, and nobody else's");
    assert_eq!(page.next_cursor, None, "one page holds them all");
    assert_eq!(page.tasks[1].status, TaskStatus::Completed, "listed as stored, terminal included");
    assert_eq!(ids(&store.list(Some("bob"), None, 50).await.expect("list").tasks), bob);
    assert_eq!(ids(&store.list(None, None, 50).await.expect("list").tasks), anon, "unauthenticated lists its own");
    let carol = store.list(Some("carol"), None, 50).await.expect("list");
    assert!(carol.tasks.is_empty() && carol.next_cursor.is_none(), "nobody else's tasks leak to a stranger");
    assert!(store.list(Some(""), None, 50).await.expect("list").tasks.is_empty(), "'' is not unauthenticated");
}

/// Paging walks every task exactly once, in order, also across equal creation times.
pub async fn pages_cover_every_task_once(store: &dyn LegacyTaskStore, clock: &ManualClock) {
    let mut expected = create_n(store, clock, Some("alice"), 5).await;
    // Four created in the same millisecond: ordered by id.
    clock.advance(1);
    let mut same: Vec<String> = Vec::new();
    for _ in 0..4 {
        let r = TaskRecord::new(new_task_id(), Some("alice".into()), clock.now_ms(), Some(3_600_000));
        same.push(r.task_id.clone());
        store.create(r, CreateCaps::default()).await.expect("create");
    }
    same.sort();
    expected.extend(same);
    expected.extend(create_n(store, clock, Some("alice"), 2).await);
    create_n(store, clock, Some("bob"), 3).await;
    let (all, sizes) = list_all(store, Some("alice"), 3).await;
    assert_eq!(all, expected, "every task once, in (created, id) order");
    assert_eq!(sizes, vec![3, 3, 3, 2], "full pages, then the rest; no empty last page");
    let (all, sizes) = list_all(store, Some("alice"), expected.len()).await;
    assert_eq!((all.len(), sizes), (expected.len(), vec![expected.len()]), "an exact fit has no next page");
    // A task created after a cursor was issued shows up on a later page.
    let first = store.list(Some("alice"), None, 10).await.expect("list");
    let later = create_n(store, clock, Some("alice"), 1).await;
    let rest = store.list(Some("alice"), first.next_cursor.as_deref(), 10).await.expect("list");
    assert_eq!(ids(&rest.tasks), [&expected[10..], &later[..]].concat());
}

/// An altered cursor, another caller's cursor, or garbage: `InvalidCursor`.
pub async fn cursors_are_tamper_evident(store: &dyn LegacyTaskStore, clock: &ManualClock) {
    create_n(store, clock, Some("alice"), 3).await;
    create_n(store, clock, None, 3).await;
    let page = store.list(Some("alice"), None, 1).await.expect("list");
    let cursor = page.next_cursor.expect("more pages");
    assert!(store.list(Some("alice"), Some(&cursor), 1).await.is_ok(), "the cursor works for its owner");
    assert_eq!(store.list(Some("bob"), Some(&cursor), 1).await, Err(StoreError::InvalidCursor), "not for another");
    assert_eq!(store.list(None, Some(&cursor), 1).await, Err(StoreError::InvalidCursor), "not unauthenticated");
    let mut chars: Vec<char> = cursor.chars().collect();
    let mid = chars.len() / 2;
    chars[mid] = if chars[mid] == 'A' { 'B' } else { 'A' };
    let altered: String = chars.into_iter().collect();
    assert_eq!(store.list(Some("alice"), Some(&altered), 1).await, Err(StoreError::InvalidCursor));
    for garbage in ["", "not a cursor", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", &"x".repeat(10_000)] {
        assert_eq!(store.list(Some("alice"), Some(garbage), 1).await, Err(StoreError::InvalidCursor), "{garbage:.20}");
    }
    let anon = store.list(None, None, 1).await.expect("list").next_cursor.expect("more pages");
    assert!(store.list(None, Some(&anon), 1).await.is_ok());
    assert_eq!(store.list(Some("alice"), Some(&anon), 1).await, Err(StoreError::InvalidCursor));
}

/// Expired tasks are never listed, before or after a sweep; a cursor past a
/// swept task still resumes.
pub async fn expired_tasks_are_not_listed(store: &dyn LegacyTaskStore, clock: &ManualClock) {
    clock.advance(1);
    let short = TaskRecord::new(new_task_id(), Some("alice".into()), clock.now_ms(), Some(100));
    store.create(short.clone(), CreateCaps::default()).await.expect("create");
    let long = create_n(store, clock, Some("alice"), 3).await;
    let first = store.list(Some("alice"), None, 1).await.expect("list");
    assert_eq!(ids(&first.tasks), vec![short.task_id.clone()]);
    clock.advance(101);
    assert_eq!(ids(&store.list(Some("alice"), None, 50).await.expect("list").tasks), long, "expired, not yet swept");
    store.cleanup(3_600_000).await.expect("cleanup");
    assert_eq!(ids(&store.list(Some("alice"), None, 50).await.expect("list").tasks), long, "swept");
    let rest = store.list(Some("alice"), first.next_cursor.as_deref(), 50).await.expect("list");
    assert_eq!(ids(&rest.tasks), long, "a cursor at a swept task resumes after it");
}

/// Page sizes are brought into `1..=MAX_PAGE_SIZE`.
pub async fn page_size_is_clamped(store: &dyn LegacyTaskStore, clock: &ManualClock) {
    let all = create_n(store, clock, Some("alice"), MAX_PAGE_SIZE + 5).await;
    let one = store.list(Some("alice"), None, 0).await.expect("list");
    assert_eq!(ids(&one.tasks), vec![all[0].clone()], "a page of zero is a page of one");
    let big = store.list(Some("alice"), None, 1_000_000).await.expect("list");
    assert_eq!(big.tasks.len(), MAX_PAGE_SIZE, "no page is larger than MAX_PAGE_SIZE");
    let rest = store.list(Some("alice"), big.next_cursor.as_deref(), usize::MAX).await.expect("list");
    assert_eq!(ids(&rest.tasks), all[MAX_PAGE_SIZE..].to_vec());
    assert_eq!(rest.next_cursor, None);
}
