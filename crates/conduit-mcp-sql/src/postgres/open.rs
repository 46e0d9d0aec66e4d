//! Connecting a PostgreSQL store: the pool, the schema's `search_path`, and
//! the migrations, applied by one node at a time under an advisory lock.

use super::options::PostgresOptions;
use super::{PgEngine, PostgresStore};
use crate::common::{self, Migration};
use crate::error::OpenError;
use crate::pool::{ConnPool, Setup};
use conduit_mcp::clock::Clock;
use futures_util::future::BoxFuture;
use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgConnection};
use std::str::FromStr;
use std::sync::Arc;

const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        description: "conduit_tasks and conduit_task_count",
        sql: include_str!("../../migrations/postgres/0001_conduit_tasks.sql"),
    },
    Migration {
        version: 2,
        description: "conduit_legacy_tasks, its count and cursor key; conduit_legacy_sessions",
        sql: include_str!("../../migrations/postgres/0002_conduit_legacy_tasks.sql"),
    },
    Migration {
        version: 13,
        description: "an index on owner, for the per-principal cap",
        sql: include_str!("../../migrations/postgres/0013_owner_index.sql"),
    },
    Migration {
        version: 14,
        description: "the row cap on a sharded counter (conduit_task_shards, conduit_tasks.shard)",
        sql: include_str!("../../migrations/postgres/0014_task_shards.sql"),
    },
    Migration {
        version: 20,
        description: "conduit_legacy_sessions.client_key, for the per-client session cap",
        sql: include_str!("../../migrations/postgres/0020_session_client_key.sql"),
    },
    Migration {
        version: 34,
        description: "terminal tasks outside the per-principal cap: conduit_tasks.doc_bytes and indexes on live and terminal rows (both task tables)",
        sql: include_str!("../../migrations/postgres/0034_terminal_tasks.sql"),
    },
    Migration {
        version: 35,
        description: "the task change log's tables and trigger function (conduit_task_changes; the triggers come with the reader)",
        sql: include_str!("../../migrations/postgres/0035_task_changes.sql"),
    },
    Migration {
        version: 36,
        description: "the task change log's triggers (statement level, both task tables) and its commit-order positions",
        sql: include_str!("../../migrations/postgres/0036_task_change_triggers.sql"),
    },
    Migration {
        version: 37,
        description: "the keys the Events extension seals cursors with (conduit_events_keys, made once, shared by every node)",
        sql: include_str!("../../migrations/postgres/0037_events_keys.sql"),
    },
    Migration {
        version: 40,
        description: "conduit_dpop_jti: the DPoP proofs taken, once per window across nodes",
        sql: include_str!("../../migrations/postgres/0040_dpop_jti.sql"),
    },
    Migration {
        version: 41,
        description: "webhook delivery: conduit_webhook_subscriptions, conduit_webhook_verifications, conduit_webhook_outbox",
        sql: include_str!("../../migrations/postgres/0041_webhooks.sql"),
    },
    Migration {
        version: 42,
        description: "the task change log finds a task's changes by its creation time and id (conduit_task_changes.task_created_ms), appended as tasks are made, its trigger reading the stored json in one pass",
        sql: include_str!("../../migrations/postgres/0042_task_changes_by_creation.sql"),
    },
];

/// The advisory lock key under which nodes migrate one at a time ("conduit!").
const MIGRATION_LOCK: i64 = 0x636f_6e64_7569_7421;

impl PostgresOptions {
    /// Connects, creates or upgrades the schema (one node at a time, under an
    /// advisory lock), and checks it.
    ///
    /// Refused with [`OpenError::ForeignSchema`] when the schema has a
    /// `conduit_tasks` table this crate did not create.
    pub async fn connect(self, clock: Arc<dyn Clock>) -> Result<PostgresStore, OpenError> {
        let mut opts = PgConnectOptions::from_str(&self.url)
            .map_err(|e| OpenError::InvalidAddress { address: redact(&self.url), detail: e.to_string() })?;
        if let Some(name) = &self.application_name {
            opts = opts.application_name(name);
        }
        let search_path = self.schema.as_deref().map(|s| format!("SET search_path TO {}", quote_ident(s)));
        let setup = search_path.map(|sql| -> Setup<PgConnection> {
            let sql: Arc<str> = sql.into();
            Box::new(move |conn| run_setup(conn, sql.clone()))
        });
        let pool =
            ConnPool::new(opts, self.max_connections, self.connect_timeout, self.operation_timeout, setup, false);
        let prepared = async {
            let mut c =
                pool.get().await.map_err(|e| OpenError::Database(format!("postgres `{}`: {e}", redact(&self.url))))?;
            let r = prepare(c.conn(), self.schema.as_deref()).await;
            if r.is_ok() {
                c.release();
            }
            r
        }
        .await;
        if let Err(e) = prepared {
            pool.close().await;
            return Err(e);
        }
        let engine = PgEngine::new(pool, self.max_connections as usize + 1, self.schema);
        Ok(PostgresStore::new(engine, clock))
    }
}

/// Runs `sql` (a `SET`) on a new connection.
fn run_setup(conn: &mut PgConnection, sql: Arc<str>) -> BoxFuture<'_, Result<(), sqlx::Error>> {
    Box::pin(async move { sqlx::Executor::execute(conn, sqlx::AssertSqlSafe(sql)).await.map(|_| ()) })
}

/// `"name"`, with embedded quotes doubled.
fn quote_ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// The URL without its password, for messages.
fn redact(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else { return url.to_owned() };
    let rest = &url[scheme_end + 3..];
    let Some(at) = rest.find('@') else { return url.to_owned() };
    match rest[..at].find(':') {
        Some(colon) => format!("{}{}:***{}", &url[..scheme_end + 3], &rest[..colon], &rest[at..]),
        None => url.to_owned(),
    }
}

async fn prepare(conn: &mut PgConnection, schema: Option<&str>) -> Result<(), OpenError> {
    let db = |e: sqlx::Error| OpenError::Database(format!("postgres: {e}"));
    let mut tx = conn.begin().await.map_err(db)?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)").bind(MIGRATION_LOCK).execute(&mut *tx).await.map_err(db)?;
    // `IF NOT EXISTS` on an existing schema or table is a NOTICE, which the
    // driver would log at INFO on every start: only warnings and up here.
    sqlx::query("SET LOCAL client_min_messages TO warning").execute(&mut *tx).await.map_err(db)?;
    if let Some(s) = schema {
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE SCHEMA IF NOT EXISTS {}", quote_ident(s))))
            .execute(&mut *tx)
            .await
            .map_err(db)?;
    }
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT table_name::text FROM information_schema.tables WHERE table_schema = current_schema() \
         AND table_name IN ('conduit_tasks', 'conduit_task_count', 'conduit_schema_migrations')",
    )
    .fetch_all(&mut *tx)
    .await
    .map_err(db)?;
    let has = |t: &str| tables.iter().any(|n| n == t);
    if has("conduit_tasks") {
        let columns: Vec<String> = sqlx::query_scalar(
            "SELECT column_name::text FROM information_schema.columns \
             WHERE table_schema = current_schema() AND table_name = 'conduit_tasks'",
        )
        .fetch_all(&mut *tx)
        .await
        .map_err(db)?;
        common::check_task_table(&columns, has("conduit_schema_migrations"))?;
    }
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS conduit_schema_migrations (\
         version BIGINT NOT NULL PRIMARY KEY, description TEXT NOT NULL, applied_at_ms BIGINT NOT NULL)",
    )
    .execute(&mut *tx)
    .await
    .map_err(db)?;
    let applied: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(version), 0)::bigint FROM conduit_schema_migrations")
        .fetch_one(&mut *tx)
        .await
        .map_err(db)?;
    common::check_applied(applied, has("conduit_tasks"))?;
    for m in MIGRATIONS.iter().filter(|m| m.version > applied) {
        sqlx::raw_sql(m.sql).execute(&mut *tx).await.map_err(|e| {
            OpenError::Database(format!("postgres: migration {} ({}) failed: {e}", m.version, m.description))
        })?;
        sqlx::query("INSERT INTO conduit_schema_migrations (version, description, applied_at_ms) VALUES ($1, $2, $3)")
            .bind(m.version)
            .bind(m.description)
            .bind(common::wall_clock_ms())
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        tracing::info!(version = m.version, "applied task store migration");
    }
    tx.commit().await.map_err(db)
}
