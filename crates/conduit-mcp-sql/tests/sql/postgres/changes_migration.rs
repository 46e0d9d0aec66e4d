//! A PostgreSQL schema at version 41 whose task change log holds changes,
//! numbered and not yet numbered, migrates to 42 (the log's task index by
//! creation time, its trigger reading the stored json): every position keeps
//! its change, a cursor resumes where it was, a change committed before the
//! migration and numbered after it follows the others, and the migrated
//! changes still go with their task. Needs `DATABASE_URL`. Positions wait
//! for every older transaction on the server, so the test waits for each.

use crate::support;
use crate::support::migrated_log::{AtSchema41, check_migrated};
use crate::support::numbered::head_reaches;
use conduit_mcp::clock::{Clock, ManualClock};
use conduit_mcp::ext::tasks::TaskRecord;
use conduit_mcp_sql::PostgresStore;
use sqlx::Connection;
use sqlx::postgres::PgConnection;
use std::sync::Arc;

/// Schema 41: every migration before 42, with the version each one records.
const SCHEMA_41: [(i64, &str); 11] = [
    (1, include_str!("../../../migrations/postgres/0001_conduit_tasks.sql")),
    (2, include_str!("../../../migrations/postgres/0002_conduit_legacy_tasks.sql")),
    (13, include_str!("../../../migrations/postgres/0013_owner_index.sql")),
    (14, include_str!("../../../migrations/postgres/0014_task_shards.sql")),
    (20, include_str!("../../../migrations/postgres/0020_session_client_key.sql")),
    (34, include_str!("../../../migrations/postgres/0034_terminal_tasks.sql")),
    (35, include_str!("../../../migrations/postgres/0035_task_changes.sql")),
    (36, include_str!("../../../migrations/postgres/0036_task_change_triggers.sql")),
    (37, include_str!("../../../migrations/postgres/0037_events_keys.sql")),
    (40, include_str!("../../../migrations/postgres/0040_dpop_jti.sql")),
    (41, include_str!("../../../migrations/postgres/0041_webhooks.sql")),
];

/// Writes `r` into `table` of `schema` as a schema-41 store would (its triggers log the change).
async fn put(conn: &mut PgConnection, schema: &str, table: &str, r: &TaskRecord) {
    let doc = serde_json::to_string(r).expect("record as JSON");
    let legacy = table == "conduit_legacy_tasks";
    let sql = format!(
        "INSERT INTO \"{schema}\".{table} (task_id, owner, status, version, created_at_ms, expires_at_ms, doc{}) \
         VALUES ($1, $2, $3, $4, $5, $6, $7::json{}) \
         ON CONFLICT (task_id) DO UPDATE SET status = excluded.status, version = excluded.version, doc = excluded.doc",
        if legacy { ", list_owner" } else { "" },
        if legacy { ", $8" } else { "" },
    );
    let mut q = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(&r.task_id)
        .bind(r.owner.as_deref())
        .bind(r.status.as_str())
        .bind(r.version as i64)
        .bind(r.created_at_ms as i64)
        .bind(r.ttl_ms.map(|t| (r.created_at_ms + t) as i64))
        .bind(doc);
    if legacy {
        q = q.bind(r.owner.clone().map(|o| format!("+{o}")));
    }
    q.execute(conn).await.expect("write a task at schema 41");
}

#[tokio::test]
async fn a_change_log_at_schema_41_keeps_its_positions_and_its_tasks_through_the_migration() {
    let Some(url) =
        support::pg_url("a_change_log_at_schema_41_keeps_its_positions_and_its_tasks_through_the_migration")
    else {
        return;
    };
    let schemas = support::Schemas::new(&url);
    let schema = schemas.fresh();
    let clock = ManualClock::new(1_800_000_000_000);
    let now = clock.now_ms();
    let mut conn = PgConnection::connect(&url).await.expect("connect");
    let mut tx = conn.begin().await.expect("begin");
    let setup = format!(
        "CREATE SCHEMA \"{schema}\"; SET LOCAL search_path = \"{schema}\"; \
         CREATE TABLE conduit_schema_migrations (version BIGINT NOT NULL PRIMARY KEY, \
         description TEXT NOT NULL, applied_at_ms BIGINT NOT NULL)"
    );
    sqlx::raw_sql(sqlx::AssertSqlSafe(setup)).execute(&mut *tx).await.expect("schema");
    for (version, sql) in SCHEMA_41 {
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql)).execute(&mut *tx).await.expect("a schema-41 migration");
        sqlx::query("INSERT INTO conduit_schema_migrations VALUES ($1, 'schema 41', 0)")
            .bind(version)
            .execute(&mut *tx)
            .await
            .expect("record it");
    }
    sqlx::raw_sql("UPDATE conduit_task_change_log SET enabled = true").execute(&mut *tx).await.expect("log on");
    tx.commit().await.expect("commit schema 41");
    // The log's functions name its tables unqualified, as the store's connections do.
    let path = format!("SET search_path = \"{schema}\"");
    sqlx::raw_sql(sqlx::AssertSqlSafe(path.as_str())).execute(&mut conn).await.expect("search path");

    let t = AtSchema41::new(now);
    put(&mut conn, &schema, "conduit_tasks", &t.short).await;
    put(&mut conn, &schema, "conduit_legacy_tasks", &t.legacy).await;
    put(&mut conn, &schema, "conduit_tasks", &t.bobs).await;
    // The counters a schema-41 store keeps beside its inserts.
    let counted = format!(
        "UPDATE \"{schema}\".conduit_task_shards SET n = n + 2 WHERE id = 0; \
         UPDATE \"{schema}\".conduit_legacy_task_count SET n = n + 1 WHERE id = 1"
    );
    sqlx::raw_sql(sqlx::AssertSqlSafe(counted)).execute(&mut conn).await.expect("count");
    // Numbered (on a connection of its own, as a reader would) once no older transaction runs.
    let numbered = format!("SELECT \"{schema}\".conduit_task_changes_sequence()");
    let head = head_reaches("schema 41", 3, || async {
        let mut reader = PgConnection::connect(&url).await.expect("connect");
        sqlx::raw_sql(sqlx::AssertSqlSafe(path.as_str())).execute(&mut reader).await.expect("search path");
        let n: i64 =
            sqlx::query_scalar(sqlx::AssertSqlSafe(numbered.as_str())).fetch_one(&mut reader).await.expect("number");
        n.unsigned_abs()
    })
    .await;
    assert_eq!(head, 3);
    // Committed at 41, numbered only at 42.
    put(&mut conn, &schema, "conduit_tasks", &t.done()).await;
    conn.close().await.expect("close");

    let store = PostgresStore::with_schema(&url, &schema, Arc::new(clock.clone())).await.expect("migrate to 42");
    check_migrated(&store, &clock, &t).await;
    store.close().await;
}
