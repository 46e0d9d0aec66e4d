//! Folding the journal into the database: [`fold`] (every queued record
//! in one transaction) and [`Folder`], the ledger's thread that folds in
//! the background and, when the last handle goes, one last time.
//!
//! A fold runs with the connection held from the moment it takes the
//! queue until it commits, so whatever takes the connection after it (a
//! read, a status write, the exact cap check, each of which folds first)
//! sees every record this process made. The thread waits for a burst of
//! records to end (see [`Pace`]), so one transaction carries many of them
//! and the fold's work comes after the burst, not during it.

use super::conn::Shared;
use super::journal::{Journal, Op};
use super::record::{self, Count};
use rusqlite::{Connection, TransactionBehavior, params};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// When the folding thread folds: once records stop coming for `quiet`,
/// or once the journal holds `bytes`, or `longest` after the first record
/// waiting, whichever comes first. A burst of creates (an agent starting a
/// thousand tasks) is written to the journal only, and folded when it ends:
/// the fold's work then is not on the creates' path.
#[derive(Debug, Clone, Copy)]
pub(super) struct Pace {
    /// How long no new record means the burst is over.
    pub(super) quiet: Duration,
    /// The journal's size that folds at once (well below its bound).
    pub(super) bytes: u64,
    /// How long a record waits at most: another process sees it by then.
    pub(super) longest: Duration,
}

/// The ledger's pace: 20 ms of quiet, 512 KiB of journal (about 1 500
/// records), or one second.
pub(super) const PACE: Pace =
    Pace { quiet: Duration::from_millis(20), bytes: 512 << 10, longest: Duration::from_secs(1) };

/// The highest line of a journal folded, written with the lines it covers.
pub(super) const MARK: &str = "INSERT OR REPLACE INTO journal_folds (journal, seq) VALUES (?1, ?2)";

/// Folds every record `journal` queues into the database in one
/// `IMMEDIATE` transaction, with the watermark, and counts the entries
/// there for `count` (other processes' included); how many records. On
/// failure they wait again, in order.
pub(super) fn fold(c: &mut Connection, journal: &Journal, count: &Count) -> rusqlite::Result<usize> {
    let ops = journal.take();
    if ops.is_empty() {
        return Ok(0);
    }
    match apply_all(c, journal.name(), &ops) {
        Ok(entries) => {
            count.counted(entries);
            journal.folded();
            Ok(ops.len())
        }
        Err(e) => {
            journal.put_back(ops);
            Err(e)
        }
    }
}

/// `ops` and the watermark in one transaction; how many entries the file
/// holds with them.
fn apply_all(c: &mut Connection, journal: &str, ops: &[Op]) -> rusqlite::Result<usize> {
    let last = ops.last().map_or(0, |op| i64::try_from(op.seq).unwrap_or(i64::MAX));
    let answered = answered_in_batch(ops);
    let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
    {
        let mut statements = record::Statements::prepare(&tx)?;
        for (i, op) in ops.iter().enumerate() {
            match answered.get(i).copied().unwrap_or(Answered::No) {
                Answered::Later => {}
                Answered::Earlier => {
                    statements.apply(None, &op.entry)?;
                }
                Answered::No => {
                    statements.apply(op.call.as_deref(), &op.entry)?;
                }
            }
        }
    }
    tx.prepare_cached(MARK)?.execute(params![journal, last])?;
    let entries = record::entries(&tx)?;
    tx.commit()?;
    Ok(entries)
}

/// A record's part in a call in flight answered within one batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answered {
    /// Neither: folded as it was recorded.
    No,
    /// A call in flight whose task comes later in the batch: not folded
    /// (its row would be turned into the task's at once).
    Later,
    /// The task answering a call in flight recorded earlier in the batch:
    /// inserted, as there is no row of the call's to turn.
    Earlier,
}

/// Which records of `ops` are a call in flight and its task, both in this
/// batch (as `conduit-mcp call` records them, a few milliseconds apart):
/// they fold as one insert of the task instead of an insert and an update.
/// Only records reach the journal (statuses, losses and forgetting are
/// written at once, after a fold), so nothing between the two touches the call.
/// Empty when there are none.
fn answered_in_batch(ops: &[Op]) -> Vec<Answered> {
    let mut calls = std::collections::HashMap::new();
    let mut out = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        if op.call.is_none() && op.entry.in_flight {
            calls.insert((op.entry.server.as_str(), op.entry.task_id.as_str()), i);
        }
        let Some(key) = op.call.as_deref() else { continue };
        if let Some(call) = calls.remove(&(op.entry.server.as_str(), key)) {
            if out.is_empty() {
                out = vec![Answered::No; ops.len()];
            }
            out[call] = Answered::Later;
            out[i] = Answered::Earlier;
        }
    }
    out
}

/// The ledger's folding thread. Dropped with the last handle: it folds
/// what is queued (best effort: what it cannot fold stays in the file for
/// the next process) and removes the journal.
#[derive(Debug)]
pub(super) struct Folder {
    journal: Arc<Journal>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Folder {
    /// Starts the thread folding `journal` into `conn` at `pace` (`None`:
    /// only at the end).
    pub(super) fn start(
        journal: Arc<Journal>,
        conn: Shared,
        count: Arc<Count>,
        pace: Option<Pace>,
    ) -> std::io::Result<Self> {
        let j = journal.clone();
        let thread =
            std::thread::Builder::new().name("conduit-ledger".into()).spawn(move || run(&j, &conn, &count, pace))?;
        Ok(Self { journal, thread: Mutex::new(Some(thread)) })
    }

    /// The journal.
    pub(super) fn journal(&self) -> &Arc<Journal> {
        &self.journal
    }

    fn join(&self) {
        let thread = self.thread.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        if let Some(t) = thread
            && t.join().is_err()
        {
            tracing::warn!("the task ledger's folding thread panicked");
        }
    }

    /// Ends the thread without a fold and lets the journal's lock go, as a
    /// `kill -9` would.
    #[cfg(test)]
    pub(super) fn abandon(&self) {
        self.journal.abandon();
        self.join();
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        self.journal.stop();
        self.join();
        self.journal.remove();
    }
}

/// The thread: a fold each time records have gathered, a last one at the end.
fn run(journal: &Journal, conn: &Shared, count: &Count, pace: Option<Pace>) {
    let fold_now = || match conn.run_blocking(|c| fold(c, journal, count)) {
        Ok(n) => conn.wrote(n),
        Err(e) => tracing::warn!(error = %e, "the task ledger could not fold its journal (it will try again)"),
    };
    while journal.wait_for_work(pace.as_ref()) {
        fold_now();
    }
    if !journal.abandoned() {
        fold_now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::ledger::LedgerEntry;

    fn op(seq: u64, call: Option<&str>, server: &str, id: &str, in_flight: bool) -> Op {
        let mut entry = LedgerEntry::new(server, "anonymous", id, "2026-07-28", "t", "sha256:", 1);
        entry.in_flight = in_flight;
        Op { seq, call: call.map(str::to_owned), entry }
    }

    #[test]
    fn a_call_and_its_task_in_one_batch_fold_as_the_tasks_insert() {
        use Answered::{Earlier, Later, No};
        let ops = [
            op(1, None, "s", "call:a", true),
            op(2, None, "s", "task-0", false),
            op(3, None, "other", "call:b", true),
            op(4, Some("call:a"), "s", "task-1", false),
            // call:b was made at another server: not this one's call.
            op(5, Some("call:b"), "s", "task-2", false),
            // call:c was folded in an earlier batch: its row is turned in place.
            op(6, Some("call:c"), "s", "task-3", false),
        ];
        assert_eq!(answered_in_batch(&ops), [Later, No, No, Earlier, No, No]);
        assert!(answered_in_batch(&ops[1..3]).is_empty(), "no call answered: nothing allocated");
    }
}
