//! SQLite's side of group commit (the queue is `common::group_commit`): a
//! lone create is one statement; several are one `BEGIN IMMEDIATE`
//! transaction with multi-row inserts, each still checked against its own cap
//! and failing alone on a duplicate id.

use super::{SqlQuery, backend, broken};
use crate::common::{BatchWriter, NewRow};
use crate::pool::ConnPool;
use async_trait::async_trait;
use conduit_mcp::ext::tasks::StoreError;
use sqlx::Connection;
use sqlx::sqlite::SqliteConnection;
use std::sync::Arc;

/// Writes batches of creates on the store's one writer connection.
#[derive(Debug)]
pub(super) struct Writer(pub(super) Arc<ConnPool<SqliteConnection>>);

#[async_trait]
impl BatchWriter for Writer {
    type Conn = SqliteConnection;

    fn pool(&self) -> &ConnPool<SqliteConnection> {
        &self.0
    }

    fn broken(e: &sqlx::Error) -> bool {
        broken(e)
    }

    fn backend(what: &str, e: sqlx::Error) -> StoreError {
        backend(what, e)
    }

    async fn write(conn: &mut SqliteConnection, rows: &[&NewRow]) -> Result<Vec<Result<(), StoreError>>, sqlx::Error> {
        match rows {
            [one] => Ok(vec![created(insert_one(one).execute(conn).await)?]),
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

/// Rows per multi-row `INSERT` (10 parameters each: far below SQLite's
/// parameter limit, and few enough statement shapes for the statement cache).
const INSERT_CHUNK: usize = 64;

const INSERT_COLUMNS: &str = "INSERT INTO conduit_tasks (task_id, owner, status, version, created_at_ms, \
     expires_at_ms, terminal_at_ms, lease_node, lease_expires_ms, doc)";

/// One create as one statement: the cap check and the insert (whose trigger
/// bumps the counter) run under SQLite's write lock as one atomic step.
fn insert_one(p: &NewRow) -> SqlQuery<'_> {
    let q = sqlx::query(
        "INSERT INTO conduit_tasks (task_id, owner, status, version, created_at_ms, expires_at_ms, \
         terminal_at_ms, lease_node, lease_expires_ms, doc) \
         SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10 \
         WHERE ?11 IS NULL OR (SELECT n FROM conduit_task_count WHERE id = 1) < ?11",
    );
    bind_row(q, p).bind(p.max_rows)
}

/// Binds a new row's ten columns, in `INSERT_COLUMNS` order.
fn bind_row<'q>(q: SqlQuery<'q>, p: &'q NewRow) -> SqlQuery<'q> {
    p.columns.bind(q.bind(p.task_id.as_str()))
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
    let mut results: Vec<Option<Result<(), StoreError>>> = vec![None; batch.len()];
    let mut admitted = Vec::with_capacity(batch.len());
    for (i, p) in batch.iter().enumerate() {
        if p.max_rows.is_none_or(|max| n < max) {
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
            sql.push_str(if k == 0 { "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)" } else { ", (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)" });
        }
        let mut q = sqlx::query(&sql);
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
        // the live counter (a duplicate frees its slot for a later create).
        for (i, p) in batch.iter().enumerate() {
            if results[i].is_some() {
                continue;
            }
            results[i] = Some(created(insert_one(p).execute(&mut *tx).await)?);
        }
    }
    tx.commit().await?;
    Ok(results.into_iter().map(|r| r.unwrap_or(Err(StoreError::TaskLimitReached))).collect())
}
