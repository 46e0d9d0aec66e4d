//! What a tool returns to run as a task, and the tool's task policy.

use super::context::TaskContext;
use super::transaction::TransactionHook;
use crate::protocol::RpcError;
use crate::protocol::tools::CallToolResult;
use futures_util::future::BoxFuture;
use serde_json::Value;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// Server-side policy: may this tool's work be a task?
///
/// The server decides from it, from what the request asked for and from the
/// era whether a call becomes a task, runs inline, or is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum TaskSupport {
    /// Never a task: `spawn`ed work runs inline and the call answers with its result.
    Forbidden,
    /// A task when the request asked for one; otherwise `spawn`ed work runs inline.
    #[default]
    Optional,
    /// Only as a task: a request that did not ask for one gets `-32021`.
    Required,
}

/// Called with the task id once the task is stored: start the work there and return quickly.
pub type TaskStart = Box<dyn FnOnce(String) + Send + 'static>;

/// The future a task's work is.
pub type WorkFuture = BoxFuture<'static, Result<CallToolResult, RpcError>>;

/// Work registered by name (see [`TaskSpec::spawn_resumable`]): any node can
/// start it again from its arguments.
pub type ResumableFn = Arc<dyn Fn(TaskContext, Value) -> WorkFuture + Send + Sync>;

/// Work the server runs itself: `Ok(result)` completes the task, `Err` fails it.
pub struct SpawnedWork(Box<dyn FnOnce(TaskContext) -> WorkFuture + Send>);

impl SpawnedWork {
    /// Wraps a closure.
    pub fn new<F, Fut>(work: F) -> Self
    where
        F: FnOnce(TaskContext) -> Fut + Send + 'static,
        Fut: Future<Output = Result<CallToolResult, RpcError>> + Send + 'static,
    {
        Self(Box::new(move |ctx| Box::pin(work(ctx))))
    }

    /// Starts the work with its context.
    pub fn run(self, ctx: TaskContext) -> WorkFuture {
        (self.0)(ctx)
    }
}

impl fmt::Debug for SpawnedWork {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SpawnedWork(..)")
    }
}

/// Where a task's work comes from.
#[non_exhaustive]
pub enum TaskWork {
    /// Your function, called with the task id once it is stored; the work
    /// happens elsewhere and reports through the `Tasks` handle. The server
    /// cannot run this inline.
    Start(TaskStart),
    /// A future the server runs (as the task's work, or inline when no task is made).
    Spawn(SpawnedWork),
    /// A hook run in the transaction that writes the task (see
    /// [`TaskSpec::start_in_transaction`]); the work happens elsewhere, as
    /// with [`Start`](Self::Start).
    Transactional(Arc<dyn TransactionHook>),
    /// Work registered with the `Tasks` handle under `name`, run with `args`.
    Resumable {
        /// The registered name.
        name: String,
        /// Its arguments (stored with the task, so another node can restart it).
        args: Value,
    },
}

impl fmt::Debug for TaskWork {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Start(_) => f.write_str("Start(..)"),
            Self::Spawn(_) => f.write_str("Spawn(..)"),
            Self::Transactional(_) => f.write_str("Transactional(..)"),
            Self::Resumable { name, .. } => f.debug_struct("Resumable").field("name", name).finish_non_exhaustive(),
        }
    }
}

/// What a tool returns to run as a task.
///
/// Every field is optional: `ttl` defaults to the extension's default, `None`
/// inside means unlimited.
#[derive(Debug, Default)]
#[non_exhaustive]
#[must_use]
pub struct TaskSpec {
    /// Lifetime from creation: `None` = the default, `Some(None)` = unlimited.
    pub ttl: Option<Option<Duration>>,
    /// Suggested polling interval (must be positive).
    pub poll_interval: Option<Duration>,
    /// Initial status message.
    pub status_message: Option<String>,
    /// Where the work comes from (`None`: a worker finishes it by id).
    pub work: Option<TaskWork>,
    /// The tool already answered: the task is stored completed with this result.
    pub(crate) finished: Option<CallToolResult>,
}

impl TaskSpec {
    /// A task with default attributes.
    pub fn new() -> Self {
        Self::default()
    }

    /// A task that is already `completed` with `result` (a tool that answered at once
    /// to a 2025-11-25 request that asked for a task).
    pub(crate) fn finished(result: CallToolResult) -> Self {
        Self { finished: Some(result), ..Self::default() }
    }

    /// Sets the lifetime from creation.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(Some(ttl));
        self
    }

    /// Makes the lifetime unlimited (the janitor still evicts it once terminal and old).
    pub fn unlimited_ttl(mut self) -> Self {
        self.ttl = Some(None);
        self
    }

    /// Sets the suggested polling interval.
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = Some(interval);
        self
    }

    /// Sets the initial status message.
    pub fn status_message(mut self, message: impl Into<String>) -> Self {
        self.status_message = Some(message.into());
        self
    }

    /// Sets the function called with the task id once the task is stored.
    pub fn start(mut self, f: impl FnOnce(String) + Send + 'static) -> Self {
        self.work = Some(TaskWork::Start(Box::new(f)));
        self
    }

    /// Runs `hook` inside the database transaction that writes the task: the
    /// hook adds the rows that make the work happen elsewhere (a job in a
    /// queue in the same database, an outbox entry), and they commit with the
    /// task or not at all. A crash between the two writes cannot leave a
    /// task nobody will run.
    ///
    /// The task store must support transactions (the SQL stores of
    /// `conduit-mcp-sql`; the memory store refuses). A hook that fails, or a
    /// store that refuses, answers the call with `-32603` and no task exists.
    /// Like [`start`](Self::start), the work cannot run inline: a call that
    /// does not become a task is refused. See `docs/jobs.md`.
    pub fn start_in_transaction(mut self, hook: Arc<dyn TransactionHook>) -> Self {
        self.work = Some(TaskWork::Transactional(hook));
        self
    }

    /// Runs `work` as the task's work, supervised and shut down with the
    /// server: `Ok(result)` → `completed`, `Err(error)` → `failed`, a panic →
    /// `failed` with `-32603`. When the call does not become a task (the
    /// request did not ask for one, or the tool is [`TaskSupport::Forbidden`]),
    /// the server runs the same work inline and answers with its result.
    pub fn spawn<F, Fut>(mut self, work: F) -> Self
    where
        F: FnOnce(TaskContext) -> Fut + Send + 'static,
        Fut: Future<Output = Result<CallToolResult, RpcError>> + Send + 'static,
    {
        self.work = Some(TaskWork::Spawn(SpawnedWork::new(work)));
        self
    }

    /// Runs the work registered as `name` with `Tasks::resumable`, with
    /// `args`. If the node running it dies, a live node starts it again from
    /// the start with the same arguments: the work runs at least once, so make
    /// it idempotent.
    pub fn spawn_resumable(mut self, name: &str, args: Value) -> Self {
        self.work = Some(TaskWork::Resumable { name: name.to_owned(), args });
        self
    }
}
