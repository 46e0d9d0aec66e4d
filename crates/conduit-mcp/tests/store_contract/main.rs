//! The public contract suites (feature testing) run against the memory stores: TaskStore,
//! LegacyTaskStore and SessionStore.

mod legacy_memory;
mod memory;
mod session_memory;
