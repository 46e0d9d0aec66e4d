//! `TasksConfig`: enabling the extension and its options, from code or TOML.

use super::config_error::{ConfigError, TOML_SYNTAX};
use super::notifier::Notifier;
use super::store::TaskStore;
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
    /// counts live in the [`Tasks`](super::Tasks) handle, shared with its
    /// legacy twin.
    pub create_rate: Option<RateLimit>,
    /// Run in the transaction that stores an answer to a task's input
    /// request (`tasks/update`, or the 2025-11-25 era's answered
    /// elicitation): a queue re-enqueues the job that asked, and the job and
    /// the answer commit together. It sees the task as written — `working`
    /// once every outstanding request is answered, still `input_required`
    /// after a partial answer. Needs a store with transactions (see
    /// [`TransactionHook`](crate::tool::TransactionHook)); `None` (the
    /// default) stores answers without one.
    pub answer_hook: Option<Arc<dyn crate::tool::TransactionHook>>,
}

impl TasksConfig {
    /// The caps a create must fit under: the row cap and the per-principal cap
    /// (see [`max_rows_per_principal`](Self::max_rows_per_principal)).
    pub fn create_caps(&self) -> super::CreateCaps {
        let per_principal = self.max_rows_per_principal.or(self.max_rows.map(|n| (n / 4).max(1)));
        super::CreateCaps::new(self.max_rows, per_principal)
    }

    /// What one principal's terminal tasks may hold: as many as its live
    /// cap, within [`max_terminal_bytes_per_principal`](Self::max_terminal_bytes_per_principal).
    pub fn terminal_bound(&self) -> super::TerminalBound {
        super::TerminalBound::new(self.create_caps().max_rows_per_owner, self.max_terminal_bytes_per_principal)
    }

    /// The byte budget next to the row cap: the most bytes of client-supplied
    /// data the store holds, `max_rows` × [`MAX_CLIENT_BYTES_PER_TASK`]
    /// (`None` without a row cap). Each task's share is bounded by the
    /// limits in [`limits`](super::limits); a tool's own results come on top.
    ///
    /// [`MAX_CLIENT_BYTES_PER_TASK`]: super::limits::MAX_CLIENT_BYTES_PER_TASK
    pub fn byte_budget(&self) -> Option<usize> {
        self.max_rows.map(|n| n.saturating_mul(super::limits::MAX_CLIENT_BYTES_PER_TASK))
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
            max_terminal_bytes_per_principal: Some(super::limits::DEFAULT_MAX_TERMINAL_BYTES_PER_PRINCIPAL),
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
    ConfigError::new(key, reason)
}

/// A positive integer, or `"unlimited"` (`None`).
fn positive_or_unlimited(key: &str, v: &toml::Value) -> Result<Option<usize>, ConfigError> {
    match v {
        toml::Value::String(s) if s == "unlimited" => Ok(None),
        toml::Value::Integer(n) if *n > 0 => Ok(Some(*n as usize)),
        _ => Err(err(key, "must be a positive integer or \"unlimited\"")),
    }
}

/// Parses `doc` as a TOML table; a syntax error names its line and column (1-based).
fn parse_table(doc: &str) -> Result<toml::Table, ConfigError> {
    doc.parse().map_err(|e: toml::de::Error| {
        let at = e.span().map_or(0, |s| s.start).min(doc.len());
        let before = doc.get(..at).unwrap_or(doc);
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        err(TOML_SYNTAX, format!("line {line}, column {column}: {}", e.message().trim_end()))
    })
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
    pub fn answer_hook(mut self, hook: Arc<dyn crate::tool::TransactionHook>) -> Self {
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

    /// Reads the `[ext_tasks]` value of a server's TOML configuration:
    /// `ext_tasks = true | false`, or a table with `store` (`"memory"`),
    /// `janitor` (`false` or `{ interval_ms, ttl_ms }`), `max_rows`
    /// (a positive integer or `"unlimited"`) and `notifier` (`"listen"` or `"none"`).
    ///
    /// Stores other than `"memory"` are resolved by the caller (see
    /// `store_url`), which is why the raw `store` string is returned too.
    pub fn from_toml(doc: &str) -> Result<(Self, Option<String>), ConfigError> {
        let root = parse_table(doc)?;
        let Some(v) = root.get("ext_tasks") else {
            return Ok((Self::disabled(), None));
        };
        Self::from_toml_value(v)
    }

    /// Reads a whole server configuration file whose tables this crate owns
    /// (the reference server's `--config`): `ext_tasks` as in
    /// [`TasksConfig::from_toml`], `sessions` left to
    /// [`SessionConfig::from_toml`](crate::session::SessionConfig::from_toml),
    /// `http` to `HttpConfig::apply_toml` (feature `http`),
    /// any other top-level key an error naming it
    /// (a misspelt `[ext_task]` must not silently turn tasks off), and a
    /// file without `ext_tasks` enables tasks with defaults, as no file does.
    pub fn from_server_toml(doc: &str) -> Result<(Self, Option<String>), ConfigError> {
        let root = parse_table(doc)?;
        if let Some(other) = root.keys().find(|k| !["ext_tasks", "sessions", "oauth", "http"].contains(&k.as_str())) {
            return Err(err(other, "unknown top-level key (expected ext_tasks, sessions, oauth or http)"));
        }
        match root.get("ext_tasks") {
            Some(v) => Self::from_toml_value(v),
            None => Ok((Self::enabled(), None)),
        }
    }

    /// Reads one `ext_tasks` value (see [`TasksConfig::from_toml`]).
    pub fn from_toml_value(v: &toml::Value) -> Result<(Self, Option<String>), ConfigError> {
        let table = match v {
            toml::Value::Boolean(true) => return Ok((Self::enabled(), None)),
            toml::Value::Boolean(false) => return Ok((Self::disabled(), None)),
            toml::Value::Table(t) => t,
            _ => return Err(err("ext_tasks", "must be true, false or a table")),
        };
        let mut cfg = Self::enabled();
        let mut store = None;
        for (k, v) in table {
            match k.as_str() {
                "store" => match v.as_str() {
                    Some("memory") => {}
                    Some(s)
                        if ["sqlite:", "postgres:", "postgresql:"]
                            .iter()
                            .any(|p| s.strip_prefix(p).is_some_and(|rest| !rest.is_empty())) =>
                    {
                        store = Some(s.to_owned())
                    }
                    _ => {
                        return Err(err("store", "must be \"memory\", \"sqlite:PATH\" or \"postgres:URL\""));
                    }
                },
                "janitor" => {
                    cfg.janitor = match v {
                        toml::Value::Boolean(false) => JanitorConfig::Disabled,
                        toml::Value::Boolean(true) => JanitorConfig::default(),
                        toml::Value::Table(t) => {
                            let (mut interval, mut ttl) = (Duration::from_secs(60), Duration::from_secs(3600));
                            for (jk, jv) in t {
                                let ms = jv.as_integer().filter(|n| *n > 0).ok_or_else(|| {
                                    err(&format!("janitor.{jk}"), "must be a positive integer (milliseconds)")
                                })? as u64;
                                match jk.as_str() {
                                    "interval_ms" => interval = Duration::from_millis(ms),
                                    "ttl_ms" => ttl = Duration::from_millis(ms),
                                    _ => {
                                        return Err(err(
                                            &format!("janitor.{jk}"),
                                            "unknown key (expected interval_ms, ttl_ms)",
                                        ));
                                    }
                                }
                            }
                            JanitorConfig::Every { interval, ttl }
                        }
                        _ => {
                            return Err(err("janitor", "must be false or a table { interval_ms, ttl_ms }"));
                        }
                    }
                }
                "max_rows" => cfg.max_rows = positive_or_unlimited("max_rows", v)?,
                "max_rows_per_principal" => {
                    cfg.max_rows_per_principal = match v {
                        toml::Value::Integer(n) if *n > 0 => Some(*n as usize),
                        _ => return Err(err("max_rows_per_principal", "must be a positive integer")),
                    }
                }
                "max_terminal_bytes_per_principal" => {
                    cfg.max_terminal_bytes_per_principal = positive_or_unlimited(k, v)?;
                }
                "create_rate" => {
                    let rate = v.as_str().and_then(|s| s.parse().ok());
                    let why = "must be a rate such as \"10/s\", \"600/min\" or \"10/s,burst=20\"";
                    cfg.create_rate = Some(rate.ok_or_else(|| err("create_rate", why))?);
                }
                "notifier" => {
                    cfg.notifier = match v.as_str() {
                        Some("listen") => NotifierConfig::Listen,
                        Some("none") => NotifierConfig::None,
                        _ => return Err(err("notifier", "must be \"listen\" or \"none\"")),
                    }
                }
                other => {
                    return Err(err(
                        other,
                        "unknown key (expected store, janitor, max_rows, max_rows_per_principal, \
                         max_terminal_bytes_per_principal, create_rate, notifier)",
                    ));
                }
            }
        }
        cfg.validate()?;
        Ok((cfg, store))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_values() {
        assert!(!TasksConfig::from_toml("").unwrap().0.enabled);
        assert!(TasksConfig::from_toml("ext_tasks = true").unwrap().0.enabled);
        assert!(!TasksConfig::from_toml("ext_tasks = false").unwrap().0.enabled);
        let e = TasksConfig::from_server_toml("[ext_task]\nmax_rows = 5").unwrap_err();
        assert!(e.to_string().contains("ext_task"), "{e}");
        assert!(TasksConfig::from_server_toml("").unwrap().0.enabled, "a file without ext_tasks: defaults");
        assert!(!TasksConfig::from_server_toml("ext_tasks = false").unwrap().0.enabled);
        let e = TasksConfig::from_toml("[ext_tasks]\nstore = \"sqlite:\"").unwrap_err();
        assert!(e.to_string().contains("store"), "{e}");
        let (c, s) = TasksConfig::from_toml(
            "[ext_tasks]\nmax_rows = \"unlimited\"\njanitor = { interval_ms = 30000, ttl_ms = 14400000 }\nnotifier = \"none\"\nstore = \"sqlite:/tmp/t.db\"",
        )
        .unwrap();
        assert_eq!(c.max_rows, None);
        assert_eq!(
            c.janitor,
            JanitorConfig::Every { interval: Duration::from_secs(30), ttl: Duration::from_secs(14400) }
        );
        assert!(matches!(c.notifier, NotifierConfig::None));
        assert_eq!(s.as_deref(), Some("sqlite:/tmp/t.db"));
        let doc = "[ext_tasks]\nmax_terminal_bytes_per_principal = 65536";
        assert_eq!(TasksConfig::from_toml(doc).unwrap().0.max_terminal_bytes_per_principal, Some(65_536));
        let doc = "[ext_tasks]\nmax_terminal_bytes_per_principal = \"unlimited\"";
        assert_eq!(TasksConfig::from_toml(doc).unwrap().0.max_terminal_bytes_per_principal, None);
        assert!(matches!(
            TasksConfig::from_toml("[ext_tasks]\njanitor = false").unwrap().0.janitor,
            JanitorConfig::Disabled
        ));
    }

    #[test]
    fn errors_name_ext_tasks_and_the_key() {
        for (doc, key) in [
            ("ext_tasks = 3", "ext_tasks"),
            ("[ext_tasks]\nmax_rows = 0", "max_rows"),
            ("[ext_tasks]\nmax_rows = \"lots\"", "max_rows"),
            ("[ext_tasks]\nbogus = 1", "bogus"),
            ("[ext_tasks]\nnotifier = \"email\"", "notifier"),
            ("[ext_tasks]\njanitor = { interval_ms = -1 }", "janitor.interval_ms"),
            ("[ext_tasks]\nstore = \"redis:x\"", "store"),
            // Only the documented names: no `interval`/`ttl` without their unit, no `infinity`.
            ("[ext_tasks]\njanitor = { interval = 1000 }", "janitor.interval"),
            ("[ext_tasks]\njanitor = { ttl = 1000 }", "janitor.ttl"),
            ("[ext_tasks]\nmax_rows = \"infinity\"", "max_rows"),
            ("[ext_tasks]\ncreate_rate = \"10/day\"", "create_rate"),
            ("[ext_tasks]\ncreate_rate = 10", "create_rate"),
            ("[ext_tasks]\nmax_terminal_bytes_per_principal = 0", "max_terminal_bytes_per_principal"),
        ] {
            let e = TasksConfig::from_toml(doc).unwrap_err();
            assert_eq!(e.key(), key, "{doc}");
            assert!(e.to_string().contains("ext_tasks") && e.to_string().contains(key), "{e}");
        }
    }

    #[test]
    fn a_syntax_error_is_reported_as_one_with_its_line_and_column() {
        for doc in ["[ext_tasks]\nmax_rows = = 3\n", "[ext_tasks]\nmax_rows = = 3"] {
            for e in [TasksConfig::from_toml(doc).unwrap_err(), TasksConfig::from_server_toml(doc).unwrap_err()] {
                assert_eq!(e.key(), TOML_SYNTAX);
                let text = e.to_string();
                assert!(text.starts_with("not valid TOML: line 2, column 12: "), "{text}");
                assert!(!text.contains("ext_tasks configuration"), "{text}");
            }
        }
    }
}
