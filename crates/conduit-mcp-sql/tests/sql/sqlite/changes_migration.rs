//! A database at schema 41 whose task change log holds changes migrates to 42
//! (the log's task index by creation time): every position keeps its change,
//! a cursor resumes where it was, new changes follow the old ones, and the
//! migrated changes still go with their task.

use crate::support::TempDb;
use crate::support::migrated_log::{AtSchema41, check_migrated};
use conduit_mcp::clock::{Clock, ManualClock};
use conduit_mcp::ext::tasks::TaskRecord;
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
    let t = AtSchema41::new(now);
    put(&mut conn, "conduit_tasks", &t.short).await;
    put(&mut conn, "conduit_legacy_tasks", &t.legacy).await;
    put(&mut conn, "conduit_tasks", &t.bobs).await;
    put(&mut conn, "conduit_tasks", &t.done()).await;
    conn.close().await.expect("close");

    let store = SqliteStore::open(db.path(), Arc::new(clock.clone())).await.expect("migrate to 42");
    check_migrated(&store, &clock, &t).await;
}
