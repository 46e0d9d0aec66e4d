//! The storage contract and what it stores: the [`TaskStore`] trait every
//! backend meets (its caps, owner scoping and update functions), the
//! [`TaskRecord`] a store keeps and its lease, task ids, the [`limits`] on
//! what a record holds of a client's input, the in-memory [`MemoryStore`], and
//! the `2025-11-25` era's listable store ([`legacy_store`]).
//!
//! This room depends on nothing else of the extension: the runtime drives
//! tasks through it and the wire answers from it. Why an operation failed is
//! the task vocabulary's [`StoreError`](crate::task::StoreError).

mod changes;
mod contract;
pub(crate) mod legacy_store;
pub mod limits;
mod memory;
mod record;
mod task_id;

pub use changes::{ChangePage, ChangeQuery, TaskChange, TaskChangeFeed};
pub use contract::{CreateCaps, Owner, StatusFields, TaskStore, TerminalBound, UpdateFn};
pub use memory::MemoryStore;
pub(crate) use memory::{Gone, IdBuild};
pub use record::{Lease, TaskFailure, TaskRecord};
pub use task_id::new_task_id;
pub(crate) use task_id::{is_legacy_task_id, new_legacy_task_id};
