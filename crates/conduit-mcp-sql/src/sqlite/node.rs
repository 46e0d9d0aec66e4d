//! Holding a node id: an exclusive lock on a small file next to the
//! database, one per id, kept for the life of the store. The operating
//! system drops the lock when the process ends, so a node that crashed frees
//! its id at once, and a second live process on the same file asking for the
//! same id is refused.

use super::SqliteEngine;
use conduit_mcp::ext::tasks::StoreError;
use std::fs::{File, OpenOptions, TryLockError};

/// The node id held and the locked file.
#[derive(Debug)]
pub(super) struct Hold {
    node: String,
    /// `None` for an in-memory database.
    _file: Option<File>,
}

/// FNV-1a: a stable name for the id's lock file, whatever characters the id has.
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
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
            *hold = Some(Hold { node: node.to_owned(), _file: None });
            return Ok(());
        }
        let path = format!("{}.node-{:016x}.lock", self.path, fnv1a(node));
        let io =
            |e: std::io::Error| StoreError::backend(format!("sqlite: cannot lock `{path}` for the node id: {e}"), e);
        let file = OpenOptions::new().create(true).truncate(false).write(true).open(&path).map_err(io)?;
        match file.try_lock() {
            Ok(()) => {
                *hold = Some(Hold { node: node.to_owned(), _file: Some(file) });
                Ok(())
            }
            Err(TryLockError::WouldBlock) => Err(StoreError::Refused(format!(
                "node id {node:?} is held by another live process on this database; give each process its own id"
            ))),
            Err(TryLockError::Error(e)) => Err(io(e)),
        }
    }

    /// Lets go of the node id, if held.
    pub(super) fn release_node(&self) {
        self.node.lock().unwrap_or_else(|p| p.into_inner()).take();
    }
}
