//! The terminal bounds on PostgreSQL (issue 34), for both task tables: a
//! principal's oldest terminal rows trimmed to its bound, and its oldest
//! terminal row making room for its create under the row cap. Each is one transaction: the delete, and the room it gives back (the
//! shards' counts for the extension's table, the counter row for the legacy
//! one), so the caps stay exact on every node.

use super::{PgEngine, backend, is_connection_error, shards};
use crate::pool::bounded;
use conduit_mcp::ext::tasks::{StoreError, TerminalBound};
use sqlx::Postgres;
use sqlx::postgres::{PgArguments, PgConnection};
use std::sync::LazyLock;

/// One task table's terminal statements; each answers `(shard, rows deleted)`.
pub(super) struct TerminalSql {
    sharded: bool,
    trim: String,
    evict: String,
}

/// The extension's tasks (their room is counted on shards).
pub(super) static TASKS: LazyLock<TerminalSql> = LazyLock::new(|| TerminalSql::of("conduit_tasks", true));

/// The legacy era's tasks (their room is one counter row).
pub(super) static LEGACY_TASKS: LazyLock<TerminalSql> =
    LazyLock::new(|| TerminalSql::of("conduit_legacy_tasks", false));

impl TerminalSql {
    fn of(t: &str, sharded: bool) -> Self {
        // An owner's terminal rows, newest first: how many so far and their bytes.
        // Past the newest, a row goes when either passes its bound (`$2` rows,
        // `$3` bytes; NULL: no bound).
        let trim = format!(
            "SELECT task_id FROM (\
                 SELECT task_id, row_number() OVER w AS n, sum(doc_bytes) OVER w AS kept FROM {t} \
                 WHERE owner = $1 AND terminal_at_ms IS NOT NULL \
                 WINDOW w AS (ORDER BY terminal_at_ms DESC, task_id DESC)) v \
             WHERE n > 1 AND (n > $2::bigint OR kept > $3::bigint)"
        );
        // Another create of the owner making room at once takes the next one (SKIP LOCKED).
        let oldest = format!(
            "SELECT task_id FROM {t} WHERE owner = $1 AND terminal_at_ms IS NOT NULL \
             ORDER BY terminal_at_ms, task_id LIMIT 1 FOR UPDATE SKIP LOCKED"
        );
        let delete = |victims: String| {
            let gone = format!(
                "WITH v AS ({victims}), gone AS (DELETE FROM {t} \
                 WHERE task_id IN (SELECT task_id FROM v) AND terminal_at_ms IS NOT NULL RETURNING {})",
                if sharded { "shard" } else { "0::smallint AS shard" }
            );
            if sharded {
                format!("{gone} SELECT shard, count(*)::bigint FROM gone GROUP BY shard ORDER BY shard")
            } else {
                format!(
                    "{gone}, k AS (SELECT count(*)::bigint AS k FROM gone) \
                     UPDATE conduit_legacy_task_count SET n = GREATEST(n - (SELECT k FROM k), 0) \
                     WHERE id = 1 AND (SELECT k FROM k) > 0 RETURNING 0::smallint, (SELECT k FROM k)"
                )
            }
        };
        Self { sharded, trim: delete(trim), evict: delete(oldest) }
    }
}

type Counted<'q> = sqlx::query::QueryAs<'q, Postgres, (i16, i64), PgArguments>;

fn limit(v: Option<usize>) -> Option<i64> {
    v.map(crate::common::limit)
}

/// Runs `q` and gives the room of the rows it deleted back to the shards
/// they were counted on (a sharded table), in one transaction; how many went.
async fn delete_counted(conn: &mut PgConnection, sharded: bool, q: Counted<'_>) -> Result<i64, sqlx::Error> {
    let mut tx = sqlx::Connection::begin(conn).await?;
    let gone: Vec<(i16, i64)> = q.fetch_all(&mut *tx).await?;
    if sharded {
        shards::release(&mut tx, &gone).await?;
    }
    tx.commit().await?;
    Ok(gone.iter().map(|(_, k)| k).sum())
}

impl PgEngine {
    async fn delete_terminal(&self, sql: &TerminalSql, what: &str, q: Counted<'_>) -> Result<u64, StoreError> {
        let mut c = self.conn().await?;
        let done = bounded(c.deadline(), delete_counted(c.conn(), sql.sharded, q)).await;
        let gone = c.finish(done, is_connection_error).map_err(|e| backend(what, e))?;
        Ok(u64::try_from(gone).unwrap_or(0))
    }

    /// `TaskStore::trim_terminal` on the table of `sql`.
    pub(super) async fn trim_terminal_in(
        &self,
        sql: &'static TerminalSql,
        owner: &str,
        bound: TerminalBound,
    ) -> Result<usize, StoreError> {
        let q = sqlx::query_as(sql.trim.as_str()).bind(owner.to_owned());
        let q = q.bind(limit(bound.max_rows)).bind(limit(bound.max_bytes));
        let gone = self.delete_terminal(sql, "trim a principal's terminal tasks", q).await?;
        Ok(usize::try_from(gone).unwrap_or(usize::MAX))
    }

    /// `TaskStore::evict_oldest_terminal` on the table of `sql`.
    pub(super) async fn evict_oldest_terminal_in(
        &self,
        sql: &'static TerminalSql,
        owner: &str,
    ) -> Result<bool, StoreError> {
        let q = sqlx::query_as(sql.evict.as_str()).bind(owner.to_owned());
        Ok(self.delete_terminal(sql, "remove a principal's oldest terminal task", q).await? > 0)
    }
}
