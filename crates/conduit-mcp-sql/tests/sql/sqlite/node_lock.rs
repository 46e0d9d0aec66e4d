//! The lock file that holds an SQLite node's id: refused to a second holder,
//! gone when the store lets go (closed or dropped), and a leftover from a
//! process that died is removed by the next node that starts — so node ids
//! that differ on every start leave nothing behind next to the database.

use crate::support;

use conduit_mcp::clock::SystemClock;
use conduit_mcp::ext::tasks::TaskStore;
use conduit_mcp::task::StoreError;
use conduit_mcp_sql::SqliteStore;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The node lock files next to `db`.
fn lock_files(db: &Path) -> Vec<PathBuf> {
    let name = db.file_name().and_then(|n| n.to_str()).expect("a file name").to_owned();
    let mut found: Vec<PathBuf> = std::fs::read_dir(db.parent().expect("a directory"))
        .expect("read the directory")
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&format!("{name}.node-")) && n.ends_with(".lock"))
        })
        .collect();
    found.sort();
    found
}

async fn open(db: &support::TempDb) -> SqliteStore {
    SqliteStore::open(db.path(), Arc::new(SystemClock)).await.expect("open")
}

#[tokio::test]
async fn a_node_lock_file_lives_as_long_as_its_holder() {
    let db = support::TempDb::new("node-lock");
    let a = open(&db).await;
    a.claim_node("node-a").await.expect("claim");
    let held = lock_files(db.as_path());
    assert_eq!(held.len(), 1, "{held:?}");

    // A second store (another process, as far as the lock is concerned) is refused the same id.
    let b = open(&db).await;
    assert!(matches!(b.claim_node("node-a").await, Err(StoreError::Refused(_))));
    // Claiming another id does not take the held file away.
    b.claim_node("node-b").await.expect("another id");
    assert_eq!(lock_files(db.as_path()).len(), 2);

    a.close().await;
    assert_eq!(lock_files(db.as_path()).len(), 1, "closing lets go of node-a's file");
    drop(b);
    assert_eq!(lock_files(db.as_path()), Vec::<PathBuf>::new(), "dropping lets go of node-b's file");
}

#[tokio::test]
async fn a_leftover_lock_file_is_removed_by_the_next_node() {
    let db = support::TempDb::new("node-leftover");
    // What a process killed with -9 leaves: a lock file nobody holds.
    let leftover = PathBuf::from(format!("{}.node-00000000deadbeef.lock", db.path()));
    std::fs::write(&leftover, b"").expect("a leftover");
    let held_by_other = open(&db).await;
    held_by_other.claim_node("still-alive").await.expect("claim");

    let store = open(&db).await;
    store.claim_node("new-node").await.expect("claim");
    assert!(!leftover.exists(), "the leftover is gone");
    assert_eq!(lock_files(db.as_path()).len(), 2, "the live holder's file and the new node's stay");
    // The live holder still holds its id.
    let third = open(&db).await;
    assert!(matches!(third.claim_node("still-alive").await, Err(StoreError::Refused(_))));
    drop((store, held_by_other, third));
    assert_eq!(lock_files(db.as_path()), Vec::<PathBuf>::new());
}
