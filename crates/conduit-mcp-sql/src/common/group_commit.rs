//! Group commit, for both engines: creates that queue up behind the commit
//! in flight are written together, in one transaction, each still checked
//! against its own cap and failing alone on a duplicate id. A create that
//! finds no other under way skips the queue.
//!
//! The engine says how a batch is written ([`BatchWriter::write`]); this
//! module owns the queue, who flushes it, and where each result goes.

use super::hooked::{Hooked, RowWrite, run_hooked};
use super::{Columns, limit};
use crate::pool::{ConnPool, bounded, is_timeout};
use async_trait::async_trait;
use conduit_mcp::ext::tasks::{CreateCaps, TaskRecord};
use conduit_mcp::task::{StoreError, TransactionHook};
use sqlx::Connection;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::{Semaphore, oneshot};

/// A row to create, and the cap it must fit under.
#[derive(Debug)]
pub(crate) struct NewRow {
    pub task_id: String,
    pub columns: Columns,
    pub max_rows: Option<i64>,
    /// The per-owner cap, when the row has an owner and one applies.
    pub max_per_owner: Option<i64>,
}

impl NewRow {
    /// The row of `record` under `caps`.
    pub(crate) fn of(record: &TaskRecord, caps: CreateCaps) -> Result<Self, StoreError> {
        Ok(NewRow {
            task_id: record.task_id.clone(),
            columns: Columns::of(record)?,
            max_rows: caps.max_rows.map(limit),
            max_per_owner: caps.max_rows_per_owner.filter(|_| record.owner.is_some()).map(limit),
        })
    }
}

/// How an engine writes a batch of new rows.
#[async_trait]
pub(crate) trait BatchWriter: std::fmt::Debug + Send + Sync + 'static {
    /// The engine's connection.
    type Conn: Connection<Database: sqlx::Database<Connection = Self::Conn>> + Send + 'static;

    /// The engine's name, as a hook's transaction reports it.
    const STORE: &'static str;

    /// The statement that begins a hooked create's transaction.
    const BEGIN: &'static str = "BEGIN";

    /// Where the batches' connections come from.
    fn pool(&self) -> &ConnPool<Self::Conn>;

    /// Whether an error may have left the connection unusable.
    fn broken(e: &sqlx::Error) -> bool;

    /// The store error for a failure of a whole batch (`what` it could not do).
    fn backend(what: &str, e: sqlx::Error) -> StoreError;

    /// How many times a batch that failed on a broken connection is written
    /// again on another one (enough to drain every dead connection the pool
    /// may hold, plus one; none by default).
    fn retries(&self) -> usize {
        0
    }

    /// Writes `rows` (one or more, queue order) and commits them: one result
    /// per row (`TaskLimitReached`, `Duplicate` fail that row alone), or
    /// `Err` when nothing was committed.
    async fn write(&self, conn: &mut Self::Conn, rows: &[&NewRow]) -> Result<Vec<Result<(), StoreError>>, sqlx::Error>;

    /// Writes one row inside a transaction the caller holds and will commit
    /// (a hooked create). Default: [`write`](Self::write) of the row alone,
    /// for an engine whose batches nest in an open transaction.
    async fn write_in_transaction(&self, conn: &mut Self::Conn, row: &NewRow) -> Hooked<()> {
        Ok(self.write(conn, &[row]).await?.pop().unwrap_or(Err(StoreError::TaskLimitReached)))
    }
}

/// A hooked create's row: written by the engine's [`BatchWriter`].
struct HookedCreate<'a, W> {
    writer: &'a W,
    row: &'a NewRow,
}

#[async_trait]
impl<W: BatchWriter> RowWrite<W::Conn> for HookedCreate<'_, W> {
    async fn write(&self, conn: &mut W::Conn) -> Hooked<bool> {
        Ok(self.writer.write_in_transaction(conn, self.row).await?.map(|()| true))
    }
}

/// The queue of creates in front of one engine's writer.
#[derive(Debug)]
pub(crate) struct GroupCommit<W> {
    writer: W,
    /// Creates waiting; whoever flushes next commits them all.
    creates: Mutex<Vec<Pending>>,
    /// Creates under way (queued or running); a create that finds none runs
    /// on its own, without the queue.
    in_flight: AtomicUsize,
    /// Flushes that may write at once: one batch commits while the next one
    /// gathers (on PostgreSQL, several commit side by side).
    flushers: Semaphore,
}

/// A `create` waiting in the queue, and where its result goes.
#[derive(Debug)]
struct Pending {
    row: NewRow,
    done: oneshot::Sender<Result<(), StoreError>>,
}

/// Creates committed by one transaction at most.
pub(crate) const MAX_BATCH: usize = 512;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl<W: BatchWriter> GroupCommit<W> {
    /// A queue in front of `writer`, with at most `flushers` batches written at once.
    pub(crate) fn new(writer: W, flushers: usize) -> Self {
        Self {
            writer,
            creates: Mutex::new(Vec::new()),
            in_flight: AtomicUsize::new(0),
            flushers: Semaphore::new(flushers.max(1)),
        }
    }

    /// Inserts `record` (at version 1) under `caps`, committed before
    /// this returns: alone when no other create is under way, else with
    /// whatever is queued when a flush comes to it. Returns `record`.
    pub(crate) async fn insert(
        self: &std::sync::Arc<Self>,
        record: TaskRecord,
        caps: CreateCaps,
    ) -> Result<TaskRecord, StoreError> {
        let row = NewRow::of(&record, caps)?;
        let in_flight = InFlight::enter(&self.in_flight);
        if in_flight.alone {
            // No other create under way: nothing to batch with, so no queue.
            let mut results = self.write_retrying(&[&row]).await.map_err(|e| W::backend("insert a task", e))?;
            return results.pop().unwrap_or(Err(StoreError::TaskLimitReached)).map(|()| record);
        }
        let (done, outcome) = oneshot::channel();
        lock(&self.creates).push(Pending { row, done });
        // The flush runs in a task of its own, so a caller that gives up
        // (its future dropped) never strands the batch it would have led.
        let queue = self.clone();
        tokio::spawn(async move { queue.flush().await });
        let done = outcome.await.unwrap_or_else(|e| Err(StoreError::backend("the task insert was abandoned", e)));
        done.map(|()| record)
    }

    /// Inserts `record` (at version 1) under `caps` and runs `hook`, in one
    /// transaction on a connection of its own: not batched, so the hook's
    /// rows commit with this task alone. Returns `record`.
    pub(crate) async fn insert_with(
        &self,
        record: TaskRecord,
        caps: CreateCaps,
        hook: &dyn TransactionHook,
    ) -> Result<TaskRecord, StoreError> {
        let row = NewRow::of(&record, caps)?;
        let write = HookedCreate { writer: &self.writer, row: &row };
        let conn = self.writer.pool().get().await.map_err(|e| W::backend("insert a task", e))?;
        let done = run_hooked(conn, W::BEGIN, W::STORE, &record, hook, &write, W::broken).await;
        done.map_err(|e| W::backend("insert a task", e))?.map(|_| record)
    }

    /// Takes a turn and a connection, then commits every create queued at
    /// that moment (group commit). Each create's result goes back through
    /// its channel.
    async fn flush(&self) {
        let Ok(_turn) = self.flushers.acquire().await else { return };
        if lock(&self.creates).is_empty() {
            // An earlier flush took this create along with its own.
            return;
        }
        let batch: Vec<Pending> = {
            // At most `MAX_BATCH` at once, oldest first: every create left
            // queued has a flush of its own still to come.
            let mut queue = lock(&self.creates);
            let n = queue.len().min(MAX_BATCH);
            queue.drain(..n).collect()
        };
        if batch.is_empty() {
            return;
        }
        let rows: Vec<&NewRow> = batch.iter().map(|p| &p.row).collect();
        match self.write_retrying(&rows).await {
            Ok(results) => {
                let mut results = results.into_iter();
                for p in batch {
                    let _ = p.done.send(results.next().unwrap_or(Err(StoreError::TaskLimitReached)));
                }
            }
            Err(e) => fail_all(batch, &W::backend("insert tasks", e)),
        }
    }
}

impl<W: BatchWriter> GroupCommit<W> {
    /// Writes `rows` on a pooled connection; when the connection turns out
    /// to be broken (the database restarted, an administrator ended the
    /// session, a proxy dropped it while idle), again on another one, up to
    /// [`BatchWriter::retries`] times.
    ///
    /// Writing again is safe even when the broken connection had committed
    /// the batch before its answer was lost: the rows are inserted only where
    /// their id is absent, so a row that landed the first time is found as a
    /// duplicate of itself and answered as written (task ids are 32 random
    /// bytes: no other create brings the same id).
    async fn write_retrying(&self, rows: &[&NewRow]) -> Result<Vec<Result<(), StoreError>>, sqlx::Error> {
        let mut attempt = 0;
        loop {
            let mut conn = self.writer.pool().get().await?;
            let ran = bounded(conn.deadline(), self.writer.write(conn.conn(), rows)).await;
            match conn.finish(ran, W::broken) {
                Ok(mut results) => {
                    if attempt > 0 {
                        for r in &mut results {
                            if matches!(r, Err(StoreError::Duplicate)) {
                                *r = Ok(());
                            }
                        }
                    }
                    return Ok(results);
                }
                Err(e) if attempt < self.writer.retries() && W::broken(&e) && !is_timeout(&e) => {
                    tracing::debug!(error = %e, "a task insert met a broken connection; writing it again");
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }
}

fn fail_all(batch: Vec<Pending>, err: &StoreError) {
    for p in batch {
        let _ = p.done.send(Err(err.clone()));
    }
}

/// Counts the operations under way (creates here, grouped reads on
/// PostgreSQL) while it lives, also when its future is dropped.
pub(crate) struct InFlight<'a> {
    count: &'a AtomicUsize,
    /// No other operation was under way when this one began.
    pub(crate) alone: bool,
}

impl<'a> InFlight<'a> {
    pub(crate) fn enter(count: &'a AtomicUsize) -> Self {
        Self { count, alone: count.fetch_add(1, Ordering::AcqRel) == 0 }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::AcqRel);
    }
}
