//! Task writes that share their transaction with a
//! [`TransactionHook`](conduit_mcp::task::TransactionHook), for both
//! engines and both task tables: the write, then the hook on the record as
//! written, then one commit — or a rollback of both.

use super::{Columns, Query, ms};
use crate::pool::{Checkout, bounded};
use async_trait::async_trait;
use conduit_mcp::ext::tasks::TaskRecord;
use conduit_mcp::task::{StoreError, StoreTransaction, TransactionHook};
use sqlx::{Database, Encode, Type};
use std::any::Any;

/// The transaction lent to a hook: the engine's connection inside it.
struct Lent<'a, C> {
    store: &'static str,
    conn: &'a mut C,
}

impl<C: Send + 'static> StoreTransaction for Lent<'_, C> {
    fn store(&self) -> &'static str {
        self.store
    }

    fn connection(&mut self) -> &mut (dyn Any + Send) {
        self.conn
    }
}

/// What a hooked write did: the outer `Err` is the database's (the
/// connection may be broken), the inner one the store's answer (a cap, a
/// duplicate id, the hook's failure).
pub(crate) type Hooked<T> = Result<Result<T, StoreError>, sqlx::Error>;

/// The one task-row statement of a hooked write, run inside its transaction.
#[async_trait]
pub(crate) trait RowWrite<C>: Send + Sync {
    /// `Ok(true)` written, `Ok(false)` nothing to write (a lost
    /// compare-and-swap), `Err` the store's refusal (a cap, a duplicate id).
    async fn write(&self, conn: &mut C) -> Hooked<bool>;
}

/// Begins a transaction on `conn` with `begin` (`BEGIN`, or SQLite's
/// `BEGIN IMMEDIATE`), runs `row`, then — if it wrote the row — `hook` on
/// `record`, and commits. Whatever fails rolls everything back (the
/// transaction is dropped uncommitted).
pub(crate) async fn write_hooked<C>(
    conn: &mut C,
    begin: &'static str,
    store: &'static str,
    record: &TaskRecord,
    hook: &dyn TransactionHook,
    row: &dyn RowWrite<C>,
) -> Hooked<bool>
where
    C: sqlx::Connection + Send + 'static,
    C::Database: sqlx::Database<Connection = C>,
{
    let mut tx = conn.begin_with(sqlx::SqlStr::from_static(begin)).await?;
    match row.write(&mut tx).await? {
        Ok(true) => {}
        other => return Ok(other),
    }
    if let Err(e) = hook.run(&mut Lent { store, conn: &mut *tx }, record.written()).await {
        return Ok(Err(StoreError::hook(e)));
    }
    tx.commit().await?;
    Ok(Ok(true))
}

/// [`write_hooked`] on a checked-out connection, under its deadline; the
/// connection goes back to the pool unless `broken` says the failure may
/// have left it unusable.
pub(crate) async fn run_hooked<C>(
    mut conn: Checkout<'_, C>,
    begin: &'static str,
    store: &'static str,
    record: &TaskRecord,
    hook: &dyn TransactionHook,
    row: &dyn RowWrite<C>,
    broken: impl Fn(&sqlx::Error) -> bool,
) -> Hooked<bool>
where
    C: sqlx::Connection + Send + 'static,
    C::Database: sqlx::Database<Connection = C>,
{
    let deadline = conn.deadline();
    let done = bounded(deadline, write_hooked(conn.conn(), begin, store, record, hook, row)).await;
    conn.finish(done, broken)
}

/// A compare-and-swap of one task row: `sql` (the engine's, for its table)
/// writes `next` over the row still at `expected`. Each engine runs it with
/// its own executor ([`RowWrite`]).
pub(crate) struct Swap<'a> {
    sql: &'static str,
    columns: Columns,
    next: &'a TaskRecord,
    expected: u64,
    /// Whether the statement also sets `status_message` and `updated_at_ms`
    /// (SQLite's: its 12th and 13th parameters).
    change_columns: bool,
}

impl<'a> Swap<'a> {
    pub(crate) fn new(sql: &'static str, next: &'a TaskRecord, expected: u64) -> Result<Self, StoreError> {
        Ok(Self { sql, columns: Columns::of(next)?, next, expected, change_columns: false })
    }

    /// The statement also sets `status_message` and `updated_at_ms`, bound after
    /// the expected version.
    pub(crate) fn with_change_columns(mut self) -> Self {
        self.change_columns = true;
        self
    }

    /// The record it writes.
    pub(crate) fn record(&self) -> &TaskRecord {
        self.next
    }

    /// The statement, bound: the nine columns, the id, the expected version.
    pub(crate) fn query<DB>(&self) -> Query<'static, DB>
    where
        DB: Database,
        for<'v> &'v str: Encode<'v, DB> + Type<DB>,
        for<'v> Option<&'v str>: Encode<'v, DB> + Type<DB>,
        for<'v> i64: Encode<'v, DB> + Type<DB>,
        for<'v> Option<i64>: Encode<'v, DB> + Type<DB>,
    {
        let q = self.columns.bind(sqlx::query(self.sql)).bind(self.next.task_id.as_str()).bind(ms(self.expected));
        if self.change_columns { self.columns.bind_change(q) } else { q }
    }
}
