//! # conduit-mcp
//!
//! A library for building MCP servers (protocol revision `2026-07-28`) whose
//! tools can run for minutes or hours.
//!
//! A server is a set of tools, prompts and resources, built once and served
//! over Streamable HTTP (an axum `Router`) or stdio. Every request carries its
//! own `_meta` (version, capabilities); there is no session.
//!
//! ```
//! use conduit_mcp::prelude::*;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let server = Server::builder("hello", "1.0.0")
//!     .tool(
//!         Tool::new("greet", "Greets someone")
//!             .param("name", Param::string("Who to greet").required())
//!             .handle(|_ctx, args| async move {
//!                 let name = args["name"].as_str().unwrap_or("world").to_owned();
//!                 Ok(CallToolResult::text(format!("Hello, {name}!")))
//!             }),
//!     )
//!     .build()
//!     .expect("a valid server");
//!
//! // Serve it: `http::router(server, HttpConfig::default())` inside your axum
//! // app, or `stdio::serve(server)` for a child-process server.
//! # let _ = server;
//! # }
//! ```
//!
//! - [`protocol`]: the wire vocabulary, for both sides (no I/O; the only part
//!   built with `--no-default-features`).
//! - [`tool`]: the three ways to define a tool (trait, closure, typed struct),
//!   and what a tool's task is to the server.
//! - [`mrtr`]: ask the client for input inside a result.
//! - [`transport::http`] and [`transport::stdio`]: serving.
//! - [`auth`]: bearer tokens, API keys and JWTs; every request gets a [`auth::Principal`].
//! - [`ext::tasks`]: the Tasks extension (long-running tool calls).
//! - [`server::Extension`]: the seam extensions (such as Tasks) plug into.
//!
//! Features: `server` (the server core and stdio) and `http` (Streamable HTTP
//! on axum) are on by default; `jwt` adds JWT authentication; `testing` the
//! public `TaskStore` contract suite; `client` the client ([`client`]).

#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub, rust_2018_idioms, missing_debug_implementations)]

pub mod protocol;

#[cfg(feature = "server")]
pub mod auth;
#[cfg(feature = "server")]
pub mod bounds;
#[cfg(feature = "client")]
pub mod client;
#[cfg(feature = "server")]
pub mod clock;
#[cfg(feature = "server")]
mod ctx;
#[cfg(feature = "server")]
pub mod ext;
#[cfg(feature = "server")]
mod log_limit;
#[cfg(feature = "server")]
pub(crate) mod metrics;
#[cfg(feature = "server")]
pub mod mrtr;
#[cfg(feature = "server")]
pub mod prompt;
#[cfg(feature = "server")]
pub mod quota;
#[cfg(feature = "server")]
pub mod resource;
#[cfg(feature = "server")]
pub mod server;
#[cfg(feature = "server")]
pub mod session;
#[cfg(feature = "server")]
pub mod subscriptions;
#[cfg(feature = "testing")]
pub mod testing;
#[cfg(feature = "server")]
pub mod tool;
#[cfg(feature = "server")]
pub mod transport;

#[cfg(feature = "server")]
pub use ctx::Ctx;
#[cfg(feature = "server")]
pub use server::{Server, ServerBuilder};

/// A result whose error is a JSON-RPC error object.
pub type Result<T, E = protocol::RpcError> = std::result::Result<T, E>;

/// The names most servers need.
#[cfg(feature = "server")]
pub mod prelude {
    pub use crate::Ctx;
    pub use crate::auth::Principal;
    pub use crate::ext::tasks::{LegacyTasks, Tasks, TasksConfig};
    pub use crate::mrtr::{self, InputRequired};
    pub use crate::prompt::{Prompt, PromptOutput};
    pub use crate::protocol::content::{Content, ResourceContents};
    pub use crate::protocol::prompts::{GetPromptResult, PromptMessage};
    pub use crate::protocol::tools::{CallToolResult, ToolInfo};
    pub use crate::protocol::{ErrorCode, RpcError};
    pub use crate::resource::{Resource, ResourceOutput, ResourceTemplate};
    pub use crate::server::{Server, ServerBuilder};
    pub use crate::session::SessionConfig;
    pub use crate::tool::{
        Param, TaskContext, TaskSpec, TaskSupport, Tool, ToolHandler, ToolOutput, TypedTool, WorkerError,
    };
    #[cfg(feature = "http")]
    pub use crate::transport::http::{self, HttpConfig};
    pub use crate::transport::stdio;
}

/// The README's example compiles (it is tested as a doc test).
#[cfg(all(doctest, feature = "http"))]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;

/// The client guide's examples compile (tested as doc tests).
#[cfg(all(doctest, feature = "client"))]
#[doc = include_str!("../../../docs/client.md")]
struct ClientGuideDoctests;
