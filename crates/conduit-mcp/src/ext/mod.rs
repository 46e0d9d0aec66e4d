//! Protocol extensions, each plugged into the server through the
//! [`Extension`](crate::server::Extension) seam.

pub mod legacy_tasks;
pub mod tasks;
