//! `PostgresLegacyStore`: the legacy era's tasks in the same PostgreSQL
//! schema, in a table of their own (`conduit_legacy_tasks`), listable per owner.

use super::table_sql::{LEGACY_TASKS_SWAP, sweep_condition};
use super::{ENGINE, PostgresStore, backend, decode_row, is_connection_error};
use crate::common::rows_task_store;
use crate::common::{
    self, CLEANUP_BATCH, Hooked, LIVE_STATUSES, LegacyInsert, RowWrite, Rows, Stripes, Swap, Sweep, run_hooked,
};
use crate::pool::bounded;
use async_trait::async_trait;
use conduit_mcp::ext::tasks::legacy_store::{CursorKey, LegacyTaskStore, ListPosition};
use conduit_mcp::ext::tasks::{CreateCaps, StoreError, TaskRecord, TaskStore, TerminalBound, TransactionHook};
use sqlx::{AssertSqlSafe, PgConnection, SqlSafeStr};
use std::sync::Arc;

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

const SELECT_ROW: &str = "SELECT version, lease_node, lease_expires_ms, doc::text FROM conduit_legacy_tasks";

/// Legacy (`2025-11-25`) tasks in PostgreSQL, beside the extension's: the
/// same guarantees as [`PostgresStore`] (whose pool it shares), its own row
/// cap, and `list` by a keyset on `(owner, created_at_ms, task_id)`. Every
/// node on the schema shares the cursor key, so a `tasks/list` cursor from
/// one node pages on any other. Made by [`PostgresStore::legacy`]. Cheap to clone.
///
/// It claims no node id of its own (`claim_node` is the default): the
/// connection's one node claim belongs to the [`PostgresStore`]. Give the
/// legacy runtime the same `node_id` as the extension's, whose claim then
/// covers both; a random default id cannot collide with another node's.
#[derive(Debug, Clone)]
pub struct PostgresLegacyStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    store: PostgresStore,
    stripes: Stripes,
    key: CursorKey,
}

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
        let key = CursorKey::derive(secret.as_bytes());
        Ok(PostgresLegacyStore { inner: Arc::new(Inner { store: self.clone(), stripes: Stripes::new(256), key }) })
    }
}

impl PostgresLegacyStore {
    fn store(&self) -> &PostgresStore {
        &self.inner.store
    }

    async fn select<'q>(
        &self,
        what: &str,
        sql: impl SqlSafeStr,
        bind: impl Fn(super::PgQuery<'q>) -> super::PgQuery<'q>,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        self.store().engine().read_rows(what, sql, bind).await?.iter().map(decode_row).collect()
    }
}

#[async_trait]
impl Rows for PostgresLegacyStore {
    async fn read(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        let sql = format!("{SELECT_ROW} WHERE task_id = $1");
        let rows = self.select("read a legacy task", AssertSqlSafe(sql), |q| q.bind(task_id.to_owned())).await?;
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
            .swap_row("write a legacy task", Swap::new(LEGACY_TASKS_SWAP.as_str(), next, expected)?, hook)
            .await
    }

    async fn delete_batch(&self, sweep: Sweep, bound: i64) -> Result<u64, StoreError> {
        let condition = sweep_condition(sweep);
        let sql = format!(
            "WITH gone AS (DELETE FROM conduit_legacy_tasks WHERE {condition} AND task_id = ANY(ARRAY(\
                 SELECT task_id FROM conduit_legacy_tasks WHERE {condition} LIMIT $2)) RETURNING 1), \
                  k AS (SELECT count(*) AS k FROM gone) \
             UPDATE conduit_legacy_task_count SET n = GREATEST(n - (SELECT k FROM k), 0) WHERE id = 1 \
             RETURNING (SELECT k FROM k)"
        );
        let mut c = self.store().engine().conn().await?;
        let q = sqlx::query_scalar::<_, i64>(AssertSqlSafe(sql)).bind(bound).bind(CLEANUP_BATCH);
        let gone = bounded(c.deadline(), q.fetch_one(c.conn())).await;
        let gone = c.finish(gone, is_connection_error).map_err(|e| backend("delete expired legacy tasks", e))?;
        Ok(u64::try_from(gone).unwrap_or(0))
    }

    fn stripes(&self) -> &Stripes {
        &self.inner.stripes
    }
}

rows_task_store! {
    impl[] TaskStore for PostgresLegacyStore {
        fn name(&self) -> &'static str {
            "postgres-legacy"
        }

        fn now_ms(&self) -> u64 {
            self.store().now_ms()
        }

        /// Under a per-owner cap: in one transaction, the owner's creates take
        /// turns on an advisory lock (on every node), count the owner's rows by
        /// the list index, then claim a slot under the row cap and insert.
        async fn create_capped(&self, mut record: TaskRecord, caps: CreateCaps) -> Result<(), StoreError> {
            record.version = 1;
            let insert = LegacyInsert::new(&record, caps)?;
            let mut conn = self.store().engine().conn().await?;
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
                Ok(None) => Ok(()),
                Ok(Some(refusal)) => Err(refusal),
                Err(sqlx::Error::Database(e)) if e.is_unique_violation() => Err(StoreError::Duplicate),
                Err(e) => Err(backend("insert a legacy task", e)),
            }
        }

        async fn create_with(
            &self,
            mut record: TaskRecord,
            caps: CreateCaps,
            hook: &dyn TransactionHook,
        ) -> Result<(), StoreError> {
            record.version = 1;
            let insert = LegacyInsert::new(&record, caps)?;
            let conn = self.store().engine().conn().await?;
            let done = run_hooked(conn, "BEGIN", ENGINE, &record, hook, &insert, is_connection_error).await;
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
                "UPDATE conduit_legacy_tasks SET lease_expires_ms = GREATEST(lease_expires_ms, $1), \
                 version = version + 1 WHERE lease_node = $2 AND status IN {LIVE_STATUSES}"
            );
            let q = sqlx::query(AssertSqlSafe(sql)).bind(common::ms(until_ms)).bind(node.to_owned());
            let n = self.store().engine().write("renew legacy leases", q).await?;
            Ok(usize::try_from(n).unwrap_or(usize::MAX))
        }

        async fn renew_leases_of(&self, node: &str, task_ids: &[String], until_ms: u64) -> Result<usize, StoreError> {
            self.store().engine().renew_named("conduit_legacy_tasks", node, task_ids, until_ms).await
        }

        async fn lapsed_leases(&self, limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
            let now = common::ms(self.now_ms());
            let sql = format!(
                "{SELECT_ROW} WHERE lease_expires_ms < $1 AND status IN {LIVE_STATUSES} \
                 AND (expires_at_ms IS NULL OR expires_at_ms >= $1) ORDER BY lease_expires_ms LIMIT $2"
            );
            self.select("list lapsed legacy leases", AssertSqlSafe(sql), |q| q.bind(now).bind(common::limit(limit))).await
        }

        async fn leased_to(&self, node: &str, limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
            let now = common::ms(self.now_ms());
            let sql = format!(
                "{SELECT_ROW} WHERE lease_node = $1 AND status IN {LIVE_STATUSES} \
                 AND (expires_at_ms IS NULL OR expires_at_ms >= $2) LIMIT $3"
            );
            self.select("list a node's legacy leases", AssertSqlSafe(sql), |q| {
                q.bind(node.to_owned()).bind(now).bind(common::limit(limit))
            })
            .await
        }
    }
}

#[async_trait]
impl LegacyTaskStore for PostgresLegacyStore {
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
            "{SELECT_ROW} WHERE list_owner = $1 AND (created_at_ms, task_id) > ($2, $3) \
             AND (expires_at_ms IS NULL OR expires_at_ms >= $4) ORDER BY created_at_ms, task_id LIMIT $5"
        );
        let list_owner = common::list_owner(owner);
        self.select("list legacy tasks", AssertSqlSafe(sql), |q| {
            q.bind(list_owner.clone()).bind(created).bind(id.clone()).bind(now).bind(common::limit(limit))
        })
        .await
    }
}
