//! A database at schema 41 whose task change log holds changes migrates to 42
//! (the log's task index by creation time): every position keeps its change,
//! a cursor resumes where it was, new changes follow the old ones, and the
//! migrated changes still go with their task.

use crate::support::TempDb;
use conduit_mcp::clock::{Clock, ManualClock};
use conduit_mcp::ext::tasks::{ChangeQuery, CreateCaps, TaskChangeFeed, TaskRecord, TaskStore, new_task_id};
use conduit_mcp::protocol::tasks::TaskStatus;
use conduit_mcp_sql::SqliteStore;
use sqlx::Connection;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use std::sync::Arc;

/// Schema 41: every migration before 42, with the version each one records.
const SCHEMA_41: [(i64, &str); 9] = [
    (1, include_str!("../../../migrations/sqlite/0001_conduit_tasks.sql")),
    (2, include_str!("../../../migrations/sqlite/0002_conduit_legacy_tasks.sql")),
    (13, include_str!("../../../migrations/sqlite/0013_owner_index.sql")),
    (20, include_str!("../../../migrations/sqlite/0020_session_client_key.sql")),
    (34, include_str!("../../../migrations/sqlite/0034_terminal_tasks.sql")),
    (35, include_str!("../../../migrations/sqlite/0035_task_changes.sql")),
    (37, include_str!("../../../migrations/sqlite/0037_events_keys.sql")),
    (40, include_str!("../../../migrations/sqlite/0040_dpop_jti.sql")),
    (41, include_str!("../../../migrations/sqlite/0041_webhooks.sql")),
];

const ALL: [TaskStatus; 5] =
    [TaskStatus::Working, TaskStatus::InputRequired, TaskStatus::Completed, TaskStatus::Failed, TaskStatus::Cancelled];

/// Writes `r` into `table` as a schema-41 store would (its triggers log the change).
async fn put(conn: &mut SqliteConnection, table: &str, r: &TaskRecord) {
    let doc = serde_json::to_string(r).expect("record as JSON");
    let owner = r.owner.clone().map(|o| format!("+{o}"));
    let legacy = if table == "conduit_legacy_tasks" { ", list_owner" } else { "" };
    let legacy_value = if table == "conduit_legacy_tasks" { ", ?8" } else { "" };
    let sql = format!(
        "INSERT INTO {table} (task_id, owner, status, version, created_at_ms, expires_at_ms, doc{legacy}) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7{legacy_value}) \
         ON CONFLICT (task_id) DO UPDATE SET status = excluded.status, version = excluded.version, doc = excluded.doc"
    );
    let mut q = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(&r.task_id)
        .bind(r.owner.as_deref())
        .bind(r.status.as_str())
        .bind(r.version as i64)
        .bind(r.created_at_ms as i64)
        .bind(r.ttl_ms.map(|t| (r.created_at_ms + t) as i64))
        .bind(doc);
    if !legacy.is_empty() {
        q = q.bind(owner);
    }
    q.execute(conn).await.expect("write a task at schema 41");
}

async fn changes(feed: &dyn TaskChangeFeed, after: u64, owner: &str) -> Vec<(u64, String, TaskStatus)> {
    let page = feed.read(ChangeQuery::new(after, owner, &ALL, 100)).await.expect("read");
    page.changes.into_iter().map(|c| (c.seq, c.task_id, c.status)).collect()
}

#[tokio::test]
async fn a_change_log_at_schema_41_keeps_its_positions_and_its_tasks_through_the_migration() {
    let db = TempDb::new("changes-41");
    let clock = ManualClock::new(1_800_000_000_000);
    let now = clock.now_ms();
    let opts = SqliteConnectOptions::new().filename(db.path()).create_if_missing(true);
    let mut conn = SqliteConnection::connect_with(&opts).await.expect("connect");
    sqlx::raw_sql(
        "CREATE TABLE conduit_schema_migrations (version INTEGER NOT NULL PRIMARY KEY, \
         description TEXT NOT NULL, applied_at_ms INTEGER NOT NULL)",
    )
    .execute(&mut conn)
    .await
    .expect("migrations table");
    for (version, sql) in SCHEMA_41 {
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql)).execute(&mut conn).await.expect("a schema-41 migration");
        sqlx::query("INSERT INTO conduit_schema_migrations VALUES (?1, 'schema 41', 0)")
            .bind(version)
            .execute(&mut conn)
            .await
            .expect("record it");
    }
    sqlx::raw_sql("UPDATE conduit_task_change_log SET enabled = 1").execute(&mut conn).await.expect("log on");
    let short = TaskRecord::new(new_task_id(), Some("alice".into()), now, Some(1_000));
    let legacy = TaskRecord::new(new_task_id(), Some("alice".into()), now, Some(600_000));
    let bobs = TaskRecord::new(new_task_id(), Some("bob".into()), now, Some(600_000));
    put(&mut conn, "conduit_tasks", &short).await;
    put(&mut conn, "conduit_legacy_tasks", &legacy).await;
    put(&mut conn, "conduit_tasks", &bobs).await;
    let mut done = short.clone();
    done.status = TaskStatus::Completed;
    done.version += 1;
    put(&mut conn, "conduit_tasks", &done).await;
    conn.close().await.expect("close");

    let store = SqliteStore::open(db.path(), Arc::new(clock.clone())).await.expect("migrate to 42");
    let feed = store.change_feed().expect("SQLite keeps a change log");
    assert_eq!(feed.head().await.unwrap(), 4, "the head is where schema 41 left it");
    let alice = vec![
        (1, short.task_id.clone(), TaskStatus::Working),
        (2, legacy.task_id.clone(), TaskStatus::Working),
        (4, short.task_id.clone(), TaskStatus::Completed),
    ];
    assert_eq!(changes(feed.as_ref(), 0, "alice").await, alice, "every position names its change still");
    assert_eq!(changes(feed.as_ref(), 2, "alice").await, alice[2..], "a cursor at 2 resumes after 2");
    assert_eq!(changes(feed.as_ref(), 0, "bob").await, vec![(3, bobs.task_id.clone(), TaskStatus::Working)]);

    let new = TaskRecord::new(new_task_id(), Some("alice".into()), now, Some(600_000));
    let new = store.create(new, CreateCaps::default()).await.expect("create at 42");
    assert_eq!(changes(feed.as_ref(), 4, "alice").await, vec![(5, new.task_id.clone(), TaskStatus::Working)]);

    // A task migrated with its changes still takes them along when it goes.
    clock.advance(2_000);
    assert_eq!(store.cleanup(0).await.expect("cleanup"), 1);
    let left = changes(feed.as_ref(), 0, "alice").await;
    assert_eq!(left, vec![(2, legacy.task_id.clone(), TaskStatus::Working), (5, new.task_id, TaskStatus::Working)]);
    assert_eq!(feed.head().await.unwrap(), 5, "positions are never reused");
}
