//! The SQLite task change log (migration 0035): written in the task write's
//! own transaction, both task tables on one log, positions that survive a
//! restart, a task's changes removed with it, nothing logged before a reader
//! turned the log on.

use crate::support::TempDb;
use conduit_mcp::clock::{Clock, ManualClock};
use conduit_mcp::ext::tasks::{
    ChangeQuery, CreateCaps, Owner, StatusFields, TaskChangeFeed, TaskRecord, TaskStore, new_task_id,
};
use conduit_mcp::protocol::tasks::TaskStatus;
use conduit_mcp::task::{HookError, StoreTransaction, TransactionHook, WrittenTask};
use conduit_mcp_sql::SqliteStore;
use std::sync::Arc;

const ALL: [TaskStatus; 5] =
    [TaskStatus::Working, TaskStatus::InputRequired, TaskStatus::Completed, TaskStatus::Failed, TaskStatus::Cancelled];

fn record(clock: &ManualClock, owner: &str) -> TaskRecord {
    TaskRecord::new(new_task_id(), Some(owner.into()), clock.now_ms(), Some(60_000))
}

fn message(m: Option<&str>) -> StatusFields {
    let mut f = StatusFields::default();
    f.status_message = m.map(String::from);
    f
}

/// A hook that fails: the write it rides on rolls back.
struct Refuse;

#[async_trait::async_trait]
impl TransactionHook for Refuse {
    async fn run(&self, _tx: &mut dyn StoreTransaction, _task: WrittenTask<'_>) -> Result<(), HookError> {
        Err("refused".into())
    }
}

async fn changes(feed: &dyn TaskChangeFeed, after: u64, owner: &str) -> Vec<(String, TaskStatus, Option<String>)> {
    let page = feed.read(ChangeQuery::new(after, owner, &ALL, 100)).await.expect("read");
    page.changes.into_iter().map(|c| (c.task_id, c.status, c.status_message)).collect()
}

#[tokio::test]
async fn the_log_follows_writes_of_both_tables_in_their_transactions_and_survives_a_restart() {
    let db = TempDb::new("changes");
    let clock = ManualClock::new(1_800_000_000_000);
    let store = SqliteStore::open(db.path(), Arc::new(clock.clone())).await.expect("open");
    let legacy = store.legacy().await.expect("legacy store");

    // Before anyone reads the log, nothing is logged.
    let early = store.create(record(&clock, "alice"), CreateCaps::default()).await.unwrap();
    let feed = store.change_feed().expect("SQLite keeps a change log");
    assert_eq!(feed.head().await.unwrap(), 0);
    let epoch = feed.epoch();
    assert_ne!(epoch, 0);
    assert_eq!(legacy.change_feed().expect("the legacy table's log").epoch(), 0, "not read yet");

    let a = store.create(record(&clock, "alice"), CreateCaps::default()).await.unwrap();
    let b = legacy.create(record(&clock, "alice"), CreateCaps::default()).await.unwrap();
    let c = store.create(record(&clock, "bob"), CreateCaps::default()).await.unwrap();
    clock.advance(5);
    store.put_status(&a.task_id, TaskStatus::Working, message(Some("halfway"))).await.unwrap();
    // A write that changes neither status nor message is not a change.
    store.update(&a.task_id, Owner::Any, &|r| Ok(r.clone())).await.unwrap();
    legacy.put_status(&b.task_id, TaskStatus::Completed, message(None)).await.unwrap();
    // A write whose transaction rolls back leaves no change.
    let refused = store.create_with(record(&clock, "alice"), CreateCaps::default(), &Refuse).await;
    assert!(refused.is_err());
    let refused = store
        .update_with(
            &a.task_id,
            Owner::Any,
            &|r| {
                let mut n = r.clone();
                n.status = TaskStatus::Failed;
                Ok(n)
            },
            &Refuse,
        )
        .await;
    assert!(refused.is_err());
    drop(early);

    let got = changes(feed.as_ref(), 0, "alice").await;
    let want = vec![
        (a.task_id.clone(), TaskStatus::Working, None),
        (b.task_id.clone(), TaskStatus::Working, None),
        (a.task_id.clone(), TaskStatus::Working, Some("halfway".into())),
        (b.task_id.clone(), TaskStatus::Completed, None),
    ];
    assert_eq!(got, want, "both tables, in commit order, alice's only");
    assert_eq!(changes(feed.as_ref(), 0, "bob").await, vec![(c.task_id.clone(), TaskStatus::Working, None)]);
    let head = feed.head().await.unwrap();
    assert_eq!(head, 5);

    // Filters and limits.
    let done = [TaskStatus::Completed];
    let page = feed.read(ChangeQuery::new(0, "alice", &done, 10)).await.unwrap();
    assert_eq!(page.changes.len(), 1);
    assert_eq!(page.through, head);
    let page = feed.read(ChangeQuery::new(0, "alice", &ALL, 2)).await.unwrap();
    assert_eq!((page.changes.len(), page.more, page.through), (2, true, page.changes[1].seq));
    let one = feed.read(ChangeQuery::new(0, "alice", &ALL, 10).task(Some(&b.task_id))).await.unwrap();
    assert_eq!(one.changes.len(), 2);
    let floor = feed.read(ChangeQuery::new(0, "alice", &ALL, 10).floor(Some(clock.now_ms()))).await.unwrap();
    assert_eq!(floor.changes.len(), 2, "only what was written at or after the floor");
    assert!(floor.truncated);
    let beyond = feed.read(ChangeQuery::new(head + 100, "alice", &ALL, 10)).await.unwrap();
    assert!(beyond.truncated && beyond.changes.is_empty());

    // A restart: the same log, the same positions, the same epoch.
    store.close().await;
    drop((store, legacy, feed));
    let store = SqliteStore::open(db.path(), Arc::new(clock.clone())).await.expect("reopen");
    let feed = store.change_feed().unwrap();
    assert_eq!(feed.head().await.unwrap(), head);
    assert_eq!(feed.epoch(), epoch);
    store.put_status(&a.task_id, TaskStatus::Completed, message(Some("done"))).await.unwrap();
    let after = changes(feed.as_ref(), head, "alice").await;
    assert_eq!(after, vec![(a.task_id.clone(), TaskStatus::Completed, Some("done".into()))]);

    // A task's changes go with it.
    clock.advance(120_000);
    assert!(store.cleanup(0).await.unwrap() >= 2);
    assert!(changes(feed.as_ref(), 0, "alice").await.iter().all(|(id, ..)| *id != a.task_id));
    assert_eq!(feed.head().await.unwrap(), head + 1, "positions are never reused");
}
