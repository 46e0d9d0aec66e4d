//! The terminal bounds of the `TaskStore` contract (issue 34): what
//! `trim_terminal` keeps of an owner's terminal tasks, and the room
//! `evict_oldest_terminal` makes under the row cap.

use super::record;
use crate::clock::{Clock, ManualClock};
use crate::ext::tasks::store::{CreateCaps, Owner, StatusFields, TaskRecord, TaskStore, new_task_id};
use crate::protocol::tasks::TaskStatus;
use crate::task::StoreError;
use serde_json::json;

/// Ends a new task of `owner` whose result is `pad` bytes of text, one
/// millisecond after the last; returns it as stored.
pub(super) async fn ended_task(
    store: &dyn TaskStore,
    clock: &ManualClock,
    owner: Option<&str>,
    pad: usize,
) -> TaskRecord {
    clock.advance(1);
    let r = record(owner, Some(3_600_000), clock.now_ms());
    store.create(r.clone(), CreateCaps::default()).await.expect("create");
    clock.advance(1);
    let result = json!({ "content": [{ "type": "text", "text": "x".repeat(pad) }] });
    let fields = StatusFields { result: Some(result), ..StatusFields::default() };
    store.put_status(&r.task_id, TaskStatus::Completed, fields).await.expect("complete")
}

/// Which of `ids` the store still has.
async fn present(store: &dyn TaskStore, ids: &[&TaskRecord]) -> Vec<bool> {
    let mut out = Vec::new();
    for r in ids {
        out.push(store.get(&r.task_id, Owner::Any).await.is_ok());
    }
    out
}

/// `trim_terminal` removes an owner's oldest terminal tasks until the rest
/// are within the bound (its count, and its bytes: records as JSON), always
/// keeping the newest; its live tasks and everyone else's stay.
pub async fn trim_keeps_the_newest_terminal_tasks_within_the_bound(store: &dyn TaskStore, clock: &ManualClock) {
    use crate::ext::tasks::store::TerminalBound;
    let owner = format!("trim-{}", new_task_id());
    let live = record(Some(&owner), Some(3_600_000), clock.now_ms());
    store.create(live.clone(), CreateCaps::default()).await.expect("create");
    let others = ended_task(store, clock, Some("someone-else"), 1_000).await;
    let anon = ended_task(store, clock, None, 1_000).await;
    let mut ended = Vec::new();
    for _ in 0..5 {
        ended.push(ended_task(store, clock, Some(&owner), 1_000).await);
    }
    let size = ended[4].stored_len();
    assert!((1_000..2_000).contains(&size), "a record of a 1 000-byte result is {size} bytes");
    let untouched = [&live, &others, &anon];
    let none = TerminalBound::new(Some(5), Some(5 * size + 100));
    assert_eq!(store.trim_terminal(&owner, none).await.expect("trim"), 0, "within the bound, nothing goes");
    let bytes = TerminalBound::new(None, Some(2 * size + size / 2));
    assert_eq!(store.trim_terminal(&owner, bytes).await.expect("trim"), 3, "two fit in 2.5 records' bytes");
    assert_eq!(present(store, &ended.iter().collect::<Vec<_>>()).await, [false, false, false, true, true]);
    assert_eq!(store.trim_terminal(&owner, bytes).await.expect("trim"), 0, "trimming again changes nothing");
    let rows = TerminalBound::new(Some(1), None);
    assert_eq!(store.trim_terminal(&owner, rows).await.expect("trim"), 1, "at most one terminal task");
    let tiny = TerminalBound::new(Some(1), Some(1));
    assert_eq!(store.trim_terminal(&owner, tiny).await.expect("trim"), 0, "the newest stays, whatever its size");
    assert_eq!(present(store, &ended.iter().collect::<Vec<_>>()).await, [false, false, false, false, true]);
    assert_eq!(present(store, &untouched).await, [true, true, true], "live tasks and others' stay");
    // What the owner keeps is counted again as its tasks end.
    let newer = ended_task(store, clock, Some(&owner), 1_000).await;
    assert_eq!(store.trim_terminal(&owner, rows).await.expect("trim"), 1);
    assert_eq!(present(store, &[&ended[4], &newer]).await, [false, true]);
    assert_eq!(store.trim_terminal("nobody", rows).await.expect("trim"), 0, "an owner with nothing");
}

/// At the row cap, `evict_oldest_terminal` frees a slot by removing the
/// oldest terminal task of the owner named, never anyone else's: the next
/// create fits, and only that owner's live tasks stay for good.
pub async fn a_terminal_task_makes_room_under_the_row_cap(store: &dyn TaskStore, clock: &ManualClock) {
    let caps = CreateCaps::new(Some(4), Some(10));
    let theirs = ended_task(store, clock, Some("bob"), 10).await;
    let live = record(Some("alice"), Some(3_600_000), clock.now_ms());
    store.create(live.clone(), caps).await.expect("create");
    let mine_old = ended_task(store, clock, Some("alice"), 10).await;
    let mine_new = ended_task(store, clock, Some("alice"), 10).await;
    let next = || record(Some("alice"), Some(3_600_000), clock.now_ms());
    assert_eq!(store.create(next(), caps).await, Err(StoreError::TaskLimitReached), "four rows");
    assert!(store.evict_oldest_terminal("alice").await.expect("evict"), "alice has terminal tasks");
    assert_eq!(present(store, &[&mine_old, &mine_new, &theirs]).await, [false, true, true], "her oldest went");
    store.create(next(), caps).await.expect("the room it made");
    assert_eq!(store.create(next(), caps).await, Err(StoreError::TaskLimitReached));
    assert!(store.evict_oldest_terminal("alice").await.expect("evict"), "her newest terminal task");
    store.create(next(), caps).await.expect("the room it made");
    assert!(!store.evict_oldest_terminal("alice").await.expect("evict"), "only live tasks of hers are left");
    assert!(!store.evict_oldest_terminal("carol").await.expect("evict"), "carol has nothing");
    assert_eq!(store.create(next(), caps).await, Err(StoreError::TaskLimitReached), "three live rows of hers");
    assert_eq!(present(store, &[&theirs, &live]).await, [true, true], "never another's, never a live one");
}
