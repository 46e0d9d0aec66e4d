//! What every table of a server's TOML configuration shares: the one
//! [`ConfigError`], the shapes a value may take, and the reading of a
//! document. The document itself, one optional table per part, is
//! [`ConfigFile`](crate::config_file::ConfigFile); each table's struct lives
//! beside the configuration it validates into (`session/config_toml.rs`,
//! `transport/http/config_toml.rs`, `auth/oauth/config_toml.rs`,
//! `ext/tasks/runtime/config_toml.rs`).
//!
//! A table's keys are its struct's fields (`#[serde(deny_unknown_fields)]`),
//! so the message for an unknown key lists the allowed ones from the struct.

mod error;
pub(crate) mod read;
pub(crate) mod shape;

pub use error::{ConfigError, TOML_SYNTAX};
