//! Protocol extensions plugged in through the [`Extension`] seam.

pub mod tasks;

pub use crate::server::Extension;
