//! The `2026-07-28` Tasks extension on the wire: the extension itself
//! (`tasks/get`, `tasks/update`, `tasks/cancel`, the `taskIds` listen filter,
//! and its installation from a [`Tasks`](super::Tasks) handle), and what the
//! `2025-11-25` wire (`ext::legacy_task_wire`) shares with it: task creation
//! from a tool's [`TaskSpec`](crate::task::TaskSpec), the client's answers to
//! input requests, and a store's refusal as a JSON-RPC error.
//!
//! It answers from the [`runtime`](super::runtime) and the
//! [`store`](super::store); neither of them depends on it.

mod answers;
mod creation;
mod extension;
mod rpc_error;

pub(crate) use answers::{Answered, answer};
pub(crate) use creation::{Requested, create_task};
pub use extension::MAX_LISTEN_TASK_IDS;
pub(crate) use rpc_error::store_error;
