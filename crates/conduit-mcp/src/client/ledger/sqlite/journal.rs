//! The intent journal: a file of this process's own beside the database,
//! `DB.pending-PID-RANDOM`, where a record is appended as one JSON line
//! before it is folded into the database.
//!
//! A record costs one `pwrite(2)` right after the previous line: once it
//! returns, the line is in the operating system's hands, so a process
//! killed right after finds it again in the next one (see `orphans`). The
//! file is created `0600` and held under an exclusive lock for as long as
//! the ledger lives; a journal whose lock can be taken belongs to a process
//! that has ended.
//!
//! The records not yet folded wait in memory in the order written, beside
//! the file, under one mutex. A fold takes them all, writes them to the
//! database with the highest sequence number folded (the watermark, so no
//! line is ever applied twice), and when nothing new came meanwhile the
//! next line is written at the start of the file again, over the lines just
//! folded. The file is never truncated while the ledger lives: once it has
//! grown, writing over the pages it has changes neither its size nor its
//! blocks, only the page cache. What follows the newest lines
//! was folded already: a whole old line is below the watermark and a cut
//! one does not parse, so a reader skips both. Past [`BOUND`] bytes of file,
//! records stop queueing and are written to the database at once, until a
//! fold lets the file start over.

use super::super::LedgerEntry;
use super::fold::{PACE, Pace};
pub(super) use super::line::Op;
use super::line::{decode, encode};
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

/// How large the file may grow before records are written at once (1 MiB).
pub(super) const BOUND: u64 = 1 << 20;

/// What follows the database's file name in a journal's.
const INFIX: &str = ".pending-";

/// This process's journal: the file and the records not yet folded.
#[derive(Debug)]
pub(super) struct Journal {
    path: PathBuf,
    /// The file's name, the watermark's key in the database.
    name: String,
    state: Mutex<State>,
    /// Tells the folding thread that records wait, or that it must stop.
    wake: Condvar,
}

#[derive(Debug)]
struct State {
    file: File,
    /// Not yet folded, in the order written.
    queue: Vec<Op>,
    next_seq: u64,
    /// Where the next line goes: the end of the lines written since the
    /// file last started over.
    bytes: u64,
    /// The line being written (kept to save an allocation per record).
    line: Vec<u8>,
    /// The folding thread ends (after a last fold, unless `abandoned`).
    stopping: bool,
    /// Left as a killed process leaves it (tests only).
    abandoned: bool,
}

impl Journal {
    /// Creates a journal beside the database `db` and locks it. An opener
    /// that took the new file for an orphan (it locked it first) has
    /// removed it: then another name.
    pub(super) fn create(db: &Path) -> std::io::Result<Self> {
        loop {
            let name = format!("{}{INFIX}{}-{:016x}", file_name(db), std::process::id(), rand::random::<u64>());
            let path = db.with_file_name(&name);
            let file = create_private(&path)?;
            file.lock()?;
            if path.exists() {
                let state = State {
                    file,
                    queue: Vec::new(),
                    next_seq: 1,
                    bytes: 0,
                    line: Vec::with_capacity(512),
                    stopping: false,
                    abandoned: false,
                };
                return Ok(Self { path, name, state: Mutex::new(state), wake: Condvar::new() });
            }
        }
    }

    /// The file's name.
    pub(super) fn name(&self) -> &str {
        &self.name
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Appends `e` (in place of the call in flight `call`) with one write
    /// and queues it, unless `room` records wait already (the cap must be
    /// checked), the file is past [`BOUND`], or the write failed (the file
    /// is cut back to its last whole line): then `false`, and the caller
    /// writes the record to the database itself.
    pub(super) fn append(&self, call: Option<&str>, e: &LedgerEntry, room: usize) -> bool {
        let mut guard = self.state();
        let st = &mut *guard;
        if st.queue.len() >= room || st.bytes >= BOUND {
            return false;
        }
        let seq = st.next_seq;
        st.line.clear();
        encode(&mut st.line, seq, call, e);
        match write_at(&st.file, &st.line, st.bytes) {
            Ok(n) if n == st.line.len() => {}
            done => {
                let cut = st.file.set_len(st.bytes);
                tracing::debug!(wrote = ?done.map_err(|e| e.to_string()), cut = ?cut.err(),
                    "the task ledger's journal took no whole line; the record goes to the database");
                return false;
            }
        }
        let before = st.bytes;
        st.bytes += st.line.len() as u64;
        st.next_seq = seq + 1;
        // The first record wakes the folding thread, and so does the one that
        // brings the journal to the size that folds at once.
        let first = st.queue.is_empty() || (before < PACE.bytes && st.bytes >= PACE.bytes);
        st.queue.push(Op { seq, call: call.map(str::to_owned), entry: e.clone() });
        drop(guard);
        if first {
            self.wake.notify_one();
        }
        true
    }

    /// Takes every queued record, for a fold (which holds the connection,
    /// so a reader that takes the connection after it sees them folded).
    pub(super) fn take(&self) -> Vec<Op> {
        std::mem::take(&mut self.state().queue)
    }

    /// The fold of `ops` failed: they wait again, first.
    pub(super) fn put_back(&self, mut ops: Vec<Op>) {
        let mut st = self.state();
        ops.append(&mut st.queue);
        st.queue = ops;
    }

    /// The fold committed: when nothing came meanwhile the next line goes
    /// at the start of the file, over folded ones (else the watermark tells
    /// the lines folded from the others).
    pub(super) fn folded(&self) {
        let mut st = self.state();
        if st.queue.is_empty() {
            st.bytes = 0;
        }
    }

    /// Waits until records are queued, then until `pace` says to fold them
    /// (`None`: until the journal stops); `false` once it stops.
    pub(super) fn wait_for_work(&self, pace: Option<&Pace>) -> bool {
        let mut st = self.state();
        while (st.queue.is_empty() || pace.is_none()) && !st.stopping {
            st = self.wake.wait(st).unwrap_or_else(PoisonError::into_inner);
        }
        let Some(pace) = pace else { return false };
        let first = Instant::now();
        loop {
            if st.stopping {
                return false;
            }
            let waited = first.elapsed();
            if st.bytes >= pace.bytes || waited >= pace.longest {
                return true;
            }
            let seen = st.next_seq;
            let quiet = pace.quiet.min(pace.longest - waited);
            st = self.wake.wait_timeout(st, quiet).unwrap_or_else(PoisonError::into_inner).0;
            if st.next_seq == seen && !st.stopping && st.bytes < pace.bytes {
                return true;
            }
        }
    }

    /// Tells the folding thread to fold what is left and end.
    pub(super) fn stop(&self) {
        self.state().stopping = true;
        self.wake.notify_all();
    }

    /// Whether the folding thread ends without folding (as if killed).
    pub(super) fn abandoned(&self) -> bool {
        self.state().abandoned
    }

    /// Removes the file when every record is folded (else it stays, for the
    /// next process to fold once this one's lock is gone).
    pub(super) fn remove(&self) {
        let st = self.state();
        if st.abandoned {
            return;
        }
        if !st.queue.is_empty() {
            tracing::warn!(left = st.queue.len(), "task ledger records left in the journal for the next process");
            return;
        }
        if let Err(e) = std::fs::remove_file(&self.path) {
            tracing::debug!(error = %e, "the task ledger's journal was not removed");
        }
    }

    /// Stops the folding thread without a fold and lets the lock go, the
    /// file left as a `kill -9` leaves it.
    #[cfg(test)]
    pub(super) fn abandon(&self) {
        let mut st = self.state();
        st.abandoned = true;
        st.stopping = true;
        let _ = st.file.unlock();
        drop(st);
        self.wake.notify_all();
    }

    /// The file.
    #[cfg(test)]
    pub(super) fn path(&self) -> &Path {
        &self.path
    }
}

/// The database's file name, as journals start.
fn file_name(db: &Path) -> String {
    db.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// The journals beside the database `db` (any process's, this one's too).
pub(super) fn journals_of(db: &Path) -> std::io::Result<Vec<PathBuf>> {
    let prefix = format!("{}{INFIX}", file_name(db));
    let dir = db.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut out = Vec::new();
    for item in std::fs::read_dir(dir)? {
        let item = item?;
        if item.file_name().to_string_lossy().starts_with(&prefix) {
            out.push(item.path());
        }
    }
    Ok(out)
}

/// The records of a journal, in order. A line that does not parse (the
/// last one torn by a crash mid-write) is skipped.
pub(super) fn read(file: &File) -> std::io::Result<Vec<Op>> {
    let mut out = Vec::new();
    for line in BufReader::new(file).split(b'\n') {
        let line = line?;
        match decode(&line) {
            Some(op) => out.push(op),
            None if line.is_empty() => {}
            None => tracing::debug!(bytes = line.len(), "a torn line of a task ledger journal is skipped"),
        }
    }
    Ok(out)
}

#[cfg(unix)]
fn create_private(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().read(true).write(true).create_new(true).mode(0o600).open(path)
}

#[cfg(not(unix))]
fn create_private(path: &Path) -> std::io::Result<File> {
    std::fs::OpenOptions::new().read(true).write(true).create_new(true).open(path)
}

/// One positioned write of `buf` at `offset`; how many bytes it took.
#[cfg(unix)]
fn write_at(file: &File, buf: &[u8], offset: u64) -> std::io::Result<usize> {
    std::os::unix::fs::FileExt::write_at(file, buf, offset)
}

/// One positioned write of `buf` at `offset`; how many bytes it took.
#[cfg(windows)]
fn write_at(file: &File, buf: &[u8], offset: u64) -> std::io::Result<usize> {
    std::os::windows::fs::FileExt::seek_write(file, buf, offset)
}
