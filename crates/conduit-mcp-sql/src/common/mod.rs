//! What both engines share: the row layout (`row`), a page of the task
//! change log (`changes`), the store over an
//! engine's statements for a task table (`store`, `table`), and the schema
//! checks (`schema`).

mod changes;
#[cfg(feature = "oauth")]
pub(crate) mod dpop_replay;
mod group_commit;
mod hooked;
mod legacy_insert;
mod row;
mod schema;
mod session;
mod store;
mod table;
pub(crate) mod webhook_tx;
pub(crate) mod webhooks;

pub(crate) use changes::{change_rows, signed};
#[cfg(feature = "postgres")]
pub(crate) use group_commit::InFlight;
pub(crate) use group_commit::{BatchWriter, GroupCommit, NewRow};
pub(crate) use hooked::{Hooked, RowWrite, Swap, run_hooked};
pub(crate) use legacy_insert::LegacyInsert;
pub(crate) use row::{Columns, Query, backend, decode_row};
pub(crate) use schema::{Migration, check_applied, check_task_table};
#[cfg(feature = "sqlite")]
pub(crate) use session::SESSION_COLUMNS;
pub(crate) use session::{decode_session, digests, id_hash, json_columns, session_backend};
pub use store::{Engine, Page, SqlStore, Sweep};
pub use table::{LegacyTable, TableKind, TaskTable};

/// Statuses that still may change, as stored in the `status` column.
pub(crate) const LIVE_STATUSES: &str = "('working', 'input_required')";

/// Rows deleted per statement by `cleanup`, so a large sweep never holds the
/// write lock (SQLite) or a huge transaction (PostgreSQL) for long.
pub(crate) const CLEANUP_BATCH: i64 = 5_000;

/// Milliseconds as a SQL `BIGINT` (saturating: no u64 time this crate stores
/// comes near `i64::MAX`, but a `ttl` of `u64::MAX` would).
pub(crate) fn ms(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// The system time in epoch milliseconds (for bookkeeping columns only; task
/// times come from the injected clock).
pub(crate) fn wall_clock_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// The `list_owner` column of a legacy task: `-` when unauthenticated, `+`
/// and the principal id otherwise (one indexable value, `None` and `""` apart).
pub(crate) fn list_owner(owner: Option<&str>) -> String {
    match owner {
        None => "-".to_owned(),
        Some(o) => format!("+{o}"),
    }
}

/// `limit` as a SQL `LIMIT`.
pub(crate) fn limit(v: usize) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}
