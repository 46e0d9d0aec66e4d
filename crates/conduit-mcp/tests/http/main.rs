//! The 2026-07-28 era over HTTP, on a real socket: headers, status codes, bad input,
//! limits and rates, listen streams, MRTR, the features (tools, prompts, resources,
//! completion, discover), TLS, and what the server sends checked against the official schemas.

#[path = "../support/common/mod.rs"]
pub mod common;
#[path = "../support/features_server/mod.rs"]
pub mod features_server;
#[path = "../support/legacy_common/mod.rs"]
pub mod legacy_common;
#[path = "../support/python_venv/mod.rs"]
pub mod python_venv;

mod bad_input;
mod cancellation;
mod completion;
mod discover;
mod events;
mod headers;
mod limits;
mod listen;
mod listen_caps;
mod mrtr;
mod notifications;
mod prompts;
mod rate_limits;
mod resources;
mod serve_routes;
mod status;
mod task_name_header;
#[cfg(feature = "tls")]
mod tls;
mod tools;
mod wire_schema;
