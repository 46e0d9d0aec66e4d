//! # conduit-mcp
//!
//! An [MCP](https://modelcontextprotocol.io) (Model Context Protocol) server and client for tools
//! that run for minutes or hours.
//!
//! A server is a set of tools, prompts and resources, built once and served over Streamable HTTP
//! (an axum `Router`, or the library's own accept loop with HTTPS) or stdio. One endpoint serves
//! both protocol eras: revision `2026-07-28`, where every request carries its own `_meta` and
//! there is no session, and `2025-11-25`, which most clients still speak (`initialize`, sessions
//! with `Mcp-Session-Id`, SSE replay, requests from the server to the client). A slow tool answers
//! with a **task** (the `io.modelcontextprotocol/tasks` extension, and that era's own tasks on
//! `2025-11-25`): the client polls, answers questions the task asks, cancels it, or listens for
//! its changes; the task belongs to the principal that made it and expires. The [`client`]
//! (feature `client`) drives any tool call of either era to its end.
//!
//! ```
//! use conduit_mcp::prelude::*;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let tasks = Tasks::new(TasksConfig::enabled()).expect("a valid configuration");
//! let server = Server::builder("hello", "1.0.0")
//!     .extension(tasks.clone()) // tasks for clients of both eras
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
//! // app, `http::bind(addr).await?.serve(..)` on its own, or `stdio::serve(server)`
//! // as a child process.
//! # let _ = server;
//! # }
//! ```
//!
//! ## Modules
//!
//! | Module | What it holds |
//! |---|---|
//! | [`prelude`] | the names most servers need, in one `use` |
//! | [`protocol`] | the wire vocabulary of both eras, for both sides (serde only, no I/O; the one part built with `--no-default-features`) |
//! | [`server`] | [`Server`] and its builder; the [`server::Extension`] seam extensions plug into |
//! | [`tool`], [`prompt`], [`resource`] | what a server offers: tools (a trait, a closure builder, a typed `schemars` struct); prompts; resources and templates |
//! | [`task`] | what a tool author describes and drives a task with: [`task::TaskSpec`], [`task::TaskContext`], their errors, and transaction hooks |
//! | [`mrtr`] | asking the client for input inside a result (elicitation, sampling, roots) |
//! | [`ext::tasks`] | the Tasks extension: its stores, the runtime ([`ext::tasks::Tasks`], the handle workers drive tasks with, its configuration and janitor) and its wire |
//! | [`session`] | the `2025-11-25` era's sessions: their store, replay buffers, what a session may hold |
//! | [`transport::http`], [`transport::stdio`] | serving: Streamable HTTP (router, accept loop, limits, HTTPS) and newline-delimited JSON-RPC |
//! | [`auth`] | who is asking: bearer tokens, API keys, JWTs, an OAuth 2.1 resource server; an [`auth::Principal`] on every request |
//! | [`quota`], [`bounds`] | what one client may hold or do (counts, bytes, rates), and how much of a client's text is kept |
//! | [`subscriptions`] | `subscriptions/listen` streams and the [`subscriptions::Changes`] handle that announces list and resource changes |
//! | [`config_file`], [`config`] | a server's TOML configuration file, read once into each part's configuration; [`config::ConfigError`] |
//! | [`clock`] | the time the server reads ([`clock::ManualClock`] for tests) |
//! | [`client`] | the client: connect to either era, call tools, follow tasks, log in with OAuth 2.1 |
//! | [`testing`] | the contract suites any task, session or webhook store can prove itself with |
//!
//! ## Features
//!
//! | Feature | Default | What it adds |
//! |---|---|---|
//! | `server` | yes | the server core, stdio, the Tasks extension, sessions, auth, limits |
//! | `http` | yes | Streamable HTTP on axum and hyper ([`transport::http`]) |
//! | `tls` | | HTTPS for the library's accept loop (rustls with ring, reloadable certificates) |
//! | `jwt` | | JWT authentication (HS256, RS256, ES256) |
//! | `oauth` | | an OAuth 2.1 resource server: Protected Resource Metadata, JWKS, introspection, scope challenges (needs `http`, `jwt`) |
//! | `metrics` | | counters and histograms through the `metrics` facade (install any recorder) |
//! | `client` | | the [`client`], over HTTP, HTTPS and stdio, with OAuth 2.1 login |
//! | `testing` | | the public contract suites ([`testing`]) |
//!
//! Durable stores (SQLite, PostgreSQL, many nodes on one database) are the `conduit-mcp-sql`
//! crate; the reference server and a command-line client are `conduit-mcp-cli`. How the pieces
//! fit and which part owns which decision: [`architecture`].
//!
//! ## Guides
//!
//! Each guide opens the module it explains, its examples compiled as doc tests: tasks
//! ([`ext::tasks`]), the two protocol eras on one endpoint ([`session`]), the client
//! ([`client`]), authentication and HTTPS ([`auth`]), and the [`architecture`]. The stores and
//! job queues are `conduit-mcp-sql`'s.

#![forbid(unsafe_code)]
// docs.rs builds with `--cfg docsrs`: every item shows the features it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs, unreachable_pub, rust_2018_idioms, missing_debug_implementations)]

pub mod protocol;

/// How the crates fit together and which part owns which decision (`docs/architecture.md`).
pub mod architecture {
    #![doc = include_str!("../guides/architecture.md")]
}

#[cfg(feature = "server")]
pub mod auth;
#[cfg(feature = "server")]
pub mod bounds;
#[cfg(feature = "client")]
pub mod client;
#[cfg(feature = "server")]
pub mod clock;
#[cfg(feature = "server")]
pub mod config;
#[cfg(feature = "server")]
pub mod config_file;
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
mod seq_log;
#[cfg(feature = "server")]
pub mod server;
#[cfg(feature = "server")]
pub mod session;
#[cfg(feature = "server")]
pub mod subscriptions;
#[cfg(feature = "server")]
pub mod task;
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
    pub use crate::task::{TaskContext, TaskSpec, TaskSupport, WorkerError};
    pub use crate::tool::{Param, Tool, ToolHandler, ToolOutput, TypedTool};
    #[cfg(feature = "http")]
    pub use crate::transport::http::{self, HttpConfig};
    pub use crate::transport::stdio;
}

/// The workspace README's example compiles (it is tested as a doc test; not shipped in the package).
#[cfg(all(doctest, feature = "http"))]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;

/// The crate README's example (the crates.io page) compiles.
#[cfg(all(doctest, feature = "http"))]
#[doc = include_str!("../README.md")]
struct CrateReadmeDoctests;
