//! Protocol extensions, each plugged into the server through the
//! [`Extension`](crate::server::Extension) seam.

pub mod events;
pub mod legacy_task_wire;
pub mod tasks;
