//! What both engines' task change logs share: a page of rows selected as
//! `position, task_id, owner, status, status_message, updated_at_ms`
//! (positions ascending) turned into [`TaskChange`]s, with the position the
//! page reaches and whether more follow.

use super::row::backend;
use conduit_mcp::ext::tasks::TaskChange;
use conduit_mcp::protocol::tasks::TaskStatus;
use conduit_mcp::task::StoreError;
use sqlx::{Decode, Type};

/// What a read of the log found: the changes, the position it is complete
/// through, and whether the limit cut it short.
pub(crate) struct ChangeRows {
    /// The changes, in position order (rows of an unknown status skipped).
    pub(crate) changes: Vec<TaskChange>,
    /// Everything up to here was read: the last row's position when the
    /// limit was reached, else the head the read was bounded by.
    pub(crate) through: u64,
    /// Whether the limit was reached (more rows may follow `through`).
    pub(crate) more: bool,
}

/// A stored status, or `None` for one this build does not know.
fn status(s: &str) -> Option<TaskStatus> {
    serde_json::from_value(serde_json::Value::String(s.to_owned())).ok()
}

/// Decodes `rows`, read with `LIMIT limit` after `after` and bounded by `head`.
pub(crate) fn change_rows<R>(
    engine: &str,
    rows: &[R],
    after: u64,
    head: u64,
    limit: i64,
) -> Result<ChangeRows, StoreError>
where
    R: sqlx::Row,
    usize: sqlx::ColumnIndex<R>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
{
    let get = |e: sqlx::Error| backend(engine, "read the task change log", e);
    let mut changes = Vec::with_capacity(rows.len());
    let mut last = after;
    for row in rows {
        let pos: i64 = row.try_get(0).map_err(get)?;
        last = pos.unsigned_abs();
        let text: String = row.try_get(3).map_err(get)?;
        let Some(st) = status(&text) else { continue };
        let at: i64 = row.try_get(5).map_err(get)?;
        changes.push(TaskChange::new(
            last,
            row.try_get::<String, _>(1).map_err(get)?,
            row.try_get::<Option<String>, _>(2).map_err(get)?,
            st,
            row.try_get::<Option<String>, _>(4).map_err(get)?,
            at.unsigned_abs(),
        ));
    }
    let more = rows.len() as u64 >= limit.unsigned_abs();
    Ok(ChangeRows { changes, through: if more { last } else { head }, more })
}

/// A position or limit as a SQL `BIGINT` (saturating).
pub(crate) fn signed(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}
