//! The PostgreSQL task change log (migrations 0035, 0036, 0042): rows written
//! by statement triggers in the transaction of every task write that changes a
//! status or status message, in both task tables, once a reader turned the log
//! on (a task's rows found, and removed with it, by its creation time and id);
//! positions (`pos`) given after commit, in commit order, by
//! `conduit_task_changes_sequence()`, so every node reads the same positions.

use super::{PgEngine, backend, is_connection_error};
use crate::common::{change_rows, signed};
use crate::pool::bounded;
use async_trait::async_trait;
use conduit_mcp::ext::tasks::{ChangePage, ChangeQuery, TaskChangeFeed};
use conduit_mcp::task::StoreError;
use sqlx::Row;
use std::sync::Arc;
use tokio::sync::OnceCell;

/// The change log of one PostgreSQL database (schema).
#[derive(Debug)]
pub(crate) struct PgChanges {
    engine: Arc<PgEngine>,
    /// The log's epoch, read when the log is first turned on.
    epoch: OnceCell<u64>,
}

const ENABLE: &str = "UPDATE conduit_task_change_log SET enabled = true WHERE id = 1 AND NOT enabled";
const EPOCH: &str = "SELECT epoch FROM conduit_task_change_log WHERE id = 1";
/// Numbers what committed since the last call; the last position.
const HEAD: &str = "SELECT conduit_task_changes_sequence()";
/// Whether committed changes still wait for a position (an older transaction
/// is running): the partial index on unnumbered rows answers it.
const UNNUMBERED: &str = "SELECT EXISTS (SELECT 1 FROM conduit_task_changes WHERE pos IS NULL)";
const READ: &str = "SELECT pos, task_id, owner, status, status_message, updated_at_ms FROM conduit_task_changes \
     WHERE owner = $1 AND pos > $2 AND pos <= $3 AND status = ANY($4) \
     AND ($5::text IS NULL OR task_id = $5) AND ($6::bigint IS NULL OR updated_at_ms >= $6) ORDER BY pos LIMIT $7";
const SKIPPED: &str = "SELECT EXISTS (SELECT 1 FROM conduit_task_changes \
     WHERE owner = $1 AND pos > $2 AND pos <= $3 AND status = ANY($4) \
     AND ($5::text IS NULL OR task_id = $5) AND updated_at_ms < $6)";

impl PgChanges {
    pub(crate) fn new(engine: Arc<PgEngine>) -> Self {
        Self { engine, epoch: OnceCell::new() }
    }

    async fn scalar(&self, what: &str, sql: &'static str) -> Result<i64, StoreError> {
        let mut c = self.engine.conn().await?;
        let deadline = c.deadline();
        let v = bounded(deadline, sqlx::query_scalar::<_, i64>(sql).fetch_one(c.conn())).await;
        c.finish(v, is_connection_error).map_err(|e| backend(what, e))
    }

    async fn exists(&self, what: &str, sql: &'static str) -> Result<bool, StoreError> {
        let mut c = self.engine.conn().await?;
        let deadline = c.deadline();
        let v = bounded(deadline, sqlx::query_scalar::<_, bool>(sql).fetch_one(c.conn())).await;
        c.finish(v, is_connection_error).map_err(|e| backend(what, e))
    }

    /// Turns the log on (once per process; the database remembers) and reads its epoch.
    async fn ready(&self) -> Result<u64, StoreError> {
        self.epoch
            .get_or_try_init(|| async {
                self.engine.write("turn the task change log on", sqlx::query(ENABLE)).await?;
                Ok(self.scalar("read the task change log", EPOCH).await?.unsigned_abs())
            })
            .await
            .copied()
    }
}

#[async_trait]
impl TaskChangeFeed for PgChanges {
    fn epoch(&self) -> u64 {
        self.epoch.get().copied().unwrap_or(0)
    }

    async fn head(&self) -> Result<u64, StoreError> {
        self.ready().await?;
        Ok(self.scalar("number the task change log", HEAD).await?.unsigned_abs())
    }

    async fn read(&self, q: ChangeQuery<'_>) -> Result<ChangePage, StoreError> {
        let head = self.head().await?;
        if q.after > head {
            // A position this log never gave: start from now.
            return Ok(ChangePage::new(Vec::new(), head, true, false));
        }
        let statuses: Vec<&str> = q.statuses.iter().map(|s| s.as_str()).collect();
        let limit = signed(u64::try_from(q.limit).unwrap_or(u64::MAX)).max(1);
        let floor = q.floor_ms.map(signed);
        let rows = self
            .engine
            .read_rows("read the task change log", READ, |b| {
                b.bind(q.owner)
                    .bind(signed(q.after))
                    .bind(signed(head))
                    .bind(statuses.clone())
                    .bind(q.task_id)
                    .bind(floor)
                    .bind(limit)
            })
            .await?;
        let page = change_rows("postgres", &rows, q.after, head, limit)?;
        let through = page.through;
        let truncated = match floor {
            None => false,
            Some(f) => {
                let skipped = self
                    .engine
                    .read_rows("read the task change log", SKIPPED, |b| {
                        b.bind(q.owner)
                            .bind(signed(q.after))
                            .bind(signed(through))
                            .bind(statuses.clone())
                            .bind(q.task_id)
                            .bind(f)
                    })
                    .await?;
                skipped.first().is_some_and(|r| r.get::<bool, _>(0))
            }
        };
        // Rows this snapshot sees without a position committed already; their
        // NOTIFY came and went, so the reader must look again by itself.
        let settling = !page.more && self.exists("read the task change log", UNNUMBERED).await?;
        Ok(ChangePage::new(page.changes, through, truncated, page.more).settling(settling))
    }
}
