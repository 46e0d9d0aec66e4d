//! SQLite's side of group commit (the queue is `common::group_commit`): a
//! lone create is one statement; several are one `BEGIN IMMEDIATE`
//! transaction with multi-row inserts, each still checked against its own cap
//! and failing alone on a duplicate id.

use super::{SqlQuery, backend, broken};
use crate::common::{BatchWriter, NewRow};
use crate::pool::ConnPool;
use async_trait::async_trait;
use conduit_mcp::task::StoreError;
use sqlx::AssertSqlSafe;
use sqlx::Connection;
use sqlx::sqlite::SqliteConnection;
use std::sync::Arc;

/// Writes batches of creates on the store's one writer connection.
#[derive(Debug)]
pub(super) struct Writer(pub(super) Arc<ConnPool<SqliteConnection>>);

#[async_trait]
impl BatchWriter for Writer {
    type Conn = SqliteConnection;
    const STORE: &'static str = super::ENGINE;
    // Take the write lock at once: the hook's rows go in under it too.
    const BEGIN: &'static str = "BEGIN IMMEDIATE";

    fn pool(&self) -> &ConnPool<SqliteConnection> {
        &self.0
    }

    fn broken(e: &sqlx::Error) -> bool {
        broken(e)
    }

    fn backend(what: &str, e: sqlx::Error) -> StoreError {
        backend(what, e)
    }

    async fn write(
        &self,
        conn: &mut SqliteConnection,
        rows: &[&NewRow],
    ) -> Result<Vec<Result<(), StoreError>>, sqlx::Error> {
        match rows {
            // A per-owner cap is checked in a transaction (the batch path).
            [one] if one.max_per_owner.is_none() => Ok(vec![created(insert_one(one).execute(conn).await)?]),
            _ => insert_batch(conn, rows).await,
        }
    }
}

/// A lone create's result from its statement's (`Err`: not about the row).
fn created(done: Result<sqlx::sqlite::SqliteQueryResult, sqlx::Error>) -> Result<Result<(), StoreError>, sqlx::Error> {
    match done {
        Ok(r) if r.rows_affected() == 1 => Ok(Ok(())),
        Ok(_) => Ok(Err(StoreError::TaskLimitReached)),
        Err(sqlx::Error::Database(e)) if e.is_unique_violation() => Ok(Err(StoreError::Duplicate)),
        Err(e) => Err(e),
    }
}

/// Rows per multi-row `INSERT` (12 parameters each: far below SQLite's
/// parameter limit, and few enough statement shapes for the statement cache).
const INSERT_CHUNK: usize = 64;

const INSERT_COLUMNS: &str = "INSERT INTO conduit_tasks (task_id, owner, status, version, created_at_ms, \
     expires_at_ms, terminal_at_ms, lease_node, lease_expires_ms, doc, status_message, updated_at_ms)";

/// One row's parameters in a multi-row `INSERT` (`INSERT_COLUMNS`).
const ROW_PARAMS: &str = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";

/// One create as one statement: the cap check and the insert (whose trigger
/// bumps the counter) run under SQLite's write lock as one atomic step.
fn insert_one(p: &NewRow) -> SqlQuery<'_> {
    let q = sqlx::query(
        "INSERT INTO conduit_tasks (task_id, owner, status, version, created_at_ms, expires_at_ms, \
         terminal_at_ms, lease_node, lease_expires_ms, doc, status_message, updated_at_ms) \
         SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12 \
         WHERE ?13 IS NULL OR (SELECT n FROM conduit_task_count WHERE id = 1) < ?13",
    );
    bind_row(q, p).bind(p.max_rows)
}

/// Binds a new row's twelve columns, in `INSERT_COLUMNS` order.
fn bind_row<'q>(q: SqlQuery<'q>, p: &'q NewRow) -> SqlQuery<'q> {
    p.columns.bind_change(p.columns.bind(q.bind(p.task_id.as_str())))
}

/// Several creates in one `BEGIN IMMEDIATE` transaction. The counter is read
/// once (the write lock keeps it still) to decide, in queue order, which
/// creates fit under their cap; those go in as multi-row inserts. Should an
/// insert hit a duplicate id, the creates not yet written go one by one
/// instead, so that only the duplicate fails. `Err` (the transaction rolled
/// back, or the commit failed) is every create's result.
async fn insert_batch(
    conn: &mut SqliteConnection,
    batch: &[&NewRow],
) -> Result<Vec<Result<(), StoreError>>, sqlx::Error> {
    let mut tx = conn.begin_with("BEGIN IMMEDIATE").await?;
    let mut n: i64 = if batch.iter().any(|p| p.max_rows.is_some()) {
        sqlx::query_scalar("SELECT n FROM conduit_task_count WHERE id = 1").fetch_one(&mut *tx).await?
    } else {
        0
    };
    let mut owners = owner_counts(&mut tx, batch).await?;
    let mut results: Vec<Option<Result<(), StoreError>>> = vec![None; batch.len()];
    let mut admitted = Vec::with_capacity(batch.len());
    for (i, p) in batch.iter().enumerate() {
        if p.max_rows.is_none_or(|max| n < max) {
            if !owners.admit(p) {
                results[i] = Some(Err(StoreError::OwnerLimitReached));
                continue;
            }
            admitted.push(i);
            n += 1;
        }
    }
    let mut one_by_one = false;
    for chunk in admitted.chunks(INSERT_CHUNK) {
        let mut sql = String::with_capacity(INSERT_COLUMNS.len() + chunk.len() * 24);
        sql.push_str(INSERT_COLUMNS);
        sql.push_str(" VALUES ");
        for k in 0..chunk.len() {
            sql.push_str(if k == 0 { ROW_PARAMS } else { ", (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)" });
        }
        let mut q = sqlx::query(AssertSqlSafe(sql));
        for &i in chunk {
            q = bind_row(q, batch[i]);
        }
        match q.execute(&mut *tx).await {
            Ok(_) => {
                for &i in chunk {
                    results[i] = Some(Ok(()));
                }
            }
            // The failed statement alone is undone; the transaction goes on.
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
                one_by_one = true;
                break;
            }
            Err(e) => return Err(e),
        }
    }
    if one_by_one {
        // Everything not yet written, in queue order, each checked against
        // the live counters (a duplicate frees its slot for a later create).
        let mut owners = owner_counts(&mut tx, batch).await?;
        for (i, p) in batch.iter().enumerate() {
            if results[i].is_some() {
                continue;
            }
            if !owners.fits(p) {
                results[i] = Some(Err(StoreError::OwnerLimitReached));
                continue;
            }
            let r = created(insert_one(p).execute(&mut *tx).await)?;
            if r.is_ok() {
                owners.count(p);
            }
            results[i] = Some(r);
        }
    }
    tx.commit().await?;
    Ok(results.into_iter().map(|r| r.unwrap_or(Err(StoreError::TaskLimitReached))).collect())
}

/// The live tasks each owner of a batch's owner-capped rows holds (its
/// terminal ones do not count), read inside the batch's transaction (the
/// write lock keeps them still).
struct OwnerCounts<'a>(std::collections::HashMap<&'a str, i64>);

impl<'a> OwnerCounts<'a> {
    fn owner(p: &'a NewRow) -> Option<(&'a str, i64)> {
        Some((p.columns.owner.as_deref()?, p.max_per_owner?))
    }

    /// Whether `p` fits under its owner's cap.
    fn fits(&self, p: &'a NewRow) -> bool {
        Self::owner(p).is_none_or(|(o, max)| self.0.get(o).copied().unwrap_or(0) < max)
    }

    /// Counts `p` as stored.
    fn count(&mut self, p: &'a NewRow) {
        if let Some((o, _)) = Self::owner(p) {
            *self.0.entry(o).or_default() += 1;
        }
    }

    /// Counts `p` if it fits; whether it did.
    fn admit(&mut self, p: &'a NewRow) -> bool {
        let fits = self.fits(p);
        if fits {
            self.count(p);
        }
        fits
    }
}

async fn owner_counts<'a>(conn: &mut SqliteConnection, batch: &[&'a NewRow]) -> Result<OwnerCounts<'a>, sqlx::Error> {
    let mut counts = std::collections::HashMap::new();
    for (owner, _) in batch.iter().filter_map(|p| OwnerCounts::owner(p)) {
        if counts.contains_key(owner) {
            continue;
        }
        let n: i64 =
            sqlx::query_scalar("SELECT count(*) FROM conduit_tasks WHERE owner = ?1 AND terminal_at_ms IS NULL")
                .bind(owner)
                .fetch_one(&mut *conn)
                .await?;
        counts.insert(owner, n);
    }
    Ok(OwnerCounts(counts))
}
