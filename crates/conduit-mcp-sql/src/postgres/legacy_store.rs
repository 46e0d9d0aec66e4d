//! `PostgresLegacyStore`: the legacy era's tasks in the same PostgreSQL
//! schema, in a table of their own (`conduit_legacy_tasks`), listable per
//! owner — the store of `PostgresStore`, on the legacy table; here is what
//! that table alone does (its insert, under both caps) and how the store is made.

use super::{ENGINE, PgEngine, PostgresStore, backend, is_connection_error};
use crate::common::{Hooked, LegacyInsert, LegacyTable, RowWrite, SqlStore, run_hooked};
use crate::pool::bounded;
use async_trait::async_trait;
use conduit_mcp::ext::tasks::legacy_store::CursorKey;
use conduit_mcp::ext::tasks::{CreateCaps, TaskRecord};
use conduit_mcp::task::{StoreError, TransactionHook};
use sqlx::PgConnection;

/// The advisory-lock class under which a principal's legacy creates take
/// turns ("lgcy"; apart from the extension's tasks and the migration lock).
const LEGACY_OWNER_LOCK_CLASS: i32 = 0x6c67_6379;

/// The insert of a new legacy task under the row cap (one statement claims
/// a slot, the counter row's lock ordering concurrent creates on every
/// node, then inserts) and, inside a transaction, the per-owner cap on its
/// live tasks.
impl LegacyInsert {
    fn statement(&self) -> super::PgQuery<'static> {
        let q = sqlx::query(
            "WITH slot AS (UPDATE conduit_legacy_task_count SET n = n + 1 \
                           WHERE id = 1 AND ($1::bigint IS NULL OR n < $1::bigint) RETURNING 1) \
             INSERT INTO conduit_legacy_tasks (task_id, owner, status, version, created_at_ms, expires_at_ms, \
                                               terminal_at_ms, lease_node, lease_expires_ms, doc, list_owner) \
             SELECT $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::json, $12 FROM slot",
        )
        .bind(self.max_rows)
        .bind(self.task_id.clone());
        self.columns.bind(q).bind(self.list_owner.clone())
    }

    /// The row cap's refusal when the statement inserted nothing.
    fn refusal(done: sqlx::postgres::PgQueryResult) -> Option<StoreError> {
        (done.rows_affected() != 1).then_some(StoreError::TaskLimitReached)
    }

    /// Both caps and the insert, on a connection inside a transaction.
    async fn within(&self, tx: &mut PgConnection) -> Result<Option<StoreError>, sqlx::Error> {
        if let Some(max) = self.per_owner {
            sqlx::query("SELECT pg_advisory_xact_lock($1, hashtext($2))")
                .bind(LEGACY_OWNER_LOCK_CLASS)
                .bind(self.list_owner.as_str())
                .execute(&mut *tx)
                .await?;
            let held: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM conduit_legacy_tasks WHERE owner = $1 AND terminal_at_ms IS NULL",
            )
            .bind(self.columns.owner.clone())
            .fetch_one(&mut *tx)
            .await?;
            if held >= max {
                return Ok(Some(StoreError::OwnerLimitReached));
            }
        }
        self.statement().execute(tx).await.map(Self::refusal)
    }
}

#[async_trait]
impl RowWrite<PgConnection> for LegacyInsert {
    async fn write(&self, conn: &mut PgConnection) -> Hooked<bool> {
        match self.within(conn).await {
            Ok(None) => Ok(Ok(true)),
            Ok(Some(refusal)) => Ok(Err(refusal)),
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => Ok(Err(StoreError::Duplicate)),
            Err(e) => Err(e),
        }
    }
}

/// Legacy (`2025-11-25`) tasks in PostgreSQL, beside the extension's: the
/// same guarantees as [`PostgresStore`] (whose pool it shares), its own row
/// cap, and `list` by a keyset on `(owner, created_at_ms, task_id)`. Every
/// node on the schema shares the cursor key, so a `tasks/list` cursor from
/// one node pages on any other. Made by [`PostgresStore::legacy`]. Cheap to clone.
///
/// It claims no node id of its own (`claim_node` does nothing): the
/// connection's one node claim belongs to the [`PostgresStore`]. Give the
/// legacy runtime the same `node_id` as the extension's, whose claim then
/// covers both; a random default id cannot collide with another node's.
pub type PostgresLegacyStore = SqlStore<PgEngine, LegacyTable>;

impl PostgresStore {
    /// The legacy task store in the same schema (its table is created by the
    /// same migrations).
    pub async fn legacy(&self) -> Result<PostgresLegacyStore, StoreError> {
        let rows = self
            .engine()
            .read_rows("read the legacy cursor key", "SELECT secret FROM conduit_legacy_cursor_key WHERE id = 1", |q| q)
            .await?;
        let secret: String = match rows.first() {
            Some(row) => sqlx::Row::try_get(row, 0).map_err(|e| backend("read the legacy cursor key", e))?,
            None => return Err(StoreError::backend_message("postgres: the legacy cursor key is missing")),
        };
        Ok(self.legacy_with(CursorKey::derive(secret.as_bytes())))
    }
}

impl PgEngine {
    /// A legacy create. Under a per-owner cap: in one transaction, the
    /// owner's creates take turns on an advisory lock (on every node), count
    /// the owner's live rows, then claim a slot under the row cap and insert.
    pub(super) async fn write_legacy(&self, record: TaskRecord, caps: CreateCaps) -> Result<TaskRecord, StoreError> {
        let insert = LegacyInsert::new(&record, caps)?;
        let mut conn = self.conn().await?;
        let done = bounded(conn.deadline(), async {
            if insert.per_owner.is_none() {
                // One statement, no transaction needed.
                return insert.statement().execute(conn.conn()).await.map(LegacyInsert::refusal);
            }
            let mut tx = sqlx::Connection::begin(conn.conn()).await?;
            let refused = insert.within(&mut tx).await?;
            if refused.is_none() {
                tx.commit().await?;
            }
            // Otherwise dropping the transaction rolls it back.
            Ok(refused)
        })
        .await;
        match conn.finish(done, is_connection_error) {
            Ok(None) => Ok(record),
            Ok(Some(refusal)) => Err(refusal),
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => Err(StoreError::Duplicate),
            Err(e) => Err(backend("insert a legacy task", e)),
        }
    }

    /// A legacy create and `hook`, in one transaction.
    pub(super) async fn write_legacy_with(
        &self,
        record: TaskRecord,
        caps: CreateCaps,
        hook: &dyn TransactionHook,
    ) -> Result<TaskRecord, StoreError> {
        let insert = LegacyInsert::new(&record, caps)?;
        let conn = self.conn().await?;
        let done = run_hooked(conn, "BEGIN", ENGINE, &record, hook, &insert, is_connection_error).await;
        done.map_err(|e| backend("insert a legacy task", e))?.map(|_| record)
    }
}
