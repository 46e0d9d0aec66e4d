//! [`Client`]: a connection to one server, as the application uses it;
//! [`CallOutcome`], what a tool call comes to. What a request carries in
//! each era is the era seam's ([`super::era`]); the handles it returns are
//! built by their own modules ([`super::task`], [`super::notifications`]).

use super::era::{Dialect, ToolCall};
use super::error::ClientError;
use super::notifications::ListenStream;
use super::outcome::ToolOutcome;
use super::server_info::ServerInfo;
use super::task::TaskHandle;
use super::tracker::{FollowSettings, Tracker};
use crate::protocol::tools::{CallToolResult, ToolInfo};
use serde_json::{Map, Value};
use std::fmt;
use std::sync::Arc;

/// The result of `tools/call` once MRTR rounds are answered: the tool's
/// result, or a task to follow.
#[derive(Debug)]
#[non_exhaustive]
pub enum CallOutcome {
    /// The tool finished inline (its `isError` may be set).
    Complete(CallToolResult),
    /// The server made the call a task.
    Task(TaskHandle),
}

/// What every clone of a client shares.
struct Shared {
    server: ServerInfo,
    era: Arc<dyn Dialect>,
    tracker: Arc<Tracker>,
}

/// A connection to one MCP server (cheap to clone; clones share the connection,
/// the tool cache and the one listen stream).
///
/// Made by [`ClientBuilder`](super::ClientBuilder). Every request carries its
/// own `_meta` (modern era) with the capabilities of the [`InputHandler`](super::InputHandler)
/// and the Tasks extension.
#[derive(Clone)]
pub struct Client {
    shared: Arc<Shared>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client").field("server", &self.shared.server).finish_non_exhaustive()
    }
}

impl Client {
    /// A client speaking `era` to the server described by `server`.
    pub(crate) fn new(server: ServerInfo, era: Arc<dyn Dialect>, follow: FollowSettings) -> Self {
        let tracker = Arc::new(Tracker::new(era.clone(), follow));
        Self { shared: Arc::new(Shared { server, era, tracker }) }
    }

    /// What the server said about itself when connecting.
    pub fn server(&self) -> &ServerInfo {
        &self.shared.server
    }

    /// Sends any request (with `_meta` and the routing headers filled in) and returns its result.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, ClientError> {
        let params = match params {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        self.shared.era.request(method, params).await
    }

    /// `tools/list`, every page; tools with invalid `x-mcp-header`
    /// annotations are left out (and refused by [`Client::call_tool`]).
    pub async fn list_tools(&self) -> Result<Vec<ToolInfo>, ClientError> {
        self.shared.era.list_tools().await
    }

    /// `tools/call`: answers MRTR `input_required` rounds through the
    /// [`InputHandler`](super::InputHandler) (each key once) and returns the
    /// tool's result or the task the server made of it.
    pub async fn call_tool(&self, name: &str, args: Value) -> Result<CallOutcome, ClientError> {
        Ok(match self.shared.era.call_tool(name, args).await? {
            ToolCall::Complete(r) => CallOutcome::Complete(r),
            ToolCall::Task(t) => CallOutcome::Task(TaskHandle::new(self.shared.tracker.clone(), t)),
        })
    }

    /// Calls a tool and drives everything to the end: MRTR rounds, the task
    /// and its `input_required` phases. Failed and cancelled tasks are values.
    pub async fn call_tool_to_end(&self, name: &str, args: Value) -> Result<ToolOutcome, ClientError> {
        match self.call_tool(name, args).await? {
            CallOutcome::Complete(r) => Ok(ToolOutcome::Completed(r)),
            CallOutcome::Task(t) => t.wait().await,
        }
    }

    /// A handle on a task known only by its id (resume after a restart).
    pub fn task(&self, task_id: impl Into<String>) -> TaskHandle {
        TaskHandle::resumed(self.shared.tracker.clone(), task_id.into())
    }

    /// Opens `subscriptions/listen` with `notifications` as its filter (for
    /// example `{"taskIds": [...]}`) and returns the stream unread: the
    /// server's acknowledgment is its first message (a refusal, its
    /// [`ListenEvent::Closed`](super::ListenEvent::Closed) with the error).
    pub async fn listen(&self, notifications: Value) -> Result<ListenStream, ClientError> {
        ListenStream::open(self.shared.era.as_ref(), notifications).await
    }

    /// How many `subscriptions/listen` requests this client has opened so far
    /// to follow tasks (one per change of the followed set, not one per task;
    /// streams opened with [`Client::listen`] are not counted).
    pub fn listen_streams_opened(&self) -> u64 {
        self.shared.tracker.hub().streams_opened()
    }

    /// How many messages this client has sent so far: HTTP requests (each
    /// POST, and the legacy event stream's GETs), or lines written to a stdio
    /// server. With push, following a task costs no request while it runs;
    /// polling costs one `tasks/get` per interval.
    pub fn requests_sent(&self) -> u64 {
        self.shared.era.connection().sent()
    }
}
