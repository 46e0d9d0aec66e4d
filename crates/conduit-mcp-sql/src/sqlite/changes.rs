//! The SQLite task change log (migrations 0035, 0042): rows written by
//! triggers in the transaction of every task write that changes a status or
//! status message, in both task tables, once a reader turned the log on; a
//! task's rows found (and removed with it) by its creation time and id, so a
//! create's row goes at the end of that index. SQLite has one writer, so
//! positions follow commit order and a reader needs no more than `seq > after`.

use super::{SqliteEngine, backend, broken};
use crate::common::{change_rows, signed};
use crate::pool::bounded;
use async_trait::async_trait;
use conduit_mcp::ext::tasks::{ChangePage, ChangeQuery, TaskChangeFeed};
use conduit_mcp::task::StoreError;
use std::sync::Arc;
use tokio::sync::OnceCell;

/// The change log of one SQLite database.
#[derive(Debug)]
pub(crate) struct SqliteChanges {
    engine: Arc<SqliteEngine>,
    /// The log's epoch, read when the log is first turned on.
    epoch: OnceCell<u64>,
}

const ENABLE: &str = "UPDATE conduit_task_change_log SET enabled = 1 WHERE id = 1 AND enabled = 0";
const EPOCH: &str = "SELECT epoch FROM conduit_task_change_log WHERE id = 1";
const HEAD: &str = "SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'conduit_task_changes'), 0)";
/// `?2` is the owner, `?3` the head read just before (so a change committed
/// between the two reads is left for the next one), `?4` the statuses as
/// `,a,b,`, `?5` one task or NULL, `?6` the floor or NULL.
const READ: &str = "SELECT seq, task_id, owner, status, status_message, updated_at_ms FROM conduit_task_changes \
     WHERE owner = ?2 AND seq > ?1 AND seq <= ?3 AND instr(?4, ',' || status || ',') > 0 \
     AND (?5 IS NULL OR task_id = ?5) AND (?6 IS NULL OR updated_at_ms >= ?6) ORDER BY seq LIMIT ?7";
/// Whether the floor skipped a change this read would have returned.
const SKIPPED: &str = "SELECT EXISTS (SELECT 1 FROM conduit_task_changes \
     WHERE owner = ?2 AND seq > ?1 AND seq <= ?3 AND instr(?4, ',' || status || ',') > 0 \
     AND (?5 IS NULL OR task_id = ?5) AND updated_at_ms < ?6)";

impl SqliteChanges {
    pub(crate) fn new(engine: Arc<SqliteEngine>) -> Self {
        Self { engine, epoch: OnceCell::new() }
    }

    /// Turns the log on (once per process; the database remembers) and reads its epoch.
    async fn ready(&self) -> Result<u64, StoreError> {
        self.epoch
            .get_or_try_init(|| async {
                let mut c = self.engine.writer().await?;
                let deadline = c.deadline();
                let on = bounded(deadline, sqlx::query(ENABLE).execute(c.conn())).await;
                c.finish(on, broken).map_err(|e| backend("turn the task change log on", e))?;
                let mut c = self.engine.reader().await?;
                let deadline = c.deadline();
                let epoch = bounded(deadline, sqlx::query_scalar::<_, i64>(EPOCH).fetch_one(c.conn())).await;
                let epoch = c.finish(epoch, broken).map_err(|e| backend("read the task change log", e))?;
                Ok(epoch.unsigned_abs())
            })
            .await
            .copied()
    }
}

#[async_trait]
impl TaskChangeFeed for SqliteChanges {
    fn epoch(&self) -> u64 {
        self.epoch.get().copied().unwrap_or(0)
    }

    async fn head(&self) -> Result<u64, StoreError> {
        self.ready().await?;
        let mut c = self.engine.reader().await?;
        let deadline = c.deadline();
        let head = bounded(deadline, sqlx::query_scalar::<_, i64>(HEAD).fetch_one(c.conn())).await;
        let head = c.finish(head, broken).map_err(|e| backend("read the task change log", e))?;
        Ok(head.unsigned_abs())
    }

    async fn read(&self, q: ChangeQuery<'_>) -> Result<ChangePage, StoreError> {
        let head = self.head().await?;
        if q.after > head {
            // A position this log never gave: start from now.
            return Ok(ChangePage::new(Vec::new(), head, true, false));
        }
        let statuses: String = q.statuses.iter().fold(",".to_owned(), |s, st| s + st.as_str() + ",");
        let limit = signed(q.limit as u64).max(1);
        let floor = q.floor_ms.map(signed);
        let mut c = self.engine.reader().await?;
        let deadline = c.deadline();
        let rows = sqlx::query(READ)
            .bind(signed(q.after))
            .bind(q.owner)
            .bind(signed(head))
            .bind(&statuses)
            .bind(q.task_id)
            .bind(floor)
            .bind(limit)
            .fetch_all(c.conn());
        let rows = bounded(deadline, rows).await;
        let rows = c.finish(rows, broken).map_err(|e| backend("read the task change log", e))?;
        let page = change_rows("sqlite", &rows, q.after, head, limit)?;
        let through = page.through;
        let truncated = match floor {
            None => false,
            Some(f) => {
                let mut c = self.engine.reader().await?;
                let deadline = c.deadline();
                let q = sqlx::query_scalar::<_, bool>(SKIPPED)
                    .bind(signed(q.after))
                    .bind(q.owner)
                    .bind(signed(through))
                    .bind(&statuses)
                    .bind(q.task_id)
                    .bind(f)
                    .fetch_one(c.conn());
                let skipped = bounded(deadline, q).await;
                c.finish(skipped, broken).map_err(|e| backend("read the task change log", e))?
            }
        };
        Ok(ChangePage::new(page.changes, through, truncated, page.more))
    }
}
