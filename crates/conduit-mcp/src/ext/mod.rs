//! Protocol extensions plugged in through the [`Extension`] seam.

pub use crate::server::Extension;
