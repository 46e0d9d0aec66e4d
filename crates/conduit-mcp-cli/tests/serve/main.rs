//! `conduit-mcp serve`, the reference server, as a user runs it: its flags and their
//! refusals, OAuth, the demo tools' scoping, metrics (feature metrics), and signals.

#[path = "../support/common/mod.rs"]
pub mod common;

mod cli_rules;
mod demo_scoping;
mod events;
#[cfg(feature = "metrics")]
mod metrics;
mod oauth;
mod reference;
mod signals;
