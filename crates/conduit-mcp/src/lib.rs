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
//! // app, or `stdio::serve_stdio(server)` for a child-process server.
//! # let _ = server;
//! # }
//! ```
//!
//! - [`tool`]: the three ways to define a tool (trait, closure, typed struct).
//! - [`mrtr`]: ask the client for input inside a result.
//! - [`transport::http`] and [`transport::stdio`]: serving.
//! - [`auth`]: bearer tokens, API keys and JWTs; every request gets a [`auth::Principal`].
//! - [`ext::tasks`]: the Tasks extension (long-running tool calls).
//! - [`server::Extension`]: the seam extensions (such as Tasks) plug into.

#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub, rust_2018_idioms)]

pub mod auth;
pub mod clock;
pub mod ext;
pub mod mrtr;
pub mod prompt;
pub mod protocol;
pub mod resource;
pub mod server;
pub mod subscriptions;
#[cfg(feature = "testing")]
pub mod testing;
pub mod tool;
pub mod transport;

pub use server::{Ctx, Server, ServerBuilder};

/// The names most servers need.
pub mod prelude {
    pub use crate::auth::Principal;
    pub use crate::ext::tasks::{TaskSpecExt, Tasks, TasksConfig};
    pub use crate::mrtr::{self, InputRequired};
    pub use crate::prompt::{Prompt, PromptOutput};
    pub use crate::protocol::content::{Content, ResourceContents};
    pub use crate::protocol::prompts::{GetPromptResult, PromptMessage};
    pub use crate::protocol::tools::{CallToolResult, ToolInfo};
    pub use crate::protocol::{ErrorCode, RpcError};
    pub use crate::resource::{Resource, ResourceOutput, ResourceTemplate};
    pub use crate::server::{Ctx, Server, ServerBuilder};
    pub use crate::tool::{Param, TaskSpec, TaskSupport, Tool, ToolHandler, ToolOutput, TypedTool};
    pub use crate::transport::http::{self, HttpConfig};
    pub use crate::transport::stdio;
}
