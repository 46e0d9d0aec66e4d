//! `TasksConfig`: enabling the extension and its options (from code; the
//! `[ext_tasks]` TOML value is read in `config_toml`).

use super::notifier::Notifier;
use crate::config::ConfigError;
use crate::ext::tasks::store::{CreateCaps, TaskStore, TerminalBound, limits};
use crate::quota::RateLimit;
use std::sync::Arc;
use std::time::Duration;

/// The janitor's schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum JanitorConfig {
    /// No sweeping.
    Disabled,
    /// Sweep every `interval`; unlimited-TTL tasks go once terminal and older than `ttl`.
    Every {
        /// Time between sweeps (default 60 s).
        interval: Duration,
        /// Age after which a terminal unlimited-TTL task is evicted (default 1 h).
        ttl: Duration,
    },
}

impl Default for JanitorConfig {
    fn default() -> Self {
        Self::Every { interval: Duration::from_secs(60), ttl: Duration::from_secs(3600) }
    }
}

/// Which notifier the extension calls after every store write.
#[derive(Clone, Default)]
#[non_exhaustive]
pub enum NotifierConfig {
    /// `ListenNotifier`: `notifications/tasks` on listen streams (the default).
    #[default]
    Listen,
    /// No notifications.
    None,
    /// Your own notifier.
    Custom(Arc<dyn Notifier>),
}

impl std::fmt::Debug for NotifierConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Listen => "Listen",
            Self::None => "None",
            Self::Custom(_) => "Custom",
        })
    }
}

/// The Tasks extension's configuration. Off unless enabled.
#[derive(Clone)]
#[non_exhaustive]
#[must_use]
pub struct TasksConfig {
    /// Whether the extension is on.
    pub enabled: bool,
    /// The store (default: a `MemoryStore`).
    pub store: Option<Arc<dyn TaskStore>>,
    /// The janitor.
    pub janitor: JanitorConfig,
    /// Row cap passed to `create` (default 10 000; `None` = unlimited).
    pub max_rows: Option<usize>,
    /// Per-principal cap: at most this many tasks of one authenticated
    /// principal (`None`, the default: a quarter of `max_rows`, so one
    /// principal cannot take every slot; no cap when `max_rows` is `None`).
    /// Tasks created without authentication are under the row cap only.
    /// It counts live tasks: terminal ones are bounded by
    /// [`max_terminal_bytes_per_principal`](Self::max_terminal_bytes_per_principal).
    pub max_rows_per_principal: Option<usize>,
    /// What one principal's terminal tasks may hold, as their records' JSON
    /// (default 4 MiB; `None`: no byte bound). Each time one of its tasks
    /// ends, its oldest terminal tasks go early (before their TTL) until it
    /// keeps at most this many bytes and at most `max_rows_per_principal`
    /// of them; its newest terminal task always stays.
    pub max_terminal_bytes_per_principal: Option<usize>,
    /// The notifier.
    pub notifier: NotifierConfig,
    /// Default task lifetime (1 hour).
    pub default_ttl: Duration,
    /// This node's id, recorded on the tasks whose `spawn`ed work it runs
    /// (default: random per process). Give a restarted node its old id to
    /// recover its tasks at once instead of after their leases lapse.
    pub node_id: String,
    /// How long a node's claim on its running work lasts without renewal
    /// (default 30 s). Renewed every third of it; lapsed claims are recovered
    /// by any live node's janitor.
    pub lease: Duration,
    /// How many tasks one client (its principal; without authentication its
    /// address, or the stdio process) may create, per node (default `None`:
    /// no rate). A create past it gets `-32000` with `data.retryAfterMs`
    /// (HTTP 429 with `Retry-After`); nothing is stored or started. The
    /// counts live in the [`Tasks`](crate::ext::tasks::Tasks) handle, shared with its
    /// legacy twin.
    pub create_rate: Option<RateLimit>,
    /// Run in the transaction that stores an answer to a task's input
    /// request (`tasks/update`, or the 2025-11-25 era's answered
    /// elicitation): a queue re-enqueues the job that asked, and the job and
    /// the answer commit together. It sees the task as written — `working`
    /// once every outstanding request is answered, still `input_required`
    /// after a partial answer. Needs a store with transactions (see
    /// [`TransactionHook`](crate::task::TransactionHook)); `None` (the
    /// default) stores answers without one.
    pub answer_hook: Option<Arc<dyn crate::task::TransactionHook>>,
}

impl TasksConfig {
    /// The caps a create must fit under: the row cap and the per-principal cap
    /// (see [`max_rows_per_principal`](Self::max_rows_per_principal)).
    pub fn create_caps(&self) -> CreateCaps {
        let per_principal = self.max_rows_per_principal.or(self.max_rows.map(|n| (n / 4).max(1)));
        CreateCaps::new(self.max_rows, per_principal)
    }

    /// What one principal's terminal tasks may hold: as many as its live
    /// cap, within [`max_terminal_bytes_per_principal`](Self::max_terminal_bytes_per_principal).
    pub fn terminal_bound(&self) -> TerminalBound {
        TerminalBound::new(self.create_caps().max_rows_per_owner, self.max_terminal_bytes_per_principal)
    }

    /// The byte budget next to the row cap: the most bytes of client-supplied
    /// data the store holds, `max_rows` × [`MAX_CLIENT_BYTES_PER_TASK`]
    /// (`None` without a row cap). Each task's share is bounded by the
    /// limits in [`limits`]; a tool's own results come on top.
    ///
    /// [`MAX_CLIENT_BYTES_PER_TASK`]: limits::MAX_CLIENT_BYTES_PER_TASK
    pub fn byte_budget(&self) -> Option<usize> {
        self.max_rows.map(|n| n.saturating_mul(limits::MAX_CLIENT_BYTES_PER_TASK))
    }
}

impl std::fmt::Debug for TasksConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TasksConfig")
            .field("enabled", &self.enabled)
            .field("store", &self.store.as_ref().map(|s| s.name()))
            .field("janitor", &self.janitor)
            .field("max_rows", &self.max_rows)
            .field("max_rows_per_principal", &self.max_rows_per_principal)
            .field("max_terminal_bytes_per_principal", &self.max_terminal_bytes_per_principal)
            .field("notifier", &self.notifier)
            .field("node_id", &self.node_id)
            .field("lease", &self.lease)
            .field("create_rate", &self.create_rate)
            .field("answer_hook", &self.answer_hook.is_some())
            .finish()
    }
}

impl Default for TasksConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            store: None,
            janitor: JanitorConfig::default(),
            max_rows: Some(10_000),
            max_rows_per_principal: None,
            max_terminal_bytes_per_principal: Some(limits::DEFAULT_MAX_TERMINAL_BYTES_PER_PRINCIPAL),
            notifier: NotifierConfig::Listen,
            default_ttl: Duration::from_secs(3600),
            node_id: format!("node-{:016x}", rand::random::<u64>()),
            lease: Duration::from_secs(30),
            create_rate: None,
            answer_hook: None,
        }
    }
}

fn err(key: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::new("ext_tasks", key, reason)
}

impl TasksConfig {
    /// The extension on, with defaults.
    pub fn enabled() -> Self {
        Self { enabled: true, ..Self::default() }
    }

    /// The extension off.
    pub fn disabled() -> Self {
        Self::default()
    }

    /// Sets the store.
    pub fn store(mut self, store: Arc<dyn TaskStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Sets the janitor.
    pub fn janitor(mut self, janitor: JanitorConfig) -> Self {
        self.janitor = janitor;
        self
    }

    /// Sets the row cap (`None` = unlimited).
    pub fn max_rows(mut self, max_rows: Option<usize>) -> Self {
        self.max_rows = max_rows;
        self
    }

    /// Sets the per-principal cap (`None`: a quarter of the row cap).
    pub fn max_rows_per_principal(mut self, max: Option<usize>) -> Self {
        self.max_rows_per_principal = max;
        self
    }

    /// Sets the byte bound on one principal's terminal tasks (`None`: none).
    pub fn max_terminal_bytes_per_principal(mut self, max: Option<usize>) -> Self {
        self.max_terminal_bytes_per_principal = max;
        self
    }

    /// Sets the notifier.
    pub fn notifier(mut self, notifier: NotifierConfig) -> Self {
        self.notifier = notifier;
        self
    }

    /// Sets this node's id.
    pub fn node_id(mut self, id: impl Into<String>) -> Self {
        self.node_id = id.into();
        self
    }

    /// Sets the hook run in the transaction that stores an input answer
    /// (see [`answer_hook`](Self::answer_hook)).
    pub fn answer_hook(mut self, hook: Arc<dyn crate::task::TransactionHook>) -> Self {
        self.answer_hook = Some(hook);
        self
    }

    /// Sets the lease period of running work.
    pub fn lease(mut self, period: Duration) -> Self {
        self.lease = period;
        self
    }

    /// Sets the task-creation rate per client (see [`create_rate`](Self::create_rate)).
    pub fn create_rate(mut self, rate: Option<RateLimit>) -> Self {
        self.create_rate = rate;
        self
    }

    /// Sets the default task lifetime.
    pub fn default_ttl(mut self, ttl: Duration) -> Self {
        self.default_ttl = ttl;
        self
    }

    /// Checks the values.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.max_rows == Some(0) {
            return Err(err("max_rows", "must be a positive integer or \"unlimited\""));
        }
        if let JanitorConfig::Every { interval, .. } = self.janitor
            && interval.is_zero()
        {
            return Err(err("janitor.interval", "must be positive"));
        }
        if self.default_ttl.is_zero() {
            return Err(err("default_ttl", "must be positive"));
        }
        if self.lease < Duration::from_millis(30) {
            return Err(err("lease", "must be at least 30 ms"));
        }
        if self.node_id.is_empty() {
            return Err(err("node_id", "must not be empty"));
        }
        Ok(())
    }
}
