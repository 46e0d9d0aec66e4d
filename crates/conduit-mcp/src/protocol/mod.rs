//! Wire types for MCP `2026-07-28`: serde structs and enums, no I/O.
//!
//! Everything here is plain data. Field names are camelCase on the wire; an
//! absent optional field is skipped, never written as `null` (the one
//! exception is a task's `ttlMs`, which is required and nullable).

pub mod content;
pub mod discover;
pub mod jsonrpc;
pub mod meta;
pub mod mrtr;
pub mod prompts;
pub mod resources;
pub mod subscriptions;
pub mod tools;
pub mod version;

pub use content::{Content, ResourceContents};
pub use jsonrpc::{ErrorCode, Message, RequestId, RpcError};
pub use meta::{ClientCapabilities, Implementation};
pub use version::{LATEST_PROTOCOL_VERSION, SUPPORTED_VERSIONS};
