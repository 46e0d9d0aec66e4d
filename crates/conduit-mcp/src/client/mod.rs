//! The client (feature `client`): call a tool and get its answer, whatever
//! the server makes of the call.
//!
//! A [`Client`] connects over Streamable HTTP or to a child process over
//! stdio, speaks the modern era (probing with `server/discover`) or the
//! legacy one (`initialize`), and sets every header the server checks from
//! the same rules the server uses ([`protocol::routing`](crate::protocol::routing)).
//!
//! - [`Client::call_tool`] answers MRTR `input_required` rounds and returns a
//!   [`CallOutcome`]: the result, or a [`TaskHandle`].
//! - [`Client::call_tool_to_end`] drives everything to a [`ToolOutcome`]
//!   (completed, failed, cancelled: values, not errors).
//! - [`TaskHandle::follow`] streams [`TaskEvent`]s: by push over one shared
//!   `subscriptions/listen` stream when the server acknowledges the task, by
//!   polling at `pollIntervalMs` (capped back-off) otherwise; it stops at the
//!   `createdAt + ttlMs` deadline and when a task stays `input_required` with
//!   nothing new to answer. Dropping it never cancels the task;
//!   [`TaskHandle::cancel`] does. [`Client::task`] resumes from a bare id.
//! - Every task is written to a [`ledger`] before its handle is returned;
//!   [`Client::unfinished`] resumes the unfinished ones after a restart
//!   (or reports each lost, with the reason).
//! - [`Client::listen`] opens a `subscriptions/listen` stream of the caller's
//!   own and hands over every message on it ([`ListenEvent`]).
//! - One [`InputHandler`] answers elicitation (form and URL), sampling and
//!   roots for MRTR rounds, task input and legacy server requests alike.
//!
//! ```no_run
//! # async fn demo() -> Result<(), conduit_mcp::client::ClientError> {
//! use conduit_mcp::client::{CallOutcome, ClientBuilder, TaskEvent};
//! let client = ClientBuilder::http("http://127.0.0.1:8080/mcp").connect().await?;
//! if let CallOutcome::Task(task) = client.call_tool("build", serde_json::json!({"ref": "main"})).await? {
//!     let mut events = task.follow();
//!     while let Some(ev) = events.next().await {
//!         match ev? {
//!             TaskEvent::Status(t) => println!("{:?} {}", t.status, t.status_message.unwrap_or_default()),
//!             TaskEvent::Finished(outcome) => println!("{outcome:?}"),
//!             _ => {}
//!         }
//!     }
//! }
//! # Ok(()) }
//! ```

//! # How the module is built
//!
//! Imports point one way: the public API ([`Client`], [`ClientBuilder`]) →
//! the handles ([`TaskHandle`] and its follower, [`ListenStream`], the
//! listen hub) → the era seam (one `Dialect` per connection, chosen when
//! connecting: everything `2026-07-28` and `2025-11-25` do differently) →
//! the connection core (the transport, the request ids, the legacy session)
//! → the transports (Streamable HTTP, stdio). See `docs/architecture.md`.
//!
// The guide (docs/client.md), its examples compiled as doc tests.
#![doc = include_str!("../../guides/client.md")]

mod builder;
#[allow(clippy::module_inception)]
mod client;
mod connection;
mod credential;
mod era;
mod error;
mod event_hub;
mod event_stream;
mod events;
mod follow;
mod http;
pub(crate) mod http_options;
mod input;
pub mod ledger;
mod listen_hub;
mod notifications;
pub mod oauth;
mod outcome;
mod recorder;
mod resume;
pub mod sanitize;
mod server_info;
mod sse;
mod stdio;
mod task;
mod time;
mod tracker;
pub mod webhook_receiver;
mod wire;

pub use builder::ClientBuilder;
pub use client::{CallOutcome, Client};
pub use connection::NotificationFn;
pub use error::{ClientError, ProtocolError, TransportError};
pub use event_stream::{EventStream, StreamEvent};
pub use events::{EventQuery, WebhookLease, WebhookSubscription};
pub use follow::TaskEvents;
pub use input::{
    Ask, InputHandler, InputSupport, NoInput, elicit_accept, elicit_cancel, elicit_decline, schema_defaults,
};
pub use notifications::{ListenEvent, ListenStream};
pub use outcome::{TaskEvent, ToolOutcome};
pub use resume::Unfinished;
pub use server_info::ServerInfo;
pub use task::TaskHandle;
