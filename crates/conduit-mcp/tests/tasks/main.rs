//! The Tasks extension's runtime: the task-or-inline decision, the lifecycle, limits,
//! ownership, notifications, the janitor and notifier, recovery after a crash, a store outage,
//! the final write, and the listen index (the last two through the library client).

#[cfg(all(feature = "client", feature = "http"))]
#[path = "../support/client_support/mod.rs"]
pub mod client_support;
#[path = "../support/common/mod.rs"]
pub mod common;
#[path = "../support/log_capture/mod.rs"]
pub mod log_capture;

mod decision;
#[cfg(all(feature = "client", feature = "http"))]
mod final_write;
mod janitor_notifier;
mod lifecycle;
mod limits;
#[cfg(all(feature = "client", feature = "http"))]
mod listen_index;
mod notifications;
mod ownership;
mod recovery;
mod store_outage;
