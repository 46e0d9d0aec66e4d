//! `SqliteStore` on its own: a file that is locked, slow or corrupted, creates
//! committed in groups, and the lock file that holds a node's id.

mod changes;
mod changes_migration;
mod faults;
mod group_commit;
mod node_lock;
