//! `SqliteLegacyStore`: the legacy era's tasks in the same SQLite database,
//! in a table of their own (`conduit_legacy_tasks`), listable per owner.

use super::table_sql::LEGACY_TASKS;
use super::{ENGINE, SqliteStore, backend, broken};
use crate::common::rows_task_store;
use crate::common::{
    self, CLEANUP_BATCH, Hooked, LIVE_STATUSES, LegacyInsert, RowWrite, Rows, Stripes, Swap, Sweep, run_hooked,
};
use crate::pool::bounded;
use async_trait::async_trait;
use conduit_mcp::ext::tasks::legacy_store::{CursorKey, LegacyTaskStore, ListPosition};
use conduit_mcp::ext::tasks::{CreateCaps, StoreError, TaskRecord, TaskStore, TerminalBound, TransactionHook};
use sqlx::{AssertSqlSafe, SqliteConnection};
use std::sync::Arc;

/// The insert of a new legacy task: one statement under both caps (the
/// writer connection orders every create on the file): the row counter, and
/// the owner's live rows (its terminal ones do not count); a refusal is then
/// told apart by that count.
#[async_trait]
impl RowWrite<SqliteConnection> for LegacyInsert {
    async fn write(&self, conn: &mut SqliteConnection) -> Hooked<bool> {
        let q = sqlx::query(
            "INSERT INTO conduit_legacy_tasks (task_id, owner, status, version, created_at_ms, expires_at_ms, \
             terminal_at_ms, lease_node, lease_expires_ms, doc, list_owner) \
             SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11 \
             WHERE (?12 IS NULL OR (SELECT n FROM conduit_legacy_task_count WHERE id = 1) < ?12) \
             AND (?13 IS NULL OR (SELECT count(*) FROM conduit_legacy_tasks \
                                  WHERE owner = ?2 AND terminal_at_ms IS NULL) < ?13)",
        )
        .bind(self.task_id.as_str());
        let q = self.columns.bind(q).bind(self.list_owner.as_str()).bind(self.max_rows).bind(self.per_owner);
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

const SELECT_ROW: &str = "SELECT version, lease_node, lease_expires_ms, doc FROM conduit_legacy_tasks";

/// Legacy (`2025-11-25`) tasks in an SQLite database, beside the extension's:
/// the same guarantees as [`SqliteStore`] (it shares its connections, so
/// writes of both stay in one order), its own row cap, and `list` by a keyset
/// on `(owner, created_at_ms, task_id)`. Made by [`SqliteStore::legacy`].
/// Cheap to clone.
///
/// It claims no node id of its own (`claim_node` is the default): the file's
/// one node claim belongs to the [`SqliteStore`]. Give the legacy runtime the
/// same `node_id` as the extension's, whose claim then covers both; a random
/// default id cannot collide with another process's.
#[derive(Debug, Clone)]
pub struct SqliteLegacyStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    store: SqliteStore,
    stripes: Stripes,
    key: CursorKey,
}

impl SqliteStore {
    /// The legacy task store in the same database (its table is created by
    /// the same migrations); its cursor key is the database's, so every
    /// process on the file honours the others' cursors.
    pub async fn legacy(&self) -> Result<SqliteLegacyStore, StoreError> {
        let mut c = self.engine().reader().await?;
        let q = sqlx::query_scalar::<_, String>("SELECT secret FROM conduit_legacy_cursor_key WHERE id = 1");
        let secret = bounded(c.deadline(), q.fetch_one(c.conn())).await;
        let secret = c.finish(secret, broken).map_err(|e| backend("read the legacy cursor key", e))?;
        let key = CursorKey::derive(secret.as_bytes());
        Ok(SqliteLegacyStore { inner: Arc::new(Inner { store: self.clone(), stripes: Stripes::new(256), key }) })
    }
}

impl SqliteLegacyStore {
    fn store(&self) -> &SqliteStore {
        &self.inner.store
    }
}

#[async_trait]
impl Rows for SqliteLegacyStore {
    async fn read(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        let sql = format!("{SELECT_ROW} WHERE task_id = ?1");
        let rows = self.store().engine().select(AssertSqlSafe(sql), |q| q.bind(task_id.to_owned())).await?;
        Ok(rows.into_iter().next())
    }

    async fn swap(
        &self,
        next: &TaskRecord,
        expected: u64,
        hook: Option<&dyn TransactionHook>,
    ) -> Result<bool, StoreError> {
        self.store()
            .engine()
            .swap_row("write a legacy task", Swap::new(LEGACY_TASKS.swap(), next, expected)?, hook)
            .await
    }

    async fn delete_batch(&self, sweep: Sweep, bound: i64) -> Result<u64, StoreError> {
        let sql = LEGACY_TASKS.delete(sweep);
        // The delete trigger lowers the legacy row counter in the same statement.
        self.store()
            .engine()
            .write("delete expired legacy tasks", sqlx::query(sql).bind(bound).bind(CLEANUP_BATCH))
            .await
    }

    fn stripes(&self) -> &Stripes {
        &self.inner.stripes
    }
}

rows_task_store! {
    impl[] TaskStore for SqliteLegacyStore {
        fn name(&self) -> &'static str {
            "sqlite-legacy"
        }

        fn now_ms(&self) -> u64 {
            self.store().now_ms()
        }

        /// One statement under both caps (the writer connection orders every
        /// create on the file): the row counter, and the owner's rows counted by
        /// the list index; a refusal is then told apart by that count.
        async fn create_capped(&self, mut record: TaskRecord, caps: CreateCaps) -> Result<(), StoreError> {
            record.version = 1;
            let insert = LegacyInsert::new(&record, caps)?;
            let mut conn = self.store().engine().writer().await?;
            let done = bounded(conn.deadline(), insert.write(conn.conn())).await;
            conn.finish(done, broken).map_err(|e| backend("insert a legacy task", e))?.map(|_| ())
        }

        async fn create_with(
            &self,
            mut record: TaskRecord,
            caps: CreateCaps,
            hook: &dyn TransactionHook,
        ) -> Result<(), StoreError> {
            record.version = 1;
            let insert = LegacyInsert::new(&record, caps)?;
            let conn = self.store().engine().writer().await?;
            let done = run_hooked(conn, "BEGIN IMMEDIATE", ENGINE, &record, hook, &insert, broken).await;
            done.map_err(|e| backend("insert a legacy task", e))?.map(|_| ())
        }

        async fn trim_terminal(&self, owner: &str, bound: TerminalBound) -> Result<usize, StoreError> {
            self.store().engine().trim_terminal_in(&super::terminal::LEGACY_TASKS, owner, bound).await
        }

        async fn evict_oldest_terminal(&self, owner: &str) -> Result<bool, StoreError> {
            self.store().engine().evict_oldest_terminal_in(&super::terminal::LEGACY_TASKS, owner).await
        }

        async fn renew_leases(&self, node: &str, until_ms: u64) -> Result<usize, StoreError> {
            let sql = format!(
                "UPDATE conduit_legacy_tasks SET lease_expires_ms = MAX(COALESCE(lease_expires_ms, 0), ?1), \
                 version = version + 1 WHERE lease_node = ?2 AND status IN {LIVE_STATUSES}"
            );
            let q = sqlx::query(AssertSqlSafe(sql)).bind(common::ms(until_ms)).bind(node);
            let done = self.store().engine().write("renew legacy leases", q).await?;
            Ok(usize::try_from(done).unwrap_or(usize::MAX))
        }

        async fn renew_leases_of(&self, node: &str, task_ids: &[String], until_ms: u64) -> Result<usize, StoreError> {
            self.store().engine().renew_named("conduit_legacy_tasks", node, task_ids, until_ms).await
        }

        async fn lapsed_leases(&self, limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
            let now = common::ms(self.now_ms());
            let sql = format!(
                "{SELECT_ROW} WHERE lease_expires_ms < ?1 AND status IN {LIVE_STATUSES} \
                 AND (expires_at_ms IS NULL OR expires_at_ms >= ?1) ORDER BY lease_expires_ms LIMIT ?2"
            );
            self.store().engine().select(AssertSqlSafe(sql), |q| q.bind(now).bind(common::limit(limit))).await
        }

        async fn leased_to(&self, node: &str, limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
            let now = common::ms(self.now_ms());
            let sql = format!(
                "{SELECT_ROW} WHERE lease_node = ?1 AND status IN {LIVE_STATUSES} \
                 AND (expires_at_ms IS NULL OR expires_at_ms >= ?2) LIMIT ?3"
            );
            let node = node.to_owned();
            self.store()
                .engine()
                .select(AssertSqlSafe(sql), move |q| q.bind(node).bind(now).bind(common::limit(limit)))
                .await
        }
    }
}

#[async_trait]
impl LegacyTaskStore for SqliteLegacyStore {
    fn cursor_key(&self) -> &CursorKey {
        &self.inner.key
    }

    async fn list_after(
        &self,
        owner: Option<&str>,
        after: Option<&ListPosition>,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        let now = common::ms(self.now_ms());
        let (created, id) = after.map_or((-1, String::new()), |a| (common::ms(a.created_at_ms), a.task_id.clone()));
        let sql = format!(
            "{SELECT_ROW} WHERE list_owner = ?1 AND (created_at_ms, task_id) > (?2, ?3) \
             AND (expires_at_ms IS NULL OR expires_at_ms >= ?4) ORDER BY created_at_ms, task_id LIMIT ?5"
        );
        let list_owner = common::list_owner(owner);
        self.store()
            .engine()
            .select(AssertSqlSafe(sql), move |q| {
                q.bind(list_owner).bind(created).bind(id).bind(now).bind(common::limit(limit))
            })
            .await
    }
}
