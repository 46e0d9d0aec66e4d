//! The `2025-11-25` era's store: a [`LegacyTaskStore`] is a
//! [`TaskStore`](super::TaskStore) that can also [`list`](LegacyTaskStore::list)
//! an owner's tasks (the legacy `tasks/list`), its memory store, and the
//! [`CursorKey`] its pages are sealed with. Public as
//! `ext::tasks::legacy_store`, beside the runtime over it (`LegacyTasks`, in
//! the `runtime` room).

mod contract;
mod cursor;
mod memory;

pub use contract::{DEFAULT_PAGE_SIZE, LegacyTaskStore, MAX_PAGE_SIZE, TaskPage, clamp_page_size};
pub use cursor::{CursorKey, ListPosition};
pub use memory::MemoryLegacyStore;
