//! Grouped reads: point reads of tasks (`tasks/get`, and the read half of
//! every compare-and-swap) that queue up behind the reads in flight go to
//! PostgreSQL together, as one `task_id = ANY($1)` statement. A backend
//! answers fifty ids in one statement for little more than the cost of one,
//! so under load the database spends its CPU on rows, not on statements. A
//! read that finds no other under way skips the queue and costs what a single
//! statement costs.

use super::{backend, decode_row, read_rows};
use crate::common::InFlight;
use crate::pool::ConnPool;
use conduit_mcp::ext::tasks::{StoreError, TaskRecord};
use sqlx::Row;
use sqlx::postgres::PgConnection;
use sqlx::postgres::PgRow;
use std::collections::HashMap;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use tokio::sync::{Semaphore, oneshot};

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

/// The queue of point reads in front of one engine's pool.
#[derive(Debug)]
pub(super) struct GroupRead {
    pool: Arc<ConnPool<PgConnection>>,
    /// Retries of a read on a broken connection.
    retries: usize,
    queue: Mutex<Vec<(String, oneshot::Sender<Answer>)>>,
    /// Reads under way (queued or running).
    in_flight: AtomicUsize,
    readers: Semaphore,
}

impl GroupRead {
    /// A queue in front of `pool`; a read is retried up to `retries` times on
    /// a broken connection.
    pub(super) fn new(pool: Arc<ConnPool<PgConnection>>, retries: usize) -> Self {
        Self {
            pool,
            retries,
            queue: Mutex::new(Vec::new()),
            in_flight: AtomicUsize::new(0),
            readers: Semaphore::new(READERS),
        }
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
            let rows =
                read_rows(&self.pool, self.retries, "read a task", READ_ONE, |q| q.bind(task_id.to_owned())).await?;
            return rows.first().map(decode_row).transpose();
        }
        let (done, answer) = oneshot::channel();
        lock(&self.queue).push((task_id.to_owned(), done));
        // The flush runs on its own, so a caller that gives up never strands
        // the reads queued with it.
        let reads = self.clone();
        tokio::spawn(async move { reads.flush().await });
        answer.await.unwrap_or_else(|e| Err(StoreError::backend("the task read was abandoned", e)))
    }

    /// Takes a turn, then reads every id queued at that moment (up to
    /// [`MAX_BATCH`]) in one statement and hands each caller its row.
    async fn flush(&self) {
        let Ok(_turn) = self.readers.acquire().await else { return };
        let batch: Vec<(String, oneshot::Sender<Answer>)> = {
            let mut queue = lock(&self.queue);
            let n = queue.len().min(MAX_BATCH);
            queue.drain(..n).collect()
        };
        if batch.is_empty() {
            // An earlier flush took this read along with its own.
            return;
        }
        let mut ids: Vec<String> = batch.iter().map(|(id, _)| id.clone()).collect();
        ids.sort_unstable();
        ids.dedup();
        let rows = read_rows(&self.pool, self.retries, "read tasks", READ_MANY, |q| q.bind(ids.clone())).await;
        let mut found: HashMap<String, PgRow> = HashMap::new();
        match rows {
            Ok(rows) => {
                for row in rows {
                    match row.try_get::<String, _>(4) {
                        Ok(id) => {
                            found.insert(id, row);
                        }
                        Err(e) => return fail_all(batch, &backend("decode a task row", e)),
                    }
                }
            }
            Err(e) => return fail_all(batch, &e),
        }
        for (id, done) in batch {
            let _ = done.send(found.get(&id).map(decode_row).transpose());
        }
    }
}

fn fail_all(batch: Vec<(String, oneshot::Sender<Answer>)>, err: &StoreError) {
    for (_, done) in batch {
        let _ = done.send(Err(err.clone()));
    }
}
