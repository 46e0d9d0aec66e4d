//! PostgreSQL's side of group commit (the queue is `common::group_commit`):
//! a batch of creates — one or many — is one statement, so one round trip
//! and one commit. The statement takes room under the row cap from one shard
//! of the sharded counter (`shards`), so batches of this node and of others
//! commit side by side; only a batch that finds no shard with room locks them
//! all and hands the room out again. Rows go in with `ON CONFLICT DO
//! NOTHING` (a duplicate id fails alone). The statements' shapes do not
//! depend on the batch size (the rows travel as arrays), so each is prepared
//! once per connection.

use super::shards::{self, Cursor};
use super::{backend, is_connection_error};
use crate::common::{BatchWriter, NewRow};
use crate::pool::ConnPool;
use async_trait::async_trait;
use conduit_mcp::task::StoreError;
use sqlx::postgres::PgConnection;
use std::collections::HashSet;
use std::sync::Arc;

/// Writes batches of creates on connections of the store's pool; a batch
/// that meets a broken connection is written again up to `retries` times.
#[derive(Debug)]
pub(super) struct Writer {
    pool: Arc<ConnPool<PgConnection>>,
    retries: usize,
    /// Where the next batch starts looking for a shard.
    cursor: Cursor,
}

impl Writer {
    pub(super) fn new(pool: Arc<ConnPool<PgConnection>>, retries: usize) -> Self {
        Self { pool, retries, cursor: Cursor::new() }
    }
}

/// Rounds of one batch at most: a round after the first runs only when a
/// duplicate id freed a slot that a row refused by the cap may now take.
const MAX_ROUNDS: usize = 4;

#[async_trait]
impl BatchWriter for Writer {
    type Conn = PgConnection;
    const STORE: &'static str = super::ENGINE;

    fn pool(&self) -> &ConnPool<PgConnection> {
        &self.pool
    }

    fn broken(e: &sqlx::Error) -> bool {
        is_connection_error(e)
    }

    fn backend(what: &str, e: sqlx::Error) -> StoreError {
        backend(what, e)
    }

    fn retries(&self) -> usize {
        self.retries
    }

    /// Runs of creates under the same cap (in practice the whole batch) go
    /// in one statement each, in queue order, so each create is judged
    /// against the counter its predecessors left.
    async fn write(
        &self,
        conn: &mut PgConnection,
        rows: &[&NewRow],
    ) -> Result<Vec<Result<(), StoreError>>, sqlx::Error> {
        let mut results = Vec::with_capacity(rows.len());
        for run in rows.chunk_by(|a, b| a.max_rows == b.max_rows && a.max_per_owner == b.max_per_owner) {
            let shard = self.cursor.next();
            if run.iter().any(|r| r.max_per_owner.is_some()) {
                results.extend(write_owned_run(conn, run, shard).await?);
            } else {
                results.extend(write_run(conn, run, shard).await?);
            }
        }
        Ok(results)
    }
}

/// Creates under one cap: a claim on one shard (starting at `shard`) when
/// one has room for them all, else rounds of a rebalance, again for the rows
/// the cap refused when a duplicate id left its slot free.
async fn write_run(
    conn: &mut PgConnection,
    rows: &[&NewRow],
    shard: i16,
) -> Result<Vec<Result<(), StoreError>>, sqlx::Error> {
    let max_rows = rows.first().and_then(|r| r.max_rows);
    let all: Vec<usize> = (0..rows.len()).collect();
    if let Some(inserted) = shards::claim(conn, rows, &all, max_rows, shard).await? {
        // Every row was admitted: one that is not in is a duplicate.
        let inserted: HashSet<String> = inserted.into_iter().collect();
        let written = |r: &&NewRow| if inserted.contains(&r.task_id) { Ok(()) } else { Err(StoreError::Duplicate) };
        return Ok(rows.iter().map(written).collect());
    }
    let mut results: Vec<Option<Result<(), StoreError>>> = vec![None; rows.len()];
    let mut todo = all;
    for _ in 0..MAX_ROUNDS {
        let (n, inserted) = shards::rebalance(conn, rows, &todo, max_rows, shard).await?;
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
/// on every node wait), count their live tasks (terminal ones do not count),
/// refuse the rows past their owner's cap, and write the rest as
/// [`write_run`] does.
async fn write_owned_run(
    conn: &mut PgConnection,
    rows: &[&NewRow],
    shard: i16,
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
    let counts: Vec<(String, i64)> = sqlx::query_as(
        "SELECT o, (SELECT count(*) FROM conduit_tasks WHERE owner = o AND terminal_at_ms IS NULL) \
             FROM unnest($1::text[]) AS o",
    )
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
    let done = if written.is_empty() { Vec::new() } else { write_run(&mut tx, &written, shard).await? };
    for (&i, r) in kept.iter().zip(done) {
        results[i] = Some(r);
    }
    tx.commit().await?;
    Ok(results.into_iter().map(|r| r.unwrap_or(Err(StoreError::TaskLimitReached))).collect())
}
