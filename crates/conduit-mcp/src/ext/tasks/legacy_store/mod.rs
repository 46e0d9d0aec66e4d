//! Legacy tasks: the task model of protocol revision `2025-11-25` (the seed's
//! `ConduitMcp.Tasks`), stored apart from the extension's tasks.
//!
//! The legacy era's tasks are the same [`TaskRecord`](super::TaskRecord)s,
//! driven by the same worker calls, in a store of their own: a
//! [`LegacyTaskStore`] is a [`TaskStore`](super::TaskStore) that can also
//! [`list`](LegacyTaskStore::list) an owner's tasks, which the legacy
//! `tasks/list` needs and the modern contract forbids. Pages are sealed with a
//! [`CursorKey`]: a cursor that was altered or issued to someone else is
//! refused with [`StoreError::InvalidCursor`](super::StoreError::InvalidCursor)
//! (`-32602` on the wire).
//!
//! Here: the store trait and its memory store, the sealed cursor, and
//! [`LegacyTasks`], the Tasks runtime over such a store (plus `list` and `wait`)
//! that a [`Tasks`](super::Tasks) handle owns as its twin. The `2025-11-25` wire
//! (`tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel`) is
//! `ext::legacy_task_wire`'s.

mod cursor;
mod handle;
mod memory;
mod store;

pub use cursor::{CursorKey, ListPosition};
pub use handle::LegacyTasks;
pub use memory::MemoryLegacyStore;
pub use store::{DEFAULT_PAGE_SIZE, LegacyTaskStore, MAX_PAGE_SIZE, TaskPage, clamp_page_size};
