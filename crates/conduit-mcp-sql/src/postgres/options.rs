//! [`PostgresOptions`]: which database, and the few knobs worth turning.

use std::time::Duration;

/// How to connect a [`PostgresStore`](crate::PostgresStore): the URL, and the few knobs worth turning.
///
/// ```no_run
/// # async fn run() -> Result<(), conduit_mcp_sql::OpenError> {
/// use conduit_mcp::clock::SystemClock;
/// use conduit_mcp_sql::PostgresOptions;
/// use std::sync::Arc;
///
/// let store = PostgresOptions::new("postgres://app@db.internal/app")
///     .schema("mcp")                 // keep the tables out of `public`
///     .max_connections(16)
///     .application_name("mcp-node-a")
///     .connect(Arc::new(SystemClock))
///     .await?;
/// # let _ = store; Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct PostgresOptions {
    pub(super) url: String,
    pub(super) schema: Option<String>,
    pub(super) max_connections: u32,
    pub(super) connect_timeout: Duration,
    pub(super) operation_timeout: Duration,
    pub(super) application_name: Option<String>,
}

impl PostgresOptions {
    /// Options for a `postgres://` URL (any form `libpq` accepts as a URL).
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            schema: None,
            max_connections: default_pool_size(),
            connect_timeout: Duration::from_secs(10),
            operation_timeout: Duration::from_secs(5),
            application_name: None,
        }
    }

    /// Keeps the tables in this schema (created if missing) instead of the
    /// connection's default (`public`): every pooled connection sets its
    /// `search_path` to it.
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = Some(schema.into());
        self
    }

    /// The most connections the pool opens (at least 1; default four per CPU
    /// of this machine, from 8 to 32: enough to keep PostgreSQL's backends
    /// busy while others wait on the network, few enough not to thrash).
    pub fn max_connections(mut self, n: u32) -> Self {
        self.max_connections = n.max(1);
        self
    }

    /// How long an operation waits to (re)connect before it fails with
    /// [`StoreError::Backend`](conduit_mcp::task::StoreError::Backend) (default 10 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long one store operation may take, from waiting for a pooled
    /// connection (and opening it) to its last statement's answer (default
    /// 5 s). Past it the operation fails with
    /// [`StoreError::Backend`](conduit_mcp::task::StoreError::Backend)
    /// and its connection is closed: when the database's connections hang
    /// (packets dropped, its host stopped), a request gets `-32603 "Task
    /// store unavailable"` within this time and a task's own writes are
    /// retried, as when the database refuses connections, instead of
    /// waiting for the outage to end.
    pub fn operation_timeout(mut self, timeout: Duration) -> Self {
        self.operation_timeout = timeout;
        self
    }

    /// The `application_name` the connections report (`pg_stat_activity`).
    pub fn application_name(mut self, name: impl Into<String>) -> Self {
        self.application_name = Some(name.into());
        self
    }
}

/// Four connections per CPU this process may use, from 8 to 32.
fn default_pool_size() -> u32 {
    let cpus = std::thread::available_parallelism().map_or(2, usize::from);
    u32::try_from(cpus.saturating_mul(4)).unwrap_or(u32::MAX).clamp(8, 32)
}
