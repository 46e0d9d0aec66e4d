//! The 2025-11-25 era: sessions, their streams and replay, legacy tasks and their owners,
//! the version header, errors, and the bounds on what a session or a client holds.

#[path = "../support/common/mod.rs"]
pub mod common;
#[path = "../support/legacy_common/mod.rs"]
pub mod legacy_common;

mod errors;
mod replay_bounds;
mod session_bounds;
mod session_http;
mod task_bounds;
mod task_owners;
mod tasks_handle;
mod version_header;
mod waiting_bounds;
mod worker_by_id;
