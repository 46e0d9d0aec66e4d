//! PostgreSQL's side of group commit (the queue is `common::group_commit`):
//! a batch of creates — one or many — is one statement, so one round trip
//! and one commit. The statement locks the row counter (which orders every
//! node's batches), admits the rows that fit under their cap, inserts them
//! with `ON CONFLICT DO NOTHING` (a duplicate id fails alone), and raises the
//! counter by the rows it inserted. Its shape does not depend on the batch
//! size (the rows travel as arrays), so it is prepared once per connection.

use super::{backend, is_connection_error};
use crate::common::{BatchWriter, NewRow};
use crate::pool::ConnPool;
use async_trait::async_trait;
use conduit_mcp::ext::tasks::StoreError;
use sqlx::postgres::PgConnection;
use std::collections::HashSet;
use std::sync::Arc;

/// Writes batches of creates on connections of the store's pool; a batch
/// that meets a broken connection is written again up to `.1` times.
#[derive(Debug)]
pub(super) struct Writer(pub(super) Arc<ConnPool<PgConnection>>, pub(super) usize);

/// Rows `r` of a run under one cap are admitted when `r.max_rows IS NULL OR
/// n + r.ord <= r.max_rows` (`n`: the counter, read under its row lock):
/// exactly the first rows that fit. Answers the counter as read and
/// the ids inserted.
const INSERT_BATCH: &str = "\
WITH cur AS (SELECT n FROM conduit_task_count WHERE id = 1 FOR UPDATE), \
new AS (SELECT r.* FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[], \
                               $7::bigint[], $8::text[], $9::bigint[], $10::text[], $11::bigint[]) \
        WITH ORDINALITY AS r(task_id, owner, status, version, created_at_ms, expires_at_ms, terminal_at_ms, \
                             lease_node, lease_expires_ms, doc, max_rows, ord), cur \
        WHERE r.max_rows IS NULL OR cur.n + r.ord <= r.max_rows), \
ins AS (INSERT INTO conduit_tasks (task_id, owner, status, version, created_at_ms, expires_at_ms, \
                                   terminal_at_ms, lease_node, lease_expires_ms, doc) \
        SELECT task_id, owner, status, version, created_at_ms, expires_at_ms, terminal_at_ms, \
               lease_node, lease_expires_ms, doc::json FROM new ORDER BY ord \
        ON CONFLICT (task_id) DO NOTHING RETURNING task_id), \
bump AS (UPDATE conduit_task_count SET n = n + (SELECT count(*) FROM ins) WHERE id = 1) \
SELECT (SELECT n FROM cur), ARRAY(SELECT task_id FROM ins)";

/// Rounds of one batch at most: a round after the first runs only when a
/// duplicate id freed a slot that a row refused by the cap may now take.
const MAX_ROUNDS: usize = 4;

#[async_trait]
impl BatchWriter for Writer {
    type Conn = PgConnection;

    fn pool(&self) -> &ConnPool<PgConnection> {
        &self.0
    }

    fn broken(e: &sqlx::Error) -> bool {
        is_connection_error(e)
    }

    fn backend(what: &str, e: sqlx::Error) -> StoreError {
        backend(what, e)
    }

    fn retries(&self) -> usize {
        self.1
    }

    /// Runs of creates under the same cap (in practice the whole batch) go
    /// in one statement each, in queue order, so each create is judged
    /// against the counter its predecessors left.
    async fn write(conn: &mut PgConnection, rows: &[&NewRow]) -> Result<Vec<Result<(), StoreError>>, sqlx::Error> {
        let mut results = Vec::with_capacity(rows.len());
        for run in rows.chunk_by(|a, b| a.max_rows == b.max_rows && a.max_per_owner == b.max_per_owner) {
            if run.iter().any(|r| r.max_per_owner.is_some()) {
                results.extend(write_owned_run(conn, run).await?);
            } else {
                results.extend(write_run(conn, run).await?);
            }
        }
        Ok(results)
    }
}

/// Creates under one cap: [`INSERT_BATCH`], again for the rows the cap
/// refused when a duplicate id left its slot free.
async fn write_run(conn: &mut PgConnection, rows: &[&NewRow]) -> Result<Vec<Result<(), StoreError>>, sqlx::Error> {
    let mut results: Vec<Option<Result<(), StoreError>>> = vec![None; rows.len()];
    let mut todo: Vec<usize> = (0..rows.len()).collect();
    for _ in 0..MAX_ROUNDS {
        let (n, inserted) = insert_round(conn, rows, &todo).await?;
        let mut inserted: HashSet<String> = inserted.into_iter().collect();
        let mut refused = Vec::new();
        let mut duplicates = false;
        for (pos, &i) in todo.iter().enumerate() {
            let row = rows[i];
            let admitted = row.max_rows.is_none_or(|max| n.saturating_add(pos as i64 + 1) <= max);
            results[i] = Some(if inserted.remove(&row.task_id) {
                Ok(())
            } else if admitted {
                duplicates = true;
                Err(StoreError::Duplicate)
            } else {
                refused.push(i);
                Err(StoreError::TaskLimitReached)
            });
        }
        if !duplicates || refused.is_empty() {
            break;
        }
        // A duplicate took a position without a row: the refused rows may fit now.
        todo = refused;
    }
    Ok(results.into_iter().map(|r| r.unwrap_or(Err(StoreError::TaskLimitReached))).collect())
}

/// The advisory-lock class under which a principal's creates take turns
/// ("cond"; the two-key lock space does not overlap the migration lock's).
const OWNER_LOCK_CLASS: i32 = 0x636f_6e64;

/// Creates under a per-owner cap: in one transaction, lock each owner of the
/// run (in sorted order, so batches never deadlock; creates of those owners
/// on every node wait), count their tasks, refuse the rows past their
/// owner's cap, and write the rest as [`write_run`] does.
async fn write_owned_run(
    conn: &mut PgConnection,
    rows: &[&NewRow],
) -> Result<Vec<Result<(), StoreError>>, sqlx::Error> {
    let owner = |r: &NewRow| r.max_per_owner.and(r.columns.owner.clone());
    let mut owners: Vec<String> = rows.iter().filter_map(|r| owner(r)).collect();
    owners.sort();
    owners.dedup();
    let mut tx = sqlx::Connection::begin(conn).await?;
    sqlx::query("SELECT pg_advisory_xact_lock($1, hashtext(o)) FROM unnest($2::text[]) AS o")
        .bind(OWNER_LOCK_CLASS)
        .bind(&owners)
        .execute(&mut *tx)
        .await?;
    let counts: Vec<(String, i64)> =
        sqlx::query_as("SELECT o, (SELECT count(*) FROM conduit_tasks WHERE owner = o) FROM unnest($1::text[]) AS o")
            .bind(&owners)
            .fetch_all(&mut *tx)
            .await?;
    let mut counts: std::collections::HashMap<String, i64> = counts.into_iter().collect();
    let mut results: Vec<Option<Result<(), StoreError>>> = vec![None; rows.len()];
    let mut kept = Vec::with_capacity(rows.len());
    for (i, r) in rows.iter().enumerate() {
        if let (Some(o), Some(max)) = (owner(r), r.max_per_owner) {
            let n = counts.entry(o).or_default();
            if *n >= max {
                results[i] = Some(Err(StoreError::OwnerLimitReached));
                continue;
            }
            *n += 1;
        }
        kept.push(i);
    }
    let written: Vec<&NewRow> = kept.iter().map(|&i| rows[i]).collect();
    let done = if written.is_empty() { Vec::new() } else { write_run(&mut tx, &written).await? };
    for (&i, r) in kept.iter().zip(done) {
        results[i] = Some(r);
    }
    tx.commit().await?;
    Ok(results.into_iter().map(|r| r.unwrap_or(Err(StoreError::TaskLimitReached))).collect())
}

/// One run of [`INSERT_BATCH`] over the rows `todo` (queue order): the counter
/// as it was, and the ids inserted.
async fn insert_round(
    conn: &mut PgConnection,
    rows: &[&NewRow],
    todo: &[usize],
) -> Result<(i64, Vec<String>), sqlx::Error> {
    let pick = |f: &dyn Fn(&NewRow) -> Option<i64>| todo.iter().map(|&i| f(rows[i])).collect::<Vec<_>>();
    let texts = |f: &dyn Fn(&NewRow) -> Option<&str>| todo.iter().map(|&i| f(rows[i])).collect::<Vec<_>>();
    let (n, ids): (i64, Vec<String>) = sqlx::query_as(INSERT_BATCH)
        .bind(texts(&|r| Some(r.task_id.as_str())))
        .bind(texts(&|r| r.columns.owner.as_deref()))
        .bind(texts(&|r| Some(r.columns.status)))
        .bind(pick(&|r| Some(r.columns.version)))
        .bind(pick(&|r| Some(r.columns.created_at_ms)))
        .bind(pick(&|r| r.columns.expires_at_ms))
        .bind(pick(&|r| r.columns.terminal_at_ms))
        .bind(texts(&|r| r.columns.lease_node.as_deref()))
        .bind(pick(&|r| r.columns.lease_expires_ms))
        .bind(texts(&|r| Some(r.columns.doc.as_str())))
        .bind(pick(&|r| r.max_rows))
        .fetch_one(conn)
        .await?;
    Ok((n, ids))
}
