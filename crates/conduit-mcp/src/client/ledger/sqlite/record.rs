//! Writing an entry: appended to the journal while the ledger is far from
//! its cap, the exact cap check in one write transaction near it.
//!
//! A record sits between the server's answer and the handle the caller
//! gets, so its cost is on every create: the common case is one line
//! appended to the journal (one `write(2)`), folded into the file later
//! with others in one transaction (an `INSERT OR REPLACE`, or an `UPDATE`
//! that turns the call in flight into its task, each). The count that
//! decides it is this process's: read from the file when the ledger opens
//! and again in every fold's transaction (so never on a create's path),
//! plus the records still queued. Within [`MARGIN`] entries of the cap
//! every write folds the journal and takes the exact path, so other
//! processes writing at once can push the file past the cap by at most
//! what they wrote since this process last folded.

use super::super::{LedgerEntry, LedgerError};
use super::SqliteLedger;
use super::fold::fold;
use rusqlite::{CachedStatement, Connection, Statement, TransactionBehavior, params};
use std::sync::atomic::{AtomicUsize, Ordering};

/// How near the cap the exact path starts.
const MARGIN: usize = 256;

const INSERT: &str = "INSERT OR REPLACE INTO tasks (server, task_id, principal, version, tool, args_digest, \
     created_ms, expires_ms, status, updated_ms, lost, resumable, in_flight) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)";
/// The call in flight `?14` becomes the task, in place (one row before and after).
const TURN_CALL: &str = "UPDATE OR REPLACE tasks SET task_id = ?2, principal = ?3, version = ?4, tool = ?5, \
     args_digest = ?6, created_ms = ?7, expires_ms = ?8, status = ?9, updated_ms = ?10, lost = ?11, \
     resumable = ?12, in_flight = ?13 WHERE server = ?1 AND task_id = ?14 AND in_flight = 1";
const DROP_CALL: &str = "DELETE FROM tasks WHERE server = ?1 AND task_id = ?2 AND in_flight = 1";
/// Over the cap: the oldest ended entries go first, then unfinished ones
/// whose TTL has ended; an unfinished task within its TTL never goes.
const MAKE_ROOM: &str = "DELETE FROM tasks WHERE (server, task_id) IN (SELECT server, task_id FROM tasks
     WHERE lost IS NOT NULL OR status IN ('completed', 'failed', 'cancelled') OR expires_ms < ?1
     ORDER BY lost IS NULL AND status NOT IN ('completed', 'failed', 'cancelled'), updated_ms
     LIMIT ?2)";

/// This process's idea of how many entries the file holds.
#[derive(Debug)]
pub(super) struct Count {
    /// Entries as last counted plus records written at once since;
    /// `usize::MAX` until counted.
    entries: AtomicUsize,
}

impl Default for Count {
    fn default() -> Self {
        Self { entries: AtomicUsize::new(usize::MAX) }
    }
}

impl Count {
    /// The file held `n` entries when a transaction of this process's counted them.
    pub(super) fn counted(&self, n: usize) {
        self.entries.store(n, Ordering::Relaxed);
    }

    /// Entries as last counted (`usize::MAX`: not yet).
    #[cfg(test)]
    pub(super) fn entries(&self) -> usize {
        self.entries.load(Ordering::Relaxed)
    }

    /// A record written at once added `n` entries (nothing while uncounted).
    pub(super) fn added(&self, n: usize) {
        let _ = self
            .entries
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| (v != usize::MAX).then(|| v.saturating_add(n)));
    }
}

/// What a record did.
enum Recorded {
    /// Written; the file holds this many more entries (0 or 1).
    Added(usize),
    /// Written in the exact path; the file holds this many entries.
    Counted(usize),
    /// Over the cap: nothing written.
    Full,
}

impl SqliteLedger {
    /// Records `e` (in place of the call in flight `replaced`, if any).
    pub(super) async fn record_in_place_of(&self, replaced: Option<&str>, e: &LedgerEntry) -> Result<(), LedgerError> {
        // How many records may wait in the journal before the cap must be checked.
        let known = self.count.entries.load(Ordering::Relaxed);
        let room = if known == usize::MAX { 0 } else { self.cap.saturating_sub(known.saturating_add(MARGIN)) };
        if room > 0 && self.folder.journal().append(replaced, e, room) {
            return Ok(());
        }
        let (e, replaced, cap) = (e.clone(), replaced.map(str::to_owned), self.cap);
        let (journal, count) = (self.folder.journal().clone(), self.count.clone());
        let done = self
            .run(move |c| {
                fold(c, &journal, &count)?;
                let known = count.entries.load(Ordering::Relaxed);
                if known == usize::MAX || known.saturating_add(MARGIN) >= cap {
                    record_exactly(c, replaced.as_deref(), &e, cap)
                } else {
                    apply(c, replaced.as_deref(), &e).map(Recorded::Added)
                }
            })
            .await?;
        match done {
            Recorded::Added(n) => {
                self.count.added(n);
                Ok(())
            }
            Recorded::Counted(n) => {
                self.count.counted(n);
                Ok(())
            }
            Recorded::Full => Err(LedgerError::Full { cap: self.cap }),
        }
    }
}

/// One statement (a record written at once, or one of a fold): the call
/// turned into its task, or the entry inserted; how many entries it added.
pub(super) fn apply(c: &Connection, replaced: Option<&str>, e: &LedgerEntry) -> rusqlite::Result<usize> {
    Statements::prepare(c)?.apply(replaced, e)
}

/// The two statements a record may run, prepared once for a whole fold.
pub(super) struct Statements<'c> {
    insert: CachedStatement<'c>,
    turn: CachedStatement<'c>,
}

impl<'c> Statements<'c> {
    /// From `c`'s statement cache.
    pub(super) fn prepare(c: &'c Connection) -> rusqlite::Result<Self> {
        Ok(Self { insert: c.prepare_cached(INSERT)?, turn: c.prepare_cached(TURN_CALL)? })
    }

    /// See [`apply`].
    pub(super) fn apply(&mut self, replaced: Option<&str>, e: &LedgerEntry) -> rusqlite::Result<usize> {
        if let Some(key) = replaced
            && write(&mut self.turn, e, Some(key))? == 1
        {
            return Ok(0);
        }
        write(&mut self.insert, e, None)?;
        Ok(1)
    }
}

/// The exact path: the record and the cap in one write transaction.
fn record_exactly(
    c: &mut Connection,
    replaced: Option<&str>,
    e: &LedgerEntry,
    cap: usize,
) -> rusqlite::Result<Recorded> {
    let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
    // The call it answers gives up its place first, so the cap counts one entry.
    if let Some(key) = replaced {
        tx.prepare_cached(DROP_CALL)?.execute(params![e.server, key])?;
    }
    {
        let mut insert = tx.prepare_cached(INSERT)?;
        write(&mut insert, e, None)?;
    }
    let mut n = entries(&tx)?;
    if n > cap {
        let excess = i64::try_from(n - cap).unwrap_or(i64::MAX);
        tx.prepare_cached(MAKE_ROOM)?.execute(params![e.updated_ms, excess])?;
        n = entries(&tx)?;
        if n > cap {
            // Nothing is written: the transaction rolls back when dropped.
            return Ok(Recorded::Full);
        }
    }
    tx.commit()?;
    Ok(Recorded::Counted(n))
}

/// How many entries the file holds, as `c`'s transaction sees it.
pub(super) fn entries(c: &Connection) -> rusqlite::Result<usize> {
    let n: i64 = c.query_row("SELECT count(*) FROM tasks", [], |r| r.get(0))?;
    Ok(usize::try_from(n).unwrap_or(0))
}

/// Runs `INSERT` or `TURN_CALL` (with the call's key), or any statement
/// taking the same columns, for `e`; rows changed.
pub(super) fn write(stmt: &mut Statement<'_>, e: &LedgerEntry, call: Option<&str>) -> rusqlite::Result<usize> {
    let columns = params![
        e.server,
        e.task_id,
        e.principal,
        e.version,
        e.tool,
        e.args_digest,
        e.created_ms,
        e.expires_ms,
        e.status.as_str(),
        e.updated_ms,
        e.lost,
        i64::from(e.resumable),
        i64::from(e.in_flight),
    ];
    match call {
        None => stmt.execute(columns),
        Some(key) => {
            let mut all = columns.to_vec();
            all.push(&key);
            stmt.execute(all.as_slice())
        }
    }
}
