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

mod builder;
#[allow(clippy::module_inception)]
mod client;
mod credential;
mod error;
mod follow;
mod http;
pub(crate) mod http_options;
mod input;
mod legacy;
mod listen;
mod notifications;
pub mod oauth;
pub mod sanitize;
mod sse;
mod stdio;
mod task;
mod time;
mod wire;

pub use builder::ClientBuilder;
pub use client::{CallOutcome, Client, NotificationFn, ServerInfo};
pub use error::ClientError;
pub use input::{
    Ask, InputHandler, InputSupport, NoInput, elicit_accept, elicit_cancel, elicit_decline, schema_defaults,
};
pub use notifications::{ListenEvent, ListenStream};
pub use task::{TaskEvent, TaskEvents, TaskHandle, ToolOutcome};

impl Client {
    /// How many `subscriptions/listen` requests this client has opened so far
    /// to follow tasks (one per change of the followed set, not one per task;
    /// streams opened with [`Client::listen`] are not counted).
    pub fn listen_streams_opened(&self) -> u64 {
        self.inner.hub.streams_opened()
    }

    /// How many messages this client has sent so far: HTTP requests (each
    /// POST, and the legacy event stream's GETs), or lines written to a stdio
    /// server. With push, following a task costs no request while it runs;
    /// polling costs one `tasks/get` per interval.
    pub fn requests_sent(&self) -> u64 {
        self.inner.wire.sent()
    }
}
