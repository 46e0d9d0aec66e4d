//! Group commit: creates that queue up behind the writer connection are
//! committed together, in one `BEGIN IMMEDIATE` transaction with multi-row
//! inserts, each still checked against its own cap and failing alone on a
//! duplicate id. A create that finds no other under way skips the queue.

use super::{SqlQuery, SqliteStore, backend, broken};
use crate::common::{self, Columns};
use conduit_mcp::ext::tasks::{StoreError, TaskRecord};
use sqlx::Connection;
use sqlx::sqlite::SqliteConnection;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::oneshot;

/// The creates waiting for the writer, and how many are under way.
#[derive(Debug, Default)]
pub(super) struct Queue {
    /// Creates waiting for the writer; whoever gets it next commits them all.
    creates: Mutex<Vec<Pending>>,
    /// Creates under way (queued or running); a create that finds none runs
    /// on its own, without the queue.
    in_flight: AtomicUsize,
}

/// A row to create, and the cap it must fit under.
#[derive(Debug)]
struct NewRow {
    task_id: String,
    columns: Columns,
    max_rows: Option<i64>,
}

/// A `create` waiting in the queue, and where its result goes.
#[derive(Debug)]
struct Pending {
    row: NewRow,
    done: oneshot::Sender<Result<(), StoreError>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl SqliteStore {
    /// Inserts `record` (at version 1) under `max_rows`, committed before
    /// this returns: alone when no other create is under way, else with
    /// whatever is queued when the writer comes free.
    pub(super) async fn insert(&self, mut record: TaskRecord, max_rows: Option<usize>) -> Result<(), StoreError> {
        record.version = 1;
        let columns = Columns::of(&record)?;
        let row = NewRow { task_id: record.task_id, columns, max_rows: max_rows.map(common::limit) };
        let queue = &self.inner.queue;
        let in_flight = InFlight::enter(&queue.in_flight);
        if in_flight.alone {
            // No other create under way: nothing to batch with, so no queue.
            let mut conn = self.writer().await?;
            let done = insert_one(&row).execute(conn.conn()).await;
            return created(conn.finish(done, broken));
        }
        let (done, outcome) = oneshot::channel();
        lock(&queue.creates).push(Pending { row, done });
        // The flush runs in a task of its own, so a caller that gives up
        // (its future dropped) never strands the batch it would have led.
        let store = self.clone();
        tokio::spawn(async move { store.flush_creates().await });
        outcome.await.unwrap_or_else(|e| Err(StoreError::backend("sqlite: the task insert was abandoned", e)))
    }

    /// Takes the writer, then commits every create queued at that moment
    /// (group commit): one statement for a lone create, one transaction for
    /// several. Each create's result goes back through its channel.
    async fn flush_creates(&self) {
        let conn = self.inner.writer.get().await;
        let mut batch: Vec<_> = {
            // At most `MAX_BATCH` at once, oldest first: the write lock is held until
            // the batch commits, and every create left queued has a flush of its own
            // still to come.
            let mut queue = lock(&self.inner.queue.creates);
            let n = queue.len().min(MAX_BATCH);
            queue.drain(..n).collect()
        };
        if batch.is_empty() {
            // An earlier flush took this create along with its own.
            if let Ok(c) = conn {
                c.release();
            }
            return;
        }
        let mut conn = match conn {
            Ok(c) => c,
            Err(e) => {
                let err = backend("open a connection", e);
                for p in batch {
                    let _ = p.done.send(Err(err.clone()));
                }
                return;
            }
        };
        if let [one] = batch.as_slice() {
            let done = insert_one(&one.row).execute(conn.conn()).await;
            let result = created(conn.finish(done, broken));
            if let Some(p) = batch.pop() {
                let _ = p.done.send(result);
            }
            return;
        }
        let ran = insert_batch(conn.conn(), &batch).await;
        match conn.finish(ran, broken) {
            Ok(results) => {
                for (p, r) in batch.into_iter().zip(results) {
                    let _ = p.done.send(r);
                }
            }
            Err(e) => {
                let err = backend("insert tasks", e);
                for p in batch {
                    let _ = p.done.send(Err(err.clone()));
                }
            }
        }
    }
}

/// A lone create's result from its statement's.
fn created(done: Result<sqlx::sqlite::SqliteQueryResult, sqlx::Error>) -> Result<(), StoreError> {
    match done {
        Ok(r) if r.rows_affected() == 1 => Ok(()),
        Ok(_) => Err(StoreError::TaskLimitReached),
        Err(sqlx::Error::Database(e)) if e.is_unique_violation() => Err(StoreError::Duplicate),
        Err(e) => Err(backend("insert a task", e)),
    }
}

/// Counts the creates under way while it lives (also when its future is dropped).
struct InFlight<'a> {
    count: &'a AtomicUsize,
    /// No other create was under way when this one began.
    alone: bool,
}

impl<'a> InFlight<'a> {
    fn enter(count: &'a AtomicUsize) -> Self {
        Self { count, alone: count.fetch_add(1, Ordering::AcqRel) == 0 }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Creates committed by one transaction at most.
const MAX_BATCH: usize = 512;

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
    batch: &[Pending],
) -> Result<Vec<Result<(), StoreError>>, sqlx::Error> {
    let mut tx = conn.begin_with("BEGIN IMMEDIATE").await?;
    let mut n: i64 = if batch.iter().any(|p| p.row.max_rows.is_some()) {
        sqlx::query_scalar("SELECT n FROM conduit_task_count WHERE id = 1").fetch_one(&mut *tx).await?
    } else {
        0
    };
    let mut results: Vec<Option<Result<(), StoreError>>> = vec![None; batch.len()];
    let mut admitted = Vec::with_capacity(batch.len());
    for (i, p) in batch.iter().enumerate() {
        if p.row.max_rows.is_none_or(|max| n < max) {
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
            q = bind_row(q, &batch[i].row);
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
            results[i] = Some(match insert_one(&p.row).execute(&mut *tx).await {
                Ok(r) if r.rows_affected() == 1 => Ok(()),
                Ok(_) => Err(StoreError::TaskLimitReached),
                Err(sqlx::Error::Database(e)) if e.is_unique_violation() => Err(StoreError::Duplicate),
                Err(e) => return Err(e),
            });
        }
    }
    tx.commit().await?;
    Ok(results.into_iter().map(|r| r.unwrap_or(Err(StoreError::TaskLimitReached))).collect())
}
