//! Opening an SQLite store: connect, check what the file already holds,
//! migrate, and refuse a file that is not ours or not sound.

use super::options::SqliteOptions;
use super::{SqliteEngine, SqliteStore};
use crate::common::{self, Migration};
use crate::error::OpenError;
use crate::pool::ConnPool;
use conduit_mcp::clock::Clock;
use sqlx::Connection;
use sqlx::sqlite::SqliteConnection;
use std::sync::Arc;
use std::time::Duration;

const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        description: "conduit_tasks and conduit_task_count",
        sql: include_str!("../../migrations/sqlite/0001_conduit_tasks.sql"),
    },
    Migration {
        version: 2,
        description: "conduit_legacy_tasks, its count and cursor key; conduit_legacy_sessions",
        sql: include_str!("../../migrations/sqlite/0002_conduit_legacy_tasks.sql"),
    },
    Migration {
        version: 13,
        description: "an index on owner, for the per-principal cap",
        sql: include_str!("../../migrations/sqlite/0013_owner_index.sql"),
    },
    Migration {
        version: 20,
        description: "conduit_legacy_sessions.client_key, for the per-client session cap",
        sql: include_str!("../../migrations/sqlite/0020_session_client_key.sql"),
    },
    Migration {
        version: 34,
        description: "terminal tasks outside the per-principal cap: conduit_tasks.doc_bytes and indexes on live and terminal rows (both task tables)",
        sql: include_str!("../../migrations/sqlite/0034_terminal_tasks.sql"),
    },
    Migration {
        version: 35,
        description: "the task change log (conduit_task_changes, written by triggers in both task tables' transactions once enabled)",
        sql: include_str!("../../migrations/sqlite/0035_task_changes.sql"),
    },
    Migration {
        version: 37,
        description: "the keys the Events extension seals cursors with (conduit_events_keys, made once, shared by every node)",
        sql: include_str!("../../migrations/sqlite/0037_events_keys.sql"),
    },
    Migration {
        version: 40,
        description: "conduit_dpop_jti: the DPoP proofs taken, once per window across nodes",
        sql: include_str!("../../migrations/sqlite/0040_dpop_jti.sql"),
    },
    Migration {
        version: 41,
        description: "webhook delivery: conduit_webhook_subscriptions, conduit_webhook_verifications, conduit_webhook_outbox",
        sql: include_str!("../../migrations/sqlite/0041_webhooks.sql"),
    },
    Migration {
        version: 42,
        description: "the task change log finds a task's changes by its creation time and id (conduit_task_changes.task_created_ms), appended as tasks are made",
        sql: include_str!("../../migrations/sqlite/0042_task_changes_by_creation.sql"),
    },
    Migration {
        version: 43,
        description: "a task's status message and last update time as columns (status_message, updated_at_ms), so the change log's triggers read no JSON",
        sql: include_str!("../../migrations/sqlite/0043_task_change_columns.sql"),
    },
];

// SQLite primary result codes (the low byte of an extended code).
const SQLITE_CORRUPT: i64 = 11;
const SQLITE_NOTADB: i64 = 26;

impl SqliteOptions {
    /// Opens (creating or upgrading the schema) and checks the database.
    ///
    /// Refused with a clear [`OpenError`] when the file is not an SQLite
    /// database, is corrupted, or has a `conduit_tasks` table this crate did
    /// not create.
    pub async fn open(self, clock: Arc<dyn Clock>) -> Result<SqliteStore, OpenError> {
        let opts = self.connect_options()?;
        let path = opts.get_filename().display().to_string();
        let memory = self.is_memory();
        // One connection writes, in order: SQLite takes one writer at a time
        // anyway, and queueing here is fairer and faster than its busy-wait.
        // An in-memory database is one connection for everything (a second
        // connection would see another database), never closed before the store.
        let timeout = self.busy_timeout.max(Duration::from_secs(5));
        let op = self.operation_timeout;
        let writer = Arc::new(ConnPool::new(opts.clone(), 1, timeout, op, None, memory));
        let mut conn = writer.get().await.map_err(|e| classify_open_error(&path, e))?;
        let prepared = prepare(conn.conn(), &path, self.check_integrity).await;
        conn.release();
        if let Err(e) = prepared {
            writer.close().await;
            return Err(e);
        }
        let reader =
            if memory { writer.clone() } else { Arc::new(ConnPool::new(opts, self.readers, timeout, op, None, false)) };
        tracing::debug!(path = %path, memory, "sqlite task store open");
        Ok(SqliteStore::new(SqliteEngine::new(writer, reader, path), clock))
    }
}

fn classify_open_error(path: &str, e: sqlx::Error) -> OpenError {
    if let sqlx::Error::Database(db) = &e {
        let primary = db.code().and_then(|c| c.parse::<i64>().ok()).map(|c| c & 0xff);
        match primary {
            Some(SQLITE_NOTADB) => {
                return OpenError::NotADatabase { path: path.into(), detail: db.message().into() };
            }
            Some(SQLITE_CORRUPT) => return OpenError::Corrupt { path: path.into(), detail: db.message().into() },
            _ => {}
        }
    }
    OpenError::Database(format!("sqlite `{path}`: {e}"))
}

/// Checks what is already in the file, then applies pending migrations, all
/// in one `BEGIN IMMEDIATE` transaction (so two processes opening the same
/// new file cannot both migrate it).
async fn prepare(conn: &mut SqliteConnection, path: &str, check_integrity: bool) -> Result<(), OpenError> {
    let classify = |e: sqlx::Error| classify_open_error(path, e);
    let mut tx = conn.begin_with("BEGIN IMMEDIATE").await.map_err(classify)?;
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'table' \
         AND name IN ('conduit_tasks', 'conduit_task_count', 'conduit_schema_migrations')",
    )
    .fetch_all(&mut *tx)
    .await
    .map_err(classify)?;
    let has = |t: &str| tables.iter().any(|n| n == t);
    if has("conduit_tasks") {
        let columns: Vec<String> = sqlx::query_scalar("SELECT name FROM pragma_table_info('conduit_tasks')")
            .fetch_all(&mut *tx)
            .await
            .map_err(classify)?;
        common::check_task_table(&columns, has("conduit_schema_migrations"))?;
        if check_integrity {
            let report: Vec<String> =
                sqlx::query_scalar("PRAGMA quick_check(conduit_tasks)").fetch_all(&mut *tx).await.map_err(classify)?;
            if report.iter().any(|l| l != "ok") {
                return Err(OpenError::Corrupt { path: path.into(), detail: report.join("; ") });
            }
        }
    }
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS conduit_schema_migrations (\
         version INTEGER NOT NULL PRIMARY KEY, description TEXT NOT NULL, applied_at_ms INTEGER NOT NULL)",
    )
    .execute(&mut *tx)
    .await
    .map_err(classify)?;
    let applied: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(version), 0) FROM conduit_schema_migrations")
        .fetch_one(&mut *tx)
        .await
        .map_err(classify)?;
    common::check_applied(applied, has("conduit_tasks"))?;
    for m in MIGRATIONS.iter().filter(|m| m.version > applied) {
        sqlx::raw_sql(m.sql).execute(&mut *tx).await.map_err(|e| {
            OpenError::Database(format!("sqlite `{path}`: migration {} ({}) failed: {e}", m.version, m.description))
        })?;
        sqlx::query(
            "INSERT INTO conduit_schema_migrations (version, description, applied_at_ms) \
             VALUES (?1, ?2, ?3)",
        )
        .bind(m.version)
        .bind(m.description)
        .bind(common::wall_clock_ms())
        .execute(&mut *tx)
        .await
        .map_err(classify)?;
        tracing::info!(path = %path, version = m.version, "applied task store migration");
    }
    // The row counter heals itself here if anything deleted rows behind the
    // store's back (the write lock is held, so the count is exact).
    sqlx::query("UPDATE conduit_task_count SET n = (SELECT count(*) FROM conduit_tasks) WHERE id = 1")
        .execute(&mut *tx)
        .await
        .map_err(classify)?;
    tx.commit().await.map_err(classify)
}
