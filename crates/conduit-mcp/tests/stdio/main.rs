//! The stdio transport, both eras, and its request rate.

#[path = "../support/common/mod.rs"]
pub mod common;
#[path = "../support/examples/mod.rs"]
pub mod examples;
#[path = "../support/legacy_common/mod.rs"]
pub mod legacy_common;

mod rate_limits;
mod transport;
