//! Holding a node id: an exclusive lock on a small file next to the
//! database, one per id, kept for the life of the store. The operating
//! system drops the lock when the process ends, so a node that crashed frees
//! its id at once, and a second live process on the same file asking for the
//! same id is refused.
//!
//! The file goes when the id is let go (on Unix it is unlinked while still
//! locked), and files that no live process holds — left by a process that
//! crashed — are removed when a node claims its id, so ids that differ on
//! every start (the CLI's default) leave nothing behind. Whoever locks a file
//! checks that its path still names that file, so an unlink racing a claim
//! never lets two processes hold the same id.

use super::SqliteEngine;
use conduit_mcp::task::StoreError;
use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};

/// The node id held and the locked file.
#[derive(Debug)]
pub(super) struct Hold {
    node: String,
    /// `None` for an in-memory database.
    file: Option<(File, PathBuf)>,
}

impl Drop for Hold {
    fn drop(&mut self) {
        if let Some((_file, path)) = &self.file {
            // Still locked here: a claim that opened the old file sees it
            // unlinked once it gets the lock, and starts over.
            let _ = std::fs::remove_file(path);
        }
    }
}

/// FNV-1a: a stable name for the id's lock file, whatever characters the id has.
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// Whether `path` still names the open `file` (it was not unlinked or replaced).
#[cfg(unix)]
fn still_named(path: &Path, file: &File) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(path), file.metadata()) {
        (Ok(p), Ok(f)) => p.dev() == f.dev() && p.ino() == f.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn still_named(path: &Path, _file: &File) -> bool {
    path.exists()
}

/// Removes the lock files of `db` (`DB.node-*.lock`) that no process holds.
fn remove_stale(db: &str) {
    let db = Path::new(db);
    let (Some(dir), Some(name)) = (db.parent(), db.file_name().and_then(|n| n.to_str())) else { return };
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    let prefix = format!("{name}.node-");
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(n) = file_name.to_str() else { continue };
        if !n.starts_with(&prefix) || !n.ends_with(".lock") {
            continue;
        }
        let path = entry.path();
        let Ok(file) = OpenOptions::new().write(true).open(&path) else { continue };
        if file.try_lock().is_ok() && still_named(&path, &file) {
            let _ = std::fs::remove_file(&path);
        }
    }
}

impl SqliteEngine {
    /// See [`TaskStore::claim_node`](conduit_mcp::ext::tasks::TaskStore::claim_node).
    pub(super) fn hold_node(&self, node: &str) -> Result<(), StoreError> {
        let mut hold = self.node.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(h) = hold.as_ref() {
            if h.node == node {
                return Ok(());
            }
            return Err(StoreError::Refused(format!(
                "this store already holds node id {:?}; one store serves one node",
                h.node
            )));
        }
        // An in-memory database belongs to this process alone.
        if self.path.starts_with("file:") || self.path.contains(":memory:") {
            *hold = Some(Hold { node: node.to_owned(), file: None });
            return Ok(());
        }
        remove_stale(&self.path);
        let path = PathBuf::from(format!("{}.node-{:016x}.lock", self.path, fnv1a(node)));
        let io = |e: std::io::Error| {
            StoreError::backend(format!("sqlite: cannot lock `{}` for the node id: {e}", path.display()), e)
        };
        loop {
            let file = OpenOptions::new().create(true).truncate(false).write(true).open(&path).map_err(io)?;
            match file.try_lock() {
                // Locked a file that was unlinked meanwhile: open the path again.
                Ok(()) if !still_named(&path, &file) => continue,
                Ok(()) => {
                    *hold = Some(Hold { node: node.to_owned(), file: Some((file, path)) });
                    return Ok(());
                }
                Err(TryLockError::WouldBlock) => {
                    return Err(StoreError::Refused(format!(
                        "node id {node:?} is held by another live process on this database; give each process its own id"
                    )));
                }
                Err(TryLockError::Error(e)) => return Err(io(e)),
            }
        }
    }

    /// Lets go of the node id, if held (its lock file goes with it).
    pub(super) fn release_node(&self) {
        self.node.lock().unwrap_or_else(|p| p.into_inner()).take();
    }
}
