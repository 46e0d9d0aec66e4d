//! The wire vocabulary of MCP, for both sides: serde types, method names and
//! the rules both peers apply. No I/O, no runtime.
//!
//! Field names are camelCase on the wire; an absent optional field is
//! skipped, never written as `null` (the one exception is a task's `ttlMs`,
//! which is required and nullable).
//!
//! - [`jsonrpc`]: envelopes, error codes, the parser and the encoder;
//! - [`peer_json`]: a peer's JSON read into `Value`s that survive every round trip;
//! - [`version`]: revisions and the era decision;
//! - [`methods`]: every method and notification name;
//! - [`routing`]: which values the HTTP routing headers mirror, and their encoding;
//! - [`oauth`]: the OAuth wire: well-known paths, the challenge, error codes, where credentials may go;
//! - [`meta`]: `_meta` keys and client capabilities;
//! - [`tasks`]: the Tasks extension's id and task shapes;
//! - [`events`]: the Events extension's id, names, shapes and error codes;
//! - [`legacy_session`], [`legacy_tasks`]: what only the 2025-11-25 era has (its
//!   session: handshake, header, log levels; its task shapes);
//! - [`tools`], [`prompts`], [`resources`], [`content`], [`discover`], [`mrtr`]: feature shapes.

pub mod content;
pub mod discover;
pub mod events;
pub mod jsonrpc;
pub mod legacy_session;
pub mod legacy_tasks;
pub mod meta;
pub mod methods;
pub mod mrtr;
pub mod oauth;
pub mod peer_json;
pub mod prompts;
pub mod resources;
pub mod routing;
pub mod tasks;
pub mod tools;
pub mod version;
#[cfg(any(feature = "server", feature = "client"))]
pub mod webhook_signature;

pub use content::{Content, ResourceContents};
pub use jsonrpc::{ErrorCode, Message, RequestId, RpcError};
pub use meta::{ClientCapabilities, Implementation};
pub use version::{Era, LATEST_PROTOCOL_VERSION};
