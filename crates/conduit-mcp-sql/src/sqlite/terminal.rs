//! The terminal bounds on SQLite (issue 34), for both task tables: a
//! principal's oldest terminal rows trimmed to its bound, and its oldest
//! terminal row making room for its create under the row cap. Each is one `DELETE` on the writer connection, which orders every
//! write on the file; the delete trigger lowers the row counter with it.

use super::SqliteEngine;
use conduit_mcp::ext::tasks::TerminalBound;
use conduit_mcp::task::StoreError;

/// One task table's terminal statements.
#[derive(Debug)]
pub(super) struct TerminalSql {
    trim: String,
    evict: String,
}

impl TerminalSql {
    /// The statements on table `t`.
    pub(super) fn of(t: &str) -> Self {
        // An owner's terminal rows, newest first: how many so far and their bytes
        // (`*_owner_ended` holds all of it). Past the newest, a row goes when
        // either passes its bound (`?2` rows, `?3` bytes; NULL: no bound).
        let trim = format!(
            "DELETE FROM {t} WHERE task_id IN (SELECT task_id FROM (\
                 SELECT task_id, row_number() OVER w AS n, sum(doc_bytes) OVER w AS kept FROM {t} \
                 WHERE owner = ?1 AND terminal_at_ms IS NOT NULL \
                 WINDOW w AS (ORDER BY terminal_at_ms DESC, task_id DESC)) \
             WHERE n > 1 AND (n > ?2 OR kept > ?3))"
        );
        let evict = format!(
            "DELETE FROM {t} WHERE task_id = (SELECT task_id FROM {t} \
             WHERE owner = ?1 AND terminal_at_ms IS NOT NULL ORDER BY terminal_at_ms, task_id LIMIT 1)"
        );
        Self { trim, evict }
    }
}

fn limit(v: Option<usize>) -> Option<i64> {
    v.map(crate::common::limit)
}

impl SqliteEngine {
    /// `TaskStore::trim_terminal` on the table of `sql`.
    pub(super) async fn trim_terminal_in(
        &self,
        sql: &'static TerminalSql,
        owner: &str,
        bound: TerminalBound,
    ) -> Result<usize, StoreError> {
        let q = sqlx::query(sql.trim.as_str()).bind(owner.to_owned()).bind(limit(bound.max_rows));
        let gone = self.write("trim a principal's terminal tasks", q.bind(limit(bound.max_bytes))).await?;
        Ok(usize::try_from(gone).unwrap_or(usize::MAX))
    }

    /// `TaskStore::evict_oldest_terminal` on the table of `sql`.
    pub(super) async fn evict_oldest_terminal_in(
        &self,
        sql: &'static TerminalSql,
        owner: &str,
    ) -> Result<bool, StoreError> {
        let q = sqlx::query(sql.evict.as_str()).bind(owner.to_owned());
        Ok(self.write("remove a principal's oldest terminal task", q).await? > 0)
    }
}
