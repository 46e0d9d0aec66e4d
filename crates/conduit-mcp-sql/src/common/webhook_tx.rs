//! The webhook stores' transaction bodies that read the same on both
//! engines. Each runs on the connection of a transaction its store opened
//! (`BEGIN IMMEDIATE` on SQLite, a plain one on PostgreSQL); the statements
//! that lock rows and move the watermark are the engine's ([`Tx`]).

use super::webhooks as sql;
use conduit_mcp::ext::events::webhook::{
    OutboxEntry, Settlement, UpsertError, Upserted, WebhookCaps, WebhookSubscription,
};
use sqlx::{AssertSqlSafe, Database, Decode, Encode, Executor, IntoArguments, Row, Type};
use std::marker::PhantomData;

/// How many rows a statement changed, as each engine's result tells it.
pub(crate) trait RowsAffected {
    /// Rows changed.
    fn rows_affected(&self) -> u64;
}

#[cfg(feature = "sqlite")]
impl RowsAffected for sqlx::sqlite::SqliteQueryResult {
    fn rows_affected(&self) -> u64 {
        sqlx::sqlite::SqliteQueryResult::rows_affected(self)
    }
}

#[cfg(feature = "postgres")]
impl RowsAffected for sqlx::postgres::PgQueryResult {
    fn rows_affected(&self) -> u64 {
        sqlx::postgres::PgQueryResult::rows_affected(self)
    }
}

/// How an upsert's transaction ended.
pub(crate) enum Upsert {
    /// Written (and committed).
    Done(Upserted),
    /// A cap (its name in the error, its value) left it out: nothing written.
    Full(&'static str, usize),
}

impl Upsert {
    /// What the store's `upsert` returns.
    pub(crate) fn answer(self) -> Result<Upserted, UpsertError> {
        match self {
            Self::Done(u) => Ok(u),
            Self::Full(limit, max) => Err(UpsertError::Full { limit, max }),
        }
    }
}

/// The transaction bodies on engine `DB` (their bounds written once), with
/// the statements that are the engine's.
#[derive(Clone, Copy)]
pub(crate) struct Tx<DB> {
    /// `$1` = principal: makes upserts of one principal take turns, when the
    /// engine's transactions do not already.
    pub(crate) serialize: Option<&'static str>,
    /// `$1` = id: the stored subscription's `refresh_before_ms`, its row locked.
    pub(crate) existing: &'static str,
    /// `$1` = id: locks the subscription's row; one row when it is stored.
    pub(crate) lock: &'static str,
    /// `$1` = id: moves the subscription's watermark.
    pub(crate) watermark: &'static str,
    /// The engine the bodies run on.
    pub(crate) engine: PhantomData<fn() -> DB>,
}

impl<DB> Tx<DB>
where
    DB: Database,
    DB::QueryResult: RowsAffected,
    for<'e> &'e mut DB::Connection: Executor<'e, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> String: Encode<'q, DB> + Type<DB>,
    for<'q> Option<String>: Encode<'q, DB> + Type<DB>,
    for<'q> bool: Encode<'q, DB> + Type<DB>,
    for<'q> i32: Encode<'q, DB> + Type<DB>,
    for<'q> i64: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> Option<i64>: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> Vec<u8>: Encode<'q, DB> + Type<DB>,
    usize: sqlx::ColumnIndex<DB::Row>,
{
    /// `upsert`: `sub` created, refreshed, or made anew over a lapsed one of
    /// its id, unless the principal's other live subscriptions leave no room
    /// under `caps`.
    pub(crate) async fn upsert(
        self,
        conn: &mut DB::Connection,
        sub: &WebhookSubscription,
        caps: WebhookCaps,
        now: i64,
    ) -> Result<Upsert, sqlx::Error> {
        let principal = sub.key.principal.as_str();
        if let Some(statement) = self.serialize {
            sqlx::query(statement).bind(principal).execute(&mut *conn).await?;
        }
        let stored: Option<Option<i64>> =
            sqlx::query_scalar(self.existing).bind(sub.id.as_str()).fetch_optional(&mut *conn).await?;
        let usage =
            sqlx::query(sql::USAGE_SQL).bind(principal).bind(sub.id.as_str()).bind(now).fetch_one(&mut *conn).await?;
        let count = usize::try_from(usage.try_get::<i64, _>(0)?).unwrap_or(0);
        let bytes = usize::try_from(usage.try_get::<i64, _>(1)?).unwrap_or(0);
        if count + 1 > caps.max_per_principal {
            return Ok(Upsert::Full("subscriptions", caps.max_per_principal));
        }
        if bytes + sub.held_bytes() > caps.max_bytes_per_principal {
            return Ok(Upsert::Full("subscriptionBytes", caps.max_bytes_per_principal));
        }
        let live = stored.map(|until| until.is_none_or(|t| t > now));
        if live == Some(true) {
            sql::bind_subscription(sqlx::query(sql::REFRESH_SQL), sub).execute(&mut *conn).await?;
            return Ok(Upsert::Done(Upserted::Refreshed));
        }
        if live == Some(false) {
            sqlx::query(sql::DELETE_OUTBOX_SQL).bind(sub.id.as_str()).execute(&mut *conn).await?;
            sqlx::query(sql::DELETE_SUB_SQL).bind(sub.id.as_str()).execute(&mut *conn).await?;
        }
        sql::bind_subscription(sqlx::query(sql::INSERT_SQL), sub).execute(&mut *conn).await?;
        Ok(Upsert::Done(Upserted::Created))
    }

    /// `remove`: the subscription `id` of `principal` and its outbox; whether it was live at `now`.
    pub(crate) async fn remove(
        self,
        conn: &mut DB::Connection,
        id: &str,
        principal: &str,
        now: i64,
    ) -> Result<bool, sqlx::Error> {
        let removed: Option<Option<i64>> =
            sqlx::query_scalar(sql::REMOVE_SQL).bind(id).bind(principal).fetch_optional(&mut *conn).await?;
        if removed.is_some() {
            sqlx::query(sql::DELETE_OUTBOX_SQL).bind(id).execute(&mut *conn).await?;
        }
        Ok(removed.is_some_and(|until| until.is_none_or(|t| t > now)))
    }

    /// `feed`: moves subscription `id`'s `fed_through` from `from` to `to`
    /// and enqueues its `entries` with the new watermark, if it is stored and
    /// no other feed moved it first.
    pub(crate) async fn feed(
        self,
        conn: &mut DB::Connection,
        id: &str,
        from: i64,
        to: i64,
        entries: &[OutboxEntry],
    ) -> Result<bool, sqlx::Error> {
        if sqlx::query(self.lock).bind(id).fetch_optional(&mut *conn).await?.is_none() {
            return Ok(false);
        }
        let q = sqlx::query(sql::FEED_SQL).bind(id).bind(from).bind(to);
        if q.execute(&mut *conn).await?.rows_affected() == 0 {
            return Ok(false);
        }
        for e in entries.iter().filter(|e| e.subscription_id == id) {
            sql::bind_entry(sqlx::query(sql::ENQUEUE_SQL), e).execute(&mut *conn).await?;
        }
        sqlx::query(AssertSqlSafe(self.watermark)).bind(id).execute(&mut *conn).await?;
        Ok(true)
    }

    /// `settle`: entry `id` of subscription `sub`, if `node` holds its lease,
    /// goes (or waits for its retry) as `outcome` says; the subscription's
    /// failure state and watermark follow.
    pub(crate) async fn settle(
        self,
        conn: &mut DB::Connection,
        node: &str,
        sub: &str,
        id: &str,
        outcome: Settlement,
        now: i64,
    ) -> Result<bool, sqlx::Error> {
        if sqlx::query(self.lock).bind(sub).fetch_optional(&mut *conn).await?.is_none() {
            return Ok(false);
        }
        let q = match outcome {
            Settlement::RetryAt(at, _) => {
                sqlx::query(sql::SETTLE_RETRY_SQL).bind(sub).bind(id).bind(node).bind(sql::int(at))
            }
            _ => sqlx::query(sql::SETTLE_DELETE_SQL).bind(sub).bind(id).bind(node),
        };
        if q.execute(&mut *conn).await?.rows_affected() == 0 {
            return Ok(false);
        }
        let state = match outcome {
            Settlement::Delivered => sqlx::query(sql::DELIVERED_SQL).bind(sub),
            Settlement::Dropped(f) | Settlement::RetryAt(_, f) => {
                sqlx::query(sql::FAILED_SQL).bind(sub).bind(now).bind(f.as_str())
            }
        };
        state.execute(&mut *conn).await?;
        if !matches!(outcome, Settlement::RetryAt(..)) {
            sqlx::query(AssertSqlSafe(self.watermark)).bind(sub).execute(&mut *conn).await?;
        }
        Ok(true)
    }
}
