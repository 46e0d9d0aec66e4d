//! `SqliteLegacyStore`: the legacy era's tasks in the same SQLite database,
//! in a table of their own (`conduit_legacy_tasks`), listable per owner —
//! the store of `SqliteStore`, on the legacy table; here is what that table
//! alone does (its insert, under both caps) and how the store is made.

use super::{ENGINE, SqliteEngine, SqliteStore, backend, broken};
use crate::common::{Hooked, LegacyInsert, LegacyTable, RowWrite, SqlStore, run_hooked};
use crate::pool::bounded;
use async_trait::async_trait;
use conduit_mcp::ext::tasks::legacy_store::CursorKey;
use conduit_mcp::ext::tasks::{CreateCaps, TaskRecord};
use conduit_mcp::task::{StoreError, TransactionHook};
use sqlx::SqliteConnection;

/// The insert of a new legacy task: one statement under both caps (the
/// writer connection orders every create on the file): the row counter, and
/// the owner's live rows (its terminal ones do not count); a refusal is then
/// told apart by that count.
#[async_trait]
impl RowWrite<SqliteConnection> for LegacyInsert {
    async fn write(&self, conn: &mut SqliteConnection) -> Hooked<bool> {
        let q = sqlx::query(
            "INSERT INTO conduit_legacy_tasks (task_id, owner, status, version, created_at_ms, expires_at_ms, \
             terminal_at_ms, lease_node, lease_expires_ms, doc, status_message, updated_at_ms, list_owner) \
             SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13 \
             WHERE (?14 IS NULL OR (SELECT n FROM conduit_legacy_task_count WHERE id = 1) < ?14) \
             AND (?15 IS NULL OR (SELECT count(*) FROM conduit_legacy_tasks \
                                  WHERE owner = ?2 AND terminal_at_ms IS NULL) < ?15)",
        )
        .bind(self.task_id.as_str());
        let q = self.columns.bind_change(self.columns.bind(q));
        let q = q.bind(self.list_owner.as_str()).bind(self.max_rows).bind(self.per_owner);
        match q.execute(&mut *conn).await {
            Ok(r) if r.rows_affected() == 1 => Ok(Ok(true)),
            Ok(_) => {
                let Some(max) = self.per_owner else { return Ok(Err(StoreError::TaskLimitReached)) };
                let held: i64 = sqlx::query_scalar(
                    "SELECT count(*) FROM conduit_legacy_tasks WHERE owner = ?1 AND terminal_at_ms IS NULL",
                )
                .bind(self.columns.owner.as_deref())
                .fetch_one(conn)
                .await?;
                Ok(Err(if held >= max { StoreError::OwnerLimitReached } else { StoreError::TaskLimitReached }))
            }
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => Ok(Err(StoreError::Duplicate)),
            Err(e) => Err(e),
        }
    }
}

/// Legacy (`2025-11-25`) tasks in an SQLite database, beside the extension's:
/// the same guarantees as [`SqliteStore`] (it shares its connections, so
/// writes of both stay in one order), its own row cap, and `list` by a keyset
/// on `(owner, created_at_ms, task_id)`. Made by [`SqliteStore::legacy`].
/// Cheap to clone.
///
/// It claims no node id of its own (`claim_node` does nothing): the file's
/// one node claim belongs to the [`SqliteStore`]. Give the legacy runtime the
/// same `node_id` as the extension's, whose claim then covers both; a random
/// default id cannot collide with another process's.
pub type SqliteLegacyStore = SqlStore<SqliteEngine, LegacyTable>;

impl SqliteStore {
    /// The legacy task store in the same database (its table is created by
    /// the same migrations); its cursor key is the database's, so every
    /// process on the file honours the others' cursors.
    pub async fn legacy(&self) -> Result<SqliteLegacyStore, StoreError> {
        let mut c = self.engine().reader().await?;
        let q = sqlx::query_scalar::<_, String>("SELECT secret FROM conduit_legacy_cursor_key WHERE id = 1");
        let secret = bounded(c.deadline(), q.fetch_one(c.conn())).await;
        let secret = c.finish(secret, broken).map_err(|e| backend("read the legacy cursor key", e))?;
        Ok(self.legacy_with(CursorKey::derive(secret.as_bytes())))
    }
}

impl SqliteEngine {
    /// A legacy create: one statement under both caps (the writer connection
    /// orders every create on the file): the row counter, and the owner's
    /// live rows; a refusal is then told apart by that count.
    pub(super) async fn write_legacy(&self, record: TaskRecord, caps: CreateCaps) -> Result<TaskRecord, StoreError> {
        let insert = LegacyInsert::new(&record, caps)?;
        let mut conn = self.writer().await?;
        let done = bounded(conn.deadline(), insert.write(conn.conn())).await;
        conn.finish(done, broken).map_err(|e| backend("insert a legacy task", e))?.map(|_| record)
    }

    /// A legacy create and `hook`, in one `BEGIN IMMEDIATE` transaction.
    pub(super) async fn write_legacy_with(
        &self,
        record: TaskRecord,
        caps: CreateCaps,
        hook: &dyn TransactionHook,
    ) -> Result<TaskRecord, StoreError> {
        let insert = LegacyInsert::new(&record, caps)?;
        let conn = self.writer().await?;
        let done = run_hooked(conn, "BEGIN IMMEDIATE", ENGINE, &record, hook, &insert, broken).await;
        done.map_err(|e| backend("insert a legacy task", e))?.map(|_| record)
    }
}
