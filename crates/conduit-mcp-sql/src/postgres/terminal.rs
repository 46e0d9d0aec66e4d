//! The terminal bounds on PostgreSQL (issue 34), for both task tables: a
//! principal's oldest terminal rows trimmed to its bound, and its oldest
//! terminal row making room for its create under the row cap. Each is one
//! transaction: the delete, and the room it gives back (the shards' counts
//! for the extension's table, the counter row for the legacy one), so the
//! caps stay exact on every node. `cleanup`'s sweeps give room back the same
//! way ([`PgEngine::delete_rows`]).

use super::shards::counted_delete;
use super::{PgEngine, backend, is_connection_error, shards};
use crate::pool::bounded;
use conduit_mcp::ext::tasks::TerminalBound;
use conduit_mcp::task::StoreError;
use sqlx::Postgres;
use sqlx::postgres::{PgArguments, PgConnection};

/// One task table's terminal statements; each answers `(shard, rows deleted)`.
#[derive(Debug)]
pub(super) struct TerminalSql {
    sharded: bool,
    trim: String,
    evict: String,
}

impl TerminalSql {
    /// The statements on table `t`, whose room is counted on shards or not.
    pub(super) fn of(t: &str, sharded: bool) -> Self {
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
            let with = format!("v AS ({victims}), ");
            counted_delete(t, sharded, &with, "task_id IN (SELECT task_id FROM v) AND terminal_at_ms IS NOT NULL")
        };
        Self { sharded, trim: delete(trim), evict: delete(oldest) }
    }
}

pub(super) type Counted<'q> = sqlx::query::QueryAs<'q, Postgres, (i16, i64), PgArguments>;

fn limit(v: Option<usize>) -> Option<i64> {
    v.map(crate::common::limit)
}

/// Runs `q` (a [`counted_delete`]) and gives the room of the rows it deleted
/// back to the shards they were counted on (a sharded table), in one
/// transaction; how many went. On the legacy table the statement itself
/// lowers the counter row.
async fn delete_counted(conn: &mut PgConnection, sharded: bool, q: Counted<'_>) -> Result<i64, sqlx::Error> {
    if !sharded {
        return Ok(q.fetch_all(conn).await?.iter().map(|(_, k)| k).sum());
    }
    let mut tx = sqlx::Connection::begin(conn).await?;
    let gone: Vec<(i16, i64)> = q.fetch_all(&mut *tx).await?;
    shards::release(&mut tx, &gone).await?;
    tx.commit().await?;
    Ok(gone.iter().map(|(_, k)| k).sum())
}

impl PgEngine {
    /// Runs `q` (a [`counted_delete`] on a table counted on shards or not).
    pub(super) async fn delete_rows(&self, sharded: bool, what: &str, q: Counted<'_>) -> Result<u64, StoreError> {
        let mut c = self.conn().await?;
        let done = bounded(c.deadline(), delete_counted(c.conn(), sharded, q)).await;
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
        let gone = self.delete_rows(sql.sharded, "trim a principal's terminal tasks", q).await?;
        Ok(usize::try_from(gone).unwrap_or(usize::MAX))
    }

    /// `TaskStore::evict_oldest_terminal` on the table of `sql`.
    pub(super) async fn evict_oldest_terminal_in(
        &self,
        sql: &'static TerminalSql,
        owner: &str,
    ) -> Result<bool, StoreError> {
        let q = sqlx::query_as(sql.evict.as_str()).bind(owner.to_owned());
        Ok(self.delete_rows(sql.sharded, "remove a principal's oldest terminal task", q).await? > 0)
    }
}
