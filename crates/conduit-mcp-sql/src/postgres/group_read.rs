//! Grouped reads: point reads of tasks (`tasks/get`, and the read half of
//! every compare-and-swap) that queue up behind the reads in flight go to
//! PostgreSQL together, as one `task_id = ANY($1)` statement. A backend
//! answers fifty ids in one statement for little more than the cost of one,
//! so under load the database spends its CPU on rows, not on statements. A
//! read that finds no other under way skips the queue and costs what a single
//! statement costs.
//!
//! At most [`READERS`] flushers run; each takes everything queued, reads it,
//! and goes again until the queue is empty. A read that finds a flusher
//! already running only joins the queue: no task, no wake-up of its own.

use super::{backend, decode_row, read_rows};
use crate::common::InFlight;
use crate::pool::ConnPool;
use conduit_mcp::ext::tasks::TaskRecord;
use conduit_mcp::task::StoreError;
use sqlx::Row;
use sqlx::postgres::PgConnection;
use sqlx::postgres::PgRow;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

/// One task by id (the columns `decode_row` reads).
pub(super) const READ_ONE: &str =
    "SELECT version, lease_node, lease_expires_ms, doc::text FROM conduit_tasks WHERE task_id = $1";

/// Many tasks by id; the id comes last so the first four columns are those
/// `decode_row` reads.
const READ_MANY: &str =
    "SELECT version, lease_node, lease_expires_ms, doc::text, task_id FROM conduit_tasks WHERE task_id = ANY($1)";

/// Ids one statement reads at most.
const MAX_BATCH: usize = 256;

/// Statements in flight at once: while they run, the next reads gather.
const READERS: usize = 2;

type Answer = Result<Option<TaskRecord>, StoreError>;
type Waiting = (String, oneshot::Sender<Answer>);

/// The reads waiting for a statement, and the flushers that will send them.
#[derive(Debug, Default)]
struct Queue {
    waiting: Vec<Waiting>,
    /// Flushers running (at most [`READERS`]).
    flushers: usize,
}

/// The queue of point reads in front of one engine's pool.
#[derive(Debug)]
pub(super) struct GroupRead {
    pool: Arc<ConnPool<PgConnection>>,
    /// Retries of a read on a broken connection.
    retries: usize,
    queue: Mutex<Queue>,
    /// Reads under way (queued or running).
    in_flight: AtomicUsize,
}

impl GroupRead {
    /// A queue in front of `pool`; a read is retried up to `retries` times on
    /// a broken connection.
    pub(super) fn new(pool: Arc<ConnPool<PgConnection>>, retries: usize) -> Self {
        Self { pool, retries, queue: Mutex::new(Queue::default()), in_flight: AtomicUsize::new(0) }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl GroupRead {
    /// The task `task_id` as stored: alone when no other read is under way,
    /// else in the next grouped statement.
    pub(super) async fn read(self: &Arc<Self>, task_id: &str) -> Answer {
        let in_flight = InFlight::enter(&self.in_flight);
        if in_flight.alone {
            let rows = read_rows(&self.pool, self.retries, "read a task", READ_ONE, |q| q.bind(task_id)).await?;
            return rows.first().map(decode_row).transpose();
        }
        let (done, answer) = oneshot::channel();
        let start = {
            let mut q = lock(&self.queue);
            q.waiting.push((task_id.to_owned(), done));
            let start = q.flushers < READERS;
            if start {
                q.flushers += 1;
            }
            start
        };
        if start {
            // The flusher runs on its own, so a caller that gives up never
            // strands the reads queued with it.
            let reads = self.clone();
            tokio::spawn(async move { reads.flush().await });
        }
        answer.await.unwrap_or_else(|e| Err(StoreError::backend("the task read was abandoned", e)))
    }

    /// Reads the queued ids (up to [`MAX_BATCH`] a statement) until none is left.
    async fn flush(&self) {
        let mut turn = Turn { reads: self, done: false };
        loop {
            // Let the requests already woken on this runtime reach the queue
            // first: one more id in this statement costs far less than one
            // more statement.
            tokio::task::yield_now().await;
            let batch: Vec<Waiting> = {
                let mut q = lock(&self.queue);
                if q.waiting.is_empty() {
                    q.flushers -= 1;
                    turn.done = true;
                    return;
                }
                let n = q.waiting.len().min(MAX_BATCH);
                q.waiting.drain(..n).collect()
            };
            tracing::trace!(reads = batch.len(), "grouped task read");
            self.read_batch(batch).await;
        }
    }

    /// Reads `batch` in one statement and hands each caller its row.
    async fn read_batch(&self, batch: Vec<Waiting>) {
        let mut ids: Vec<&str> = batch.iter().map(|(id, _)| id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        let rows = match read_rows(&self.pool, self.retries, "read tasks", READ_MANY, |q| q.bind(&ids[..])).await {
            Ok(rows) => rows,
            Err(e) => return fail_all(batch, &e),
        };
        // The row of `ids[i]` in `found[i]`.
        let mut found: Vec<Option<&PgRow>> = vec![None; ids.len()];
        for row in &rows {
            match row.try_get::<&str, _>(4) {
                Ok(id) => {
                    if let Ok(i) = ids.binary_search(&id) {
                        found[i] = Some(row);
                    }
                }
                Err(e) => return fail_all(batch, &backend("decode a task row", e)),
            }
        }
        let answers: Vec<Answer> = batch
            .iter()
            .map(|(id, _)| {
                let row = ids.binary_search(&id.as_str()).ok().and_then(|i| found[i]);
                row.map(decode_row).transpose()
            })
            .collect();
        for ((_, done), answer) in batch.into_iter().zip(answers) {
            let _ = done.send(answer);
        }
    }
}

/// A flusher's turn: when it ends other than by finding the queue empty (its
/// task cancelled or panicking), the turn is given back, and if it was the
/// last, the reads left queued are answered with an error rather than
/// stranded.
struct Turn<'a> {
    reads: &'a GroupRead,
    done: bool,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let stranded = {
            let mut q = lock(&self.reads.queue);
            q.flushers -= 1;
            if q.flushers == 0 { std::mem::take(&mut q.waiting) } else { Vec::new() }
        };
        let err = StoreError::backend_message("postgres: the task read was abandoned");
        fail_all(stranded, &err);
    }
}

fn fail_all(batch: Vec<Waiting>, err: &StoreError) {
    for (_, done) in batch {
        let _ = done.send(Err(err.clone()));
    }
}
