//! [`Client`]: a connection to one server, as the application uses it;
//! [`CallOutcome`], what a tool call comes to. What a request carries in
//! each era is the era seam's ([`super::era`]); the handles it returns are
//! built by their own modules ([`super::task`], [`super::notifications`]).

use super::era::{Dialect, ToolCall};
use super::error::ClientError;
use super::ledger::{TaskLedger, principal};
use super::notifications::ListenStream;
use super::outcome::ToolOutcome;
use super::recorder::Recorder;
use super::resume::{self, Unfinished};
use super::server_info::ServerInfo;
use super::task::TaskHandle;
use super::tracker::{FollowSettings, Tracker};
use crate::protocol::Era;
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
    /// A client speaking `era` to the server described by `server`, its
    /// tasks written down by `recorder` (if any).
    pub(crate) fn new(
        server: ServerInfo,
        era: Arc<dyn Dialect>,
        follow: FollowSettings,
        recorder: Option<Recorder>,
    ) -> Self {
        let offers_events = server.offers_events();
        let tracker = Arc::new(Tracker::new(era.clone(), follow, recorder, offers_events));
        Self { shared: Arc::new(Shared { server, era, tracker }) }
    }

    /// The era spoken (settled when connecting).
    fn spoken(&self) -> Era {
        self.shared.server.era.unwrap_or(Era::Modern)
    }

    /// The era seam this client speaks through.
    pub(crate) fn dialect(&self) -> &dyn Dialect {
        self.shared.era.as_ref()
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
    ///
    /// A task is written to the client's task ledger before its handle is
    /// returned; when that write fails the error is
    /// [`ClientError::Ledger`], naming the task (which runs on).
    pub async fn call_tool(&self, name: &str, args: Value) -> Result<CallOutcome, ClientError> {
        let Some(r) = self.shared.tracker.recorder() else {
            return Ok(match self.shared.era.call_tool(name, args).await? {
                ToolCall::Complete(res) => CallOutcome::Complete(res),
                ToolCall::Task(t) => CallOutcome::Task(TaskHandle::new(self.shared.tracker.clone(), t)),
            });
        };
        // The arguments move into the request; the ledger keeps their digest.
        let version = &self.shared.server.version;
        let digest = super::ledger::args_digest(&args);
        let key = r.calling(version, name, &digest).await?;
        let answer = self.shared.era.call_tool(name, args).await;
        match (&answer, key.as_deref()) {
            (Ok(ToolCall::Task(_)), _) | (_, None) => {}
            // A refusal made no task; a broken call may have.
            (Err(e @ (ClientError::Transport(_) | ClientError::Protocol(_))), Some(k)) => r.answered(k, Some(e)).await,
            (_, Some(k)) => r.answered(k, None).await,
        }
        Ok(match answer? {
            ToolCall::Complete(res) => CallOutcome::Complete(res),
            ToolCall::Task(t) => {
                r.created(key.as_deref(), &t, version, self.spoken(), name, &digest).await?;
                CallOutcome::Task(TaskHandle::new(self.shared.tracker.clone(), t))
            }
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

    /// The unfinished tasks the ledger holds for this server and this
    /// client's principal, oldest first, each read once with `tasks/get`:
    /// [`Unfinished::Resumed`] with a handle that follows it like a fresh one,
    /// or [`Unfinished::Lost`] with the reason (the server does not know it,
    /// it expired, it was made on another era, or it belongs to a
    /// `2025-11-25` session without authentication), which the ledger then
    /// keeps. Nothing is retried or dropped silently. Empty without a ledger.
    pub async fn unfinished(&self) -> Result<Vec<Unfinished>, ClientError> {
        let Some(recorder) = self.shared.tracker.recorder() else { return Ok(Vec::new()) };
        resume::unfinished(&self.shared.tracker, recorder, self.spoken(), &self.shared.server.version).await
    }

    /// The task ledger this client writes to, if any.
    pub fn ledger(&self) -> Option<&Arc<dyn TaskLedger>> {
        self.shared.tracker.recorder().map(Recorder::ledger)
    }

    /// Who this client is at the server, as the ledger names it
    /// ([`principal`](super::ledger::principal)): never the credential itself.
    pub async fn principal(&self) -> Result<String, ClientError> {
        match self.shared.tracker.recorder() {
            Some(r) => r.principal().await,
            None => Ok(principal::ANONYMOUS.to_owned()),
        }
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

    /// How many `events/stream` requests of `task.status_changed` this client
    /// has opened so far to follow tasks the listen push did not take (one
    /// shared by every such task, again only when it broke; streams opened
    /// with [`Client::stream_events`] are not counted).
    pub fn event_streams_opened(&self) -> u64 {
        self.shared.tracker.event_hub().streams_opened()
    }

    /// How many messages this client has sent so far: HTTP requests (each
    /// POST, and the legacy event stream's GETs), or lines written to a stdio
    /// server. With push, following a task costs no request while it runs;
    /// polling costs one `tasks/get` per interval.
    pub fn requests_sent(&self) -> u64 {
        self.shared.era.connection().sent()
    }
}
