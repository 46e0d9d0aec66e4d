use std::fmt;
use std::time::Duration;

/// Server-side policy: may this tool's work be a task?
///
/// There is no wire field for this in `2026-07-28`; it only decides what the
/// server answers a request that did not declare the Tasks extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum TaskSupport {
    /// The tool never returns a task.
    Forbidden,
    /// The tool returns a task when the request declared the extension, and
    /// answers synchronously otherwise (check `Ctx::tasks_declared`).
    #[default]
    Optional,
    /// The tool can only run as a task: a request without the extension gets `-32021`.
    Required,
}

/// Called with the task id once the task is stored: start the work there and return quickly.
pub type TaskStart = Box<dyn FnOnce(String) + Send + 'static>;

/// What a tool returns to run as a task.
///
/// Every field is optional: `ttl` defaults to one hour, `None` inside means
/// unlimited.
#[derive(Default)]
#[non_exhaustive]
pub struct TaskSpec {
    /// Lifetime from creation: `None` = the default (1 hour), `Some(None)` = unlimited.
    pub ttl: Option<Option<Duration>>,
    /// Suggested polling interval (must be positive).
    pub poll_interval: Option<Duration>,
    /// Initial status message.
    pub status_message: Option<String>,
    /// Where the work begins.
    pub start: Option<TaskStart>,
    /// Work the server runs itself (see the Tasks extension's `spawn`).
    pub spawn: Option<Box<dyn std::any::Any + Send>>,
}

impl fmt::Debug for TaskSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskSpec")
            .field("ttl", &self.ttl)
            .field("poll_interval", &self.poll_interval)
            .field("status_message", &self.status_message)
            .field("start", &self.start.is_some())
            .field("spawn", &self.spawn.is_some())
            .finish()
    }
}

impl TaskSpec {
    /// A task with default attributes.
    pub fn new() -> Self {
        Self::default()
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
        self.start = Some(Box::new(f));
        self
    }
}
