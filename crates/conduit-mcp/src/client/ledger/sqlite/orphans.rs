//! At open: the journals of processes that ended before folding them
//! (killed, or their fold failed) are folded, then removed.
//!
//! A journal is an orphan when its lock can be taken. The lock is held
//! while it is folded and removed, so two processes opening at once never
//! both fold one; one that gets the lock after the file is gone leaves it.
//! Lines at or below the journal's watermark were folded already and are
//! skipped; of the others, the last line of each entry is applied so that
//! nothing regresses: an entry absent is inserted, one present is replaced
//! only when it changed earlier than the line and has not ended (a status
//! another process wrote since stays). The new watermark is written in the same transaction, so a
//! fold interrupted before the file is removed is not applied twice.

use super::conn::Shared;
use super::fold::MARK;
use super::journal::{self, Op};
use super::record;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use std::collections::HashMap;
use std::fs::{File, TryLockError};
use std::path::Path;

/// Inserts the entry, or replaces one that changed earlier and has not ended.
const UPSERT: &str = "INSERT INTO tasks (server, task_id, principal, version, tool, args_digest, created_ms, \
     expires_ms, status, updated_ms, lost, resumable, in_flight) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13) \
     ON CONFLICT (server, task_id) DO UPDATE SET principal = excluded.principal, version = excluded.version, \
     tool = excluded.tool, args_digest = excluded.args_digest, created_ms = excluded.created_ms, \
     expires_ms = excluded.expires_ms, status = excluded.status, updated_ms = excluded.updated_ms, \
     lost = excluded.lost, resumable = excluded.resumable, in_flight = excluded.in_flight \
     WHERE tasks.updated_ms < excluded.updated_ms AND tasks.lost IS NULL \
     AND tasks.status NOT IN ('completed', 'failed', 'cancelled')";
/// The call in flight an answer replaces.
const DROP_CALL: &str = "DELETE FROM tasks WHERE server = ?1 AND task_id = ?2 AND in_flight = 1";

/// Folds and removes every orphan journal beside `db`, then forgets the
/// watermarks of journals that are gone. A journal that cannot be folded
/// now stays for the next open (logged, not returned: the ledger works
/// without it).
pub(super) fn fold_all(conn: &Shared, db: &Path) {
    let journals = match journal::journals_of(db) {
        Ok(j) => j,
        Err(e) => {
            tracing::warn!(error = %e, "the task ledger's directory could not be read for journals");
            return;
        }
    };
    for path in journals {
        if let Err(e) = fold_one(conn, &path) {
            tracing::warn!(error = %e, journal = %path.display(), "a task ledger journal was not folded (next open)");
        }
    }
    if let Err(e) = forget_gone(conn, db) {
        tracing::debug!(error = %e, "the task ledger's old watermarks were not cleared");
    }
}

/// Folds and removes the journal at `path` when its process has ended.
fn fold_one(conn: &Shared, path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => return Ok(()),
        Err(TryLockError::Error(e)) => return Err(e.into()),
    }
    // Folded and removed by another opener before the lock came here.
    if !path.exists() {
        return Ok(());
    }
    let ops = journal::read(&file)?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    conn.run_blocking(|c| apply(c, &name, &ops))?;
    std::fs::remove_file(path)?;
    Ok(())
}

/// The lines above the watermark, without regressing anything, and the new watermark.
fn apply(c: &mut Connection, name: &str, ops: &[Op]) -> rusqlite::Result<()> {
    let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let mark: i64 =
        tx.query_row("SELECT seq FROM journal_folds WHERE journal = ?1", [name], |r| r.get(0)).optional()?.unwrap_or(0);
    let todo: Vec<&Op> = ops.iter().filter(|op| i64::try_from(op.seq).is_ok_and(|s| s > mark)).collect();
    // Within the journal the last line of an entry is the one that counts, as in a live fold.
    let latest: HashMap<(&str, &str), usize> =
        todo.iter().enumerate().map(|(i, op)| ((op.entry.server.as_str(), op.entry.task_id.as_str()), i)).collect();
    let mut last = mark;
    for (i, op) in todo.iter().enumerate() {
        if let Some(call) = &op.call {
            tx.prepare_cached(DROP_CALL)?.execute(params![op.entry.server, call])?;
        }
        if latest.get(&(op.entry.server.as_str(), op.entry.task_id.as_str())) == Some(&i) {
            let mut upsert = tx.prepare_cached(UPSERT)?;
            record::write(&mut upsert, &op.entry, None)?;
        }
        last = last.max(i64::try_from(op.seq).unwrap_or(i64::MAX));
    }
    if last > mark {
        tx.prepare_cached(MARK)?.execute(params![name, last])?;
    }
    tx.commit()
}

/// Drops the watermarks of journals no longer there (one is written by
/// each fold; its file goes afterwards).
fn forget_gone(conn: &Shared, db: &Path) -> rusqlite::Result<()> {
    conn.run_blocking(|c| {
        let names: Vec<String> =
            c.prepare("SELECT journal FROM journal_folds")?.query_map([], |r| r.get(0))?.collect::<Result<_, _>>()?;
        let gone: Vec<&String> = names.iter().filter(|n| !db.with_file_name(n).exists()).collect();
        if gone.is_empty() {
            return Ok(());
        }
        let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
        for n in gone {
            tx.execute("DELETE FROM journal_folds WHERE journal = ?1", [n])?;
        }
        tx.commit()
    })
}
