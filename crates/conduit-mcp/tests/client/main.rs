//! The library client against real servers: ours over HTTP (both eras, tasks), the rmcp
//! peer, what it sends checked against the official schemas, and the client examples run end
//! to end.

#[cfg(all(feature = "client", feature = "http"))]
#[path = "../support/client_support/mod.rs"]
pub mod client_support;
#[path = "../support/common/mod.rs"]
pub mod common;
#[path = "../support/examples/mod.rs"]
pub mod examples;
#[path = "../support/python_venv/mod.rs"]
pub mod python_venv;

mod event_backpressure;
#[cfg(feature = "testing")]
mod event_hub;
mod events;
mod examples_run;
mod follow_events;
mod ledger;
mod over_http;
mod rmcp_peer;
mod tasks;
mod tool_listing;
mod webhook_interop;
mod wire_schema;
