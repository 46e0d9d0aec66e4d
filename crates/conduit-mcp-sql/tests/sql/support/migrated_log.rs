//! A task change log migrated from schema 41, on either engine: the tasks
//! a schema-41 database holds (alice's short task, her legacy one, bob's,
//! then the short one's completion, in that order) and what the migrated
//! log must show of them.

use super::numbered::head_reaches;
use conduit_mcp::clock::ManualClock;
use conduit_mcp::ext::tasks::{ChangeQuery, CreateCaps, TaskChangeFeed, TaskRecord, TaskStore, new_task_id};
use conduit_mcp::protocol::tasks::TaskStatus;

const ALL: [TaskStatus; 5] =
    [TaskStatus::Working, TaskStatus::InputRequired, TaskStatus::Completed, TaskStatus::Failed, TaskStatus::Cancelled];

/// The tasks written at schema 41.
pub struct AtSchema41 {
    /// Alice's, expiring after a second (the cleanup takes it).
    pub short: TaskRecord,
    /// Alice's, in the 2025-11-25 table.
    pub legacy: TaskRecord,
    /// Bob's.
    pub bobs: TaskRecord,
}

impl AtSchema41 {
    /// Three new tasks, created at `now`.
    pub fn new(now: u64) -> Self {
        let task = |owner: &str, ttl| TaskRecord::new(new_task_id(), Some(owner.into()), now, Some(ttl));
        Self { short: task("alice", 1_000), legacy: task("alice", 600_000), bobs: task("bob", 600_000) }
    }

    /// The short task's completion, written after the three creates.
    pub fn done(&self) -> TaskRecord {
        let mut done = self.short.clone();
        done.status = TaskStatus::Completed;
        done.version += 1;
        done
    }
}

/// `owner`'s changes after `after`: (position, task, status).
async fn changes(feed: &dyn TaskChangeFeed, after: u64, owner: &str) -> Vec<(u64, String, TaskStatus)> {
    let page = feed.read(ChangeQuery::new(after, owner, &ALL, 100)).await.expect("read");
    page.changes.into_iter().map(|c| (c.seq, c.task_id, c.status)).collect()
}

/// After the migration of `t`: every position names its change still, a
/// cursor resumes where it was, a create at 42 follows them, a migrated
/// task takes its changes along when it goes, and positions are never
/// reused. Positions wait (bounded) for older transactions where the
/// engine numbers them after commit.
pub async fn check_migrated(store: &dyn TaskStore, clock: &ManualClock, t: &AtSchema41) {
    let feed = store.change_feed().expect("the store keeps a change log");
    let head = || async { feed.head().await.expect("head") };
    assert_eq!(head_reaches("the migrated log", 4, head).await, 4, "the completion is the fourth change");
    let alice = vec![
        (1, t.short.task_id.clone(), TaskStatus::Working),
        (2, t.legacy.task_id.clone(), TaskStatus::Working),
        (4, t.short.task_id.clone(), TaskStatus::Completed),
    ];
    assert_eq!(changes(feed.as_ref(), 0, "alice").await, alice, "every position names its change still");
    assert_eq!(changes(feed.as_ref(), 2, "alice").await, alice[2..], "a cursor at 2 resumes after 2");
    assert_eq!(changes(feed.as_ref(), 0, "bob").await, vec![(3, t.bobs.task_id.clone(), TaskStatus::Working)]);

    let new = TaskRecord::new(new_task_id(), Some("alice".into()), t.short.created_at_ms, Some(600_000));
    let new = store.create(new, CreateCaps::default()).await.expect("create at 42");
    assert_eq!(head_reaches("a create at 42", 5, head).await, 5);
    assert_eq!(changes(feed.as_ref(), 4, "alice").await, vec![(5, new.task_id.clone(), TaskStatus::Working)]);

    // A task migrated with its changes still takes them along when it goes.
    clock.advance(2_000);
    assert_eq!(store.cleanup(0).await.expect("cleanup"), 1);
    let left = changes(feed.as_ref(), 0, "alice").await;
    assert_eq!(left, vec![(2, t.legacy.task_id.clone(), TaskStatus::Working), (5, new.task_id, TaskStatus::Working)]);
    assert_eq!(head().await, 5, "positions are never reused");
}
