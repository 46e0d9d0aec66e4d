//! A database at schema 41 whose task change log holds changes migrates to 42
//! (the log's task index by creation time): every position keeps its change,
//! a cursor resumes where it was, new changes follow the old ones, and the
//! migrated changes still go with their task. A database at schema 42 migrates
//! to 43 (status message and update time as columns): its rows get both from
//! their documents, and the log compares and records them from there.

use crate::support::TempDb;
use crate::support::migrated_log::{AtSchema41, check_migrated};
use conduit_mcp::clock::{Clock, ManualClock};
use conduit_mcp::ext::tasks::{ChangeQuery, Owner, StatusFields, TaskRecord, TaskStore, new_task_id};
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

/// The migration that makes schema 42 of schema 41.
const TO_42: (i64, &str) = (42, include_str!("../../../migrations/sqlite/0042_task_changes_by_creation.sql"));

/// A database at `db` with `migrations` applied and recorded, its change log on.
async fn at_schema(db: &TempDb, migrations: &[(i64, &str)]) -> SqliteConnection {
    let opts = SqliteConnectOptions::new().filename(db.path()).create_if_missing(true);
    let mut conn = SqliteConnection::connect_with(&opts).await.expect("connect");
    sqlx::raw_sql(
        "CREATE TABLE conduit_schema_migrations (version INTEGER NOT NULL PRIMARY KEY, \
         description TEXT NOT NULL, applied_at_ms INTEGER NOT NULL)",
    )
    .execute(&mut conn)
    .await
    .expect("migrations table");
    for &(version, sql) in migrations {
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql)).execute(&mut conn).await.expect("an older migration");
        sqlx::query("INSERT INTO conduit_schema_migrations VALUES (?1, 'older schema', 0)")
            .bind(version)
            .execute(&mut conn)
            .await
            .expect("record it");
    }
    sqlx::raw_sql("UPDATE conduit_task_change_log SET enabled = 1").execute(&mut conn).await.expect("log on");
    conn
}

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

#[tokio::test]
async fn a_change_log_at_schema_41_keeps_its_positions_and_its_tasks_through_the_migration() {
    let db = TempDb::new("changes-41");
    let clock = ManualClock::new(1_800_000_000_000);
    let now = clock.now_ms();
    let mut conn = at_schema(&db, &SCHEMA_41).await;
    let t = AtSchema41::new(now);
    put(&mut conn, "conduit_tasks", &t.short).await;
    put(&mut conn, "conduit_legacy_tasks", &t.legacy).await;
    put(&mut conn, "conduit_tasks", &t.bobs).await;
    put(&mut conn, "conduit_tasks", &t.done()).await;
    conn.close().await.expect("close");

    let store = SqliteStore::open(db.path(), Arc::new(clock.clone())).await.expect("migrate to 42");
    check_migrated(&store, &clock, &t).await;
}

#[tokio::test]
async fn status_messages_become_columns_at_43_and_the_log_reads_them_from_there() {
    let db = TempDb::new("changes-42");
    let clock = ManualClock::new(1_800_000_000_000);
    let now = clock.now_ms();
    let mut schema_42 = SCHEMA_41.to_vec();
    schema_42.push(TO_42);
    let mut conn = at_schema(&db, &schema_42).await;
    let with_message = |m: &str| {
        let mut r = TaskRecord::new(new_task_id(), Some("alice".into()), now, Some(600_000));
        r.status_message = Some(m.into());
        r
    };
    let (task, legacy) = (with_message("warming up"), with_message("in the old table"));
    put(&mut conn, "conduit_tasks", &task).await;
    put(&mut conn, "conduit_legacy_tasks", &legacy).await;
    conn.close().await.expect("close");

    let store = SqliteStore::open(db.path(), Arc::new(clock.clone())).await.expect("migrate to 43");
    let opts = SqliteConnectOptions::new().filename(db.path());
    let mut conn = SqliteConnection::connect_with(&opts).await.expect("connect");
    for (table, r) in [("conduit_tasks", &task), ("conduit_legacy_tasks", &legacy)] {
        let sql = format!("SELECT status_message, updated_at_ms FROM {table} WHERE task_id = ?1");
        let row: (Option<String>, Option<i64>) = sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(&r.task_id)
            .fetch_one(&mut conn)
            .await
            .expect("the migrated row");
        assert_eq!(row, (r.status_message.clone(), Some(now as i64)), "{table}: filled from the document");
    }
    conn.close().await.expect("close");

    let feed = store.change_feed().expect("the store keeps a change log");
    let head = feed.head().await.expect("head");
    assert_eq!(head, 2, "the two creates at 42");
    // The same message again is no change; a new one is, with its text and time.
    store.update(&task.task_id, Owner::Any, &|r| Ok(r.clone())).await.expect("rewrite");
    assert_eq!(feed.head().await.expect("head"), head, "an unchanged message is no change");
    clock.advance(7);
    let mut fields = StatusFields::default();
    fields.status_message = Some("halfway".into());
    store.put_status(&task.task_id, TaskStatus::Working, fields).await.expect("new message");
    let page = feed.read(ChangeQuery::new(head, "alice", &[TaskStatus::Working], 10)).await.expect("read");
    let got: Vec<_> = page.changes.iter().map(|c| (c.task_id.as_str(), c.status_message.as_deref())).collect();
    assert_eq!(got, vec![(task.task_id.as_str(), Some("halfway"))]);
    assert_eq!(page.changes[0].last_updated_at_ms, now + 7, "the update time comes from its column");
}
