//! Files and schemas a store must refuse at open, with a clear error.

use crate::support;

use conduit_mcp::clock::{ManualClock, SystemClock};
use conduit_mcp::ext::tasks::{CreateCaps, TaskRecord, TaskStore, new_task_id};
use conduit_mcp_sql::{OpenError, PostgresStore, SqliteStore};
use sqlx::Connection;
use std::sync::Arc;

async fn open(path: &str) -> Result<SqliteStore, OpenError> {
    SqliteStore::open(path, Arc::new(SystemClock)).await
}

#[tokio::test]
async fn a_file_that_is_not_a_database_is_refused() {
    let db = support::TempDb::new("garbage");
    let bytes: Vec<u8> = (0..16_384u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    std::fs::write(db.as_path(), &bytes).expect("write garbage");
    let err = open(db.path()).await.expect_err("garbage is refused");
    assert!(matches!(err, OpenError::NotADatabase { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains(db.path()) && msg.contains("not an SQLite database"), "{msg}");
    eprintln!("{msg}");
    assert_eq!(std::fs::read(db.as_path()).expect("read back"), bytes, "the file is left as it was");

    let text = support::TempDb::new("text");
    std::fs::write(text.as_path(), "name,owner\nbuild,alice\n".repeat(200)).expect("write text");
    assert!(matches!(open(text.path()).await, Err(OpenError::NotADatabase { .. })));
}

#[tokio::test]
async fn a_foreign_conduit_tasks_table_is_refused() {
    let db = support::TempDb::new("foreign");
    let url = format!("sqlite://{}?mode=rwc", db.path());
    let mut conn = sqlx::SqliteConnection::connect(&url).await.expect("connect");
    sqlx::raw_sql(
        "CREATE TABLE conduit_tasks (id INTEGER PRIMARY KEY, payload TEXT); INSERT INTO conduit_tasks VALUES (1, 'x')",
    )
    .execute(&mut conn)
    .await
    .expect("foreign table");
    conn.close().await.expect("close");
    let err = open(db.path()).await.expect_err("foreign schema is refused");
    match &err {
        OpenError::ForeignSchema { table, detail } => {
            assert_eq!(table, "conduit_tasks");
            assert!(detail.contains("task_id") && detail.contains("doc"), "{detail}");
        }
        other => panic!("expected ForeignSchema, got {other:?}"),
    }
    assert!(err.to_string().contains("not a conduit-mcp-sql table"), "{err}");
    eprintln!("{err}");

    // Right columns, but not made by us (no migration recorded).
    let lookalike = support::TempDb::new("lookalike");
    let url = format!("sqlite://{}?mode=rwc", lookalike.path());
    let mut conn = sqlx::SqliteConnection::connect(&url).await.expect("connect");
    sqlx::raw_sql(
        "CREATE TABLE conduit_tasks (task_id TEXT PRIMARY KEY, owner TEXT, status TEXT, version INTEGER, \
         created_at_ms INTEGER, expires_at_ms INTEGER, terminal_at_ms INTEGER, lease_node TEXT, \
         lease_expires_ms INTEGER, doc TEXT)",
    )
    .execute(&mut conn)
    .await
    .expect("lookalike table");
    conn.close().await.expect("close");
    assert!(matches!(open(lookalike.path()).await, Err(OpenError::ForeignSchema { .. })));
}

#[tokio::test]
async fn a_schema_from_a_newer_release_is_refused() {
    let db = support::TempDb::new("newer");
    open(db.path()).await.expect("create").close().await;
    let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{}", db.path())).await.expect("connect");
    sqlx::raw_sql("INSERT INTO conduit_schema_migrations VALUES (99, 'from the future', 0)")
        .execute(&mut conn)
        .await
        .expect("future migration");
    conn.close().await.expect("close");
    match open(db.path()).await {
        Err(OpenError::NewerSchema { found: 99, supported }) => assert_eq!(supported, conduit_mcp_sql::SCHEMA_VERSION),
        other => panic!("expected NewerSchema, got {other:?}"),
    }
}

#[tokio::test]
async fn a_corrupted_store_is_refused() {
    let db = support::TempDb::new("corrupt");
    let clock = ManualClock::new(1_800_000_000_000);
    let store = SqliteStore::open(db.path(), Arc::new(clock.clone())).await.expect("create");
    for _ in 0..300 {
        let mut r = TaskRecord::new(new_task_id(), Some("alice".into()), 1_800_000_000_000, None);
        r.status_message = Some("x".repeat(400));
        store.create(r, CreateCaps::default()).await.expect("create");
    }
    store.close().await; // checkpoints the WAL into the file
    let mut bytes = std::fs::read(db.as_path()).expect("read");
    assert!(bytes.len() > 64 * 1024, "a few dozen pages");
    // Keep the header and the schema page; scribble over the task pages.
    let start = bytes.len() / 2;
    for (i, b) in bytes[start..start + 16_384].iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(31) ^ 0xA5;
    }
    std::fs::write(db.as_path(), &bytes).expect("write back");
    let err = open(db.path()).await.expect_err("corruption is refused");
    assert!(matches!(err, OpenError::Corrupt { .. }), "{err:?}");
    assert!(err.to_string().contains("is corrupted"), "{err}");
    eprintln!("{err}");
}

#[tokio::test]
async fn bad_addresses_are_refused() {
    assert!(matches!(open("").await, Err(OpenError::InvalidAddress { .. })));
    let err = PostgresStore::connect("postgres://user:s3cret@[bad-host/db", Arc::new(SystemClock))
        .await
        .expect_err("unparseable URL");
    assert!(matches!(err, OpenError::InvalidAddress { .. }), "{err:?}");
    assert!(!err.to_string().contains("s3cret"), "the password is not repeated: {err}");
}

#[tokio::test]
async fn a_foreign_postgres_table_is_refused() {
    let Some(url) = support::pg_url("a_foreign_postgres_table_is_refused") else { return };
    let schemas = support::Schemas::new(&url);
    let schema = schemas.fresh();
    let mut conn = sqlx::PgConnection::connect(&url).await.expect("connect");
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "CREATE SCHEMA \"{schema}\"; CREATE TABLE \"{schema}\".conduit_tasks (id int, payload text)"
    )))
    .execute(&mut conn)
    .await
    .expect("foreign table");
    conn.close().await.expect("close");
    let err = PostgresStore::with_schema(&url, &schema, Arc::new(SystemClock)).await.expect_err("refused");
    assert!(matches!(err, OpenError::ForeignSchema { .. }), "{err:?}");
    // A second schema in the same database is unaffected.
    let ok = schemas.fresh();
    let store = PostgresStore::with_schema(&url, &ok, Arc::new(SystemClock)).await.expect("a fresh schema opens");
    assert_eq!(store.name(), "postgres");
    store.close().await;
}
