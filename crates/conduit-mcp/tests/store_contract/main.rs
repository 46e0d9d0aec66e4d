//! The public contract suites (feature testing) run against the memory stores: TaskStore,
//! LegacyTaskStore, SessionStore and WebhookStore.

mod legacy_memory;
mod memory;
mod session_memory;
mod webhook_memory;
