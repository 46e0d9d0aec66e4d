//! [`Stores`]: every store a server keeps, opened together from one URL and
//! wired to each other (the task stores of both eras, the session store, and
//! on PostgreSQL the notifiers that carry changes between nodes).

use crate::error::OpenError;
#[cfg(feature = "postgres")]
use crate::pg_notifier::PgNotifier;
use conduit_mcp::clock::{Clock, SystemClock};
use conduit_mcp::config::ConfigError;
use conduit_mcp::ext::events::webhook::{MemoryWebhookStore, WebhookStore};
use conduit_mcp::ext::tasks::legacy_store::{LegacyTaskStore, MemoryLegacyStore};
use conduit_mcp::ext::tasks::{LegacyTasks, MemoryStore, NotifierConfig, TaskStore, Tasks, TasksConfig};
use conduit_mcp::session::{SessionConfig, SessionStore};
use conduit_mcp::task::StoreError;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The channel of the legacy era's task changes on a database without a
/// schema (the modern era's is [`pg_notifier::DEFAULT_CHANNEL`](crate::pg_notifier::DEFAULT_CHANNEL)).
pub const DEFAULT_LEGACY_CHANNEL: &str = "conduit_legacy_tasks";

/// The longest schema name [`StoresOptions::schema`] takes: its channels
/// (`conduit_tasks_<schema>`, `conduit_lgcy_<schema>`) must fit PostgreSQL's
/// 63-byte identifiers.
pub const MAX_SCHEMA_LEN: usize = 49;

/// Why [`Stores`] could not be opened, or could not make its `Tasks`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoresError {
    /// The URL names no store this crate knows.
    #[error("expected memory, sqlite:PATH or postgres:URL")]
    UnknownStore,
    /// The URL names a store this build leaves out.
    #[error("this build of conduit-mcp-sql has no {0} store (its `{0}` feature is off)")]
    FeatureOff(&'static str),
    /// [`StoresOptions::schema`] was given for a store that is not PostgreSQL.
    #[error("a schema applies to a postgres: store only")]
    SchemaWithoutPostgres,
    /// The schema name cannot name notifier channels.
    #[error("invalid schema {0:?}: use letters, digits and underscores, at most 49 bytes")]
    Schema(String),
    /// The database refused to open.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// The database opened, but a store beside the task store did not.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A notifier could not connect.
    #[cfg(feature = "postgres")]
    #[error(transparent)]
    Notifier(#[from] crate::pg_notifier::NotifierError),
    /// The `TasksConfig` given to [`Stores::tasks`] is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// [`Stores::tasks`] was called before: the notifiers serve one handle each.
    #[error("the tasks of these stores were made already (one Tasks per Stores; clone it)")]
    TasksMade,
}

/// Which store a URL opened, for messages.
#[derive(Debug, Clone)]
enum Kind {
    Memory,
    #[cfg(feature = "sqlite")]
    Sqlite(String),
    #[cfg(feature = "postgres")]
    Postgres,
}

/// The PostgreSQL notifiers: one per era's store (the legacy one also relays
/// legacy sessions' responses between nodes).
#[cfg(feature = "postgres")]
#[derive(Debug, Clone)]
struct Notifiers {
    tasks: PgNotifier,
    legacy: PgNotifier,
}

/// Every store a server keeps, opened from one URL: `memory`, `sqlite:PATH`
/// (one node; `sqlite::memory:` for tests) or `postgres:URL` (many nodes; a
/// bare `postgres://…` URL too).
///
/// | URL | tasks (both eras) | sessions | DPoP proofs taken (`oauth`) | across nodes |
/// |---|---|---|---|---|
/// | `memory` | in memory | in memory | the resource server's memory | — |
/// | `sqlite:PATH` | the file | the file | the file | — |
/// | `postgres:URL` | the database | the database | the database | `LISTEN`/`NOTIFY`, a channel per era |
///
/// [`tasks`](Self::tasks) makes the [`Tasks`] handle of both eras over them
/// (its notifiers attached), and [`sessions`](Self::sessions) points a
/// [`SessionConfig`] at the session store (and, on PostgreSQL, the relay of
/// clients' responses between nodes):
///
/// ```no_run
/// use conduit_mcp::prelude::*;
/// use conduit_mcp_sql::Stores;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let stores = Stores::open("sqlite:tasks.db").await?;
/// let tasks = stores.tasks(TasksConfig::enabled())?;
/// let server = Server::builder("app", "1.0.0")
///     .sessions(stores.sessions(SessionConfig::default()))
///     .extension(tasks.clone()) // the Tasks extension and the 2025-11-25 tasks, both in the file
///     .build()?;
/// # let _ = server; Ok(()) }
/// ```
///
/// The pieces stay reachable ([`task_store`](Self::task_store),
/// [`legacy_store`](Self::legacy_store), [`session_store`](Self::session_store))
/// for a server that wires them another way.
#[derive(Clone)]
pub struct Stores {
    kind: Kind,
    clock: Arc<dyn Clock>,
    tasks: Arc<dyn TaskStore>,
    legacy: Arc<dyn LegacyTaskStore>,
    sessions: Option<Arc<dyn SessionStore>>,
    /// The DPoP proofs taken (SQL stores only).
    #[cfg(feature = "oauth")]
    dpop_replay: Option<Arc<dyn conduit_mcp::auth::oauth::DpopReplayStore>>,
    /// Webhook subscriptions, verifications and the outbox.
    webhooks: Arc<dyn WebhookStore>,
    #[cfg(feature = "postgres")]
    notifiers: Option<Notifiers>,
    /// Whether [`Stores::tasks`] has run (on this value or a clone).
    made: Arc<AtomicBool>,
    /// The database's Events cursor key (SQL stores; a secret, never printed).
    events_cursor_key: Option<[u8; 32]>,
}

impl fmt::Debug for Stores {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stores").field("kind", &self.kind).finish_non_exhaustive()
    }
}

/// What the stores are, as an operator reads it: `memory`, `sqlite (PATH)`,
/// `postgres` (never the URL, which may hold a password).
impl fmt::Display for Stores {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Memory => f.write_str("memory"),
            #[cfg(feature = "sqlite")]
            Kind::Sqlite(path) => write!(f, "sqlite ({path})"),
            #[cfg(feature = "postgres")]
            Kind::Postgres => f.write_str("postgres"),
        }
    }
}

/// How to open [`Stores`]: the URL, and on PostgreSQL the schema; the clock
/// every store and the `Tasks` handle run on.
#[derive(Clone)]
#[must_use]
pub struct StoresOptions {
    url: String,
    schema: Option<String>,
    clock: Arc<dyn Clock>,
}

impl fmt::Debug for StoresOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The URL may hold a password.
        f.debug_struct("StoresOptions").field("schema", &self.schema).finish_non_exhaustive()
    }
}

impl StoresOptions {
    /// Options for `url` (see [`Stores`]), on the system clock.
    pub fn new(url: impl Into<String>) -> Self {
        Self { url: url.into(), schema: None, clock: Arc::new(SystemClock) }
    }

    /// PostgreSQL only: keeps the tables in this schema (created if missing),
    /// and the notifiers on channels of its own (`conduit_tasks_<schema>`,
    /// `conduit_lgcy_<schema>`), so servers on different schemas of one
    /// database do not hear each other. At most [`MAX_SCHEMA_LEN`] bytes of
    /// letters, digits and underscores.
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = Some(schema.into());
        self
    }

    /// The clock the stores and the tasks run on (tests inject one).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Opens the stores: creates or upgrades the schema, reads the legacy
    /// store's cursor key, and on PostgreSQL connects the notifiers. A bad
    /// schema name is refused before anything is connected or created.
    pub async fn open(self) -> Result<Stores, StoresError> {
        let url = self.url.as_str();
        let postgres = postgres_url(url);
        if self.schema.is_some() && postgres.is_none() {
            return Err(StoresError::SchemaWithoutPostgres);
        }
        if url == "memory" {
            return Ok(Stores::memory(self.clock));
        }
        if let Some(path) = url.strip_prefix("sqlite:") {
            return self.open_sqlite(path).await;
        }
        match postgres {
            Some(pg) => self.open_postgres(pg).await,
            None => Err(StoresError::UnknownStore),
        }
    }

    #[cfg(feature = "sqlite")]
    async fn open_sqlite(&self, path: &str) -> Result<Stores, StoresError> {
        let store = crate::sqlite::SqliteStore::open(path, self.clock.clone()).await?;
        let legacy = store.legacy().await?;
        let mut stores = Stores::memory(self.clock.clone());
        stores.kind = Kind::Sqlite(path.to_owned());
        stores.events_cursor_key = Some(store.events_cursor_key().await?);
        stores.sessions = Some(Arc::new(store.sessions()));
        stores.webhooks = Arc::new(store.webhooks());
        #[cfg(feature = "oauth")]
        {
            stores.dpop_replay = Some(Arc::new(store.dpop_replay()));
        }
        stores.legacy = Arc::new(legacy);
        stores.tasks = Arc::new(store);
        Ok(stores)
    }

    #[cfg(not(feature = "sqlite"))]
    async fn open_sqlite(&self, _path: &str) -> Result<Stores, StoresError> {
        Err(StoresError::FeatureOff("sqlite"))
    }

    #[cfg(feature = "postgres")]
    async fn open_postgres(&self, url: &str) -> Result<Stores, StoresError> {
        let (channel, legacy_channel) = match &self.schema {
            Some(s) => (format!("conduit_tasks_{s}"), format!("conduit_lgcy_{s}")),
            None => (crate::pg_notifier::DEFAULT_CHANNEL.to_owned(), DEFAULT_LEGACY_CHANNEL.to_owned()),
        };
        // Checked before connecting: a refused name must not leave a schema behind.
        let schema = self.schema.as_deref().unwrap_or_default();
        if schema.len() > MAX_SCHEMA_LEN
            || [&channel, &legacy_channel].into_iter().any(|c| PgNotifier::check_channel(c).is_err())
        {
            return Err(StoresError::Schema(schema.to_owned()));
        }
        let mut options = crate::postgres::PostgresOptions::new(url);
        if let Some(s) = &self.schema {
            options = options.schema(s);
        }
        let store = options.connect(self.clock.clone()).await?;
        let notifiers = Notifiers {
            tasks: PgNotifier::connect(url, &channel).await?,
            legacy: PgNotifier::connect(url, &legacy_channel).await?,
        };
        let legacy = store.legacy().await?;
        let mut stores = Stores::memory(self.clock.clone());
        stores.kind = Kind::Postgres;
        stores.events_cursor_key = Some(store.events_cursor_key().await?);
        stores.sessions = Some(Arc::new(store.sessions()));
        stores.webhooks = Arc::new(store.webhooks());
        #[cfg(feature = "oauth")]
        {
            stores.dpop_replay = Some(Arc::new(store.dpop_replay()));
        }
        stores.legacy = Arc::new(legacy);
        stores.tasks = Arc::new(store);
        stores.notifiers = Some(notifiers);
        Ok(stores)
    }

    #[cfg(not(feature = "postgres"))]
    async fn open_postgres(&self, _url: &str) -> Result<Stores, StoresError> {
        Err(StoresError::FeatureOff("postgres"))
    }
}

/// The connection URL of a PostgreSQL store URL: `postgres://…` and
/// `postgresql://…` as they are, `postgres:URL` and `postgresql:URL` without
/// the prefix.
fn postgres_url(url: &str) -> Option<&str> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return Some(url);
    }
    url.strip_prefix("postgres:").or_else(|| url.strip_prefix("postgresql:"))
}

impl Stores {
    /// Opens the stores `url` names (see [`Stores`]) on the system clock;
    /// [`StoresOptions`] sets a schema or a clock.
    pub async fn open(url: &str) -> Result<Self, StoresError> {
        StoresOptions::new(url).open().await
    }

    /// Everything in memory, on `clock`.
    fn memory(clock: Arc<dyn Clock>) -> Self {
        Self {
            kind: Kind::Memory,
            tasks: Arc::new(MemoryStore::with_clock(clock.clone())),
            legacy: Arc::new(MemoryLegacyStore::with_clock(clock.clone())),
            clock,
            sessions: None,
            #[cfg(feature = "oauth")]
            dpop_replay: None,
            webhooks: Arc::new(MemoryWebhookStore::new()),
            #[cfg(feature = "postgres")]
            notifiers: None,
            made: Arc::new(AtomicBool::new(false)),
            events_cursor_key: None,
        }
    }

    /// The key to seal Events cursors with (`EventsConfig::cursor_key`), kept
    /// in the database: the same on every node that opens it and after every
    /// restart, so a cursor of the durable task change log resumes anywhere.
    /// `None` in memory (cursors there do not outlive the process anyway). A
    /// secret: never log it.
    pub fn events_cursor_key(&self) -> Option<[u8; 32]> {
        self.events_cursor_key
    }

    /// The [`Tasks`] handle of both eras over these stores: `config` with its
    /// store set to [`task_store`](Self::task_store), paired with a
    /// [`LegacyTasks`] over [`legacy_store`](Self::legacy_store) (same node id,
    /// lease and limits), each with its notifier attached on PostgreSQL.
    /// Install it with `ServerBuilder::extension(tasks.clone())` and hand
    /// clones to workers; by-id calls reach the tasks of both eras.
    ///
    /// Called once (the notifiers serve one handle each); a second call is
    /// refused with [`StoresError::TasksMade`]. Call
    /// [`Tasks::claim_node`] before serving to be told at once when another
    /// live process holds the node id.
    pub fn tasks(&self, config: TasksConfig) -> Result<Tasks, StoresError> {
        if self.made.swap(true, Ordering::SeqCst) {
            return Err(StoresError::TasksMade);
        }
        let config = config.store(self.tasks.clone());
        let (config, legacy_config) = self.with_notifiers(config);
        let legacy = LegacyTasks::with_store(legacy_config, self.legacy.clone(), self.clock.clone())?;
        let tasks = Tasks::with_clock(config, self.clock.clone())?;
        #[cfg(feature = "postgres")]
        if let Some(n) = &self.notifiers {
            n.tasks.attach(&tasks);
            n.legacy.attach(legacy.tasks());
        }
        tasks.drive_legacy(&legacy);
        Ok(tasks)
    }

    /// The configurations of the two runtimes: on PostgreSQL each with its
    /// own era's notifier; elsewhere both as given.
    fn with_notifiers(&self, config: TasksConfig) -> (TasksConfig, TasksConfig) {
        #[cfg(feature = "postgres")]
        if let Some(n) = &self.notifiers {
            let legacy = config.clone().notifier(NotifierConfig::Custom(Arc::new(n.legacy.clone())));
            return (config.notifier(NotifierConfig::Custom(Arc::new(n.tasks.clone()))), legacy);
        }
        let legacy = config.clone();
        if matches!(legacy.notifier, NotifierConfig::Custom(_)) {
            // A custom notifier carries the modern store's changes, not these.
            return (config, legacy.notifier(NotifierConfig::Listen));
        }
        (config, legacy)
    }

    /// `config` keeping its sessions in [`session_store`](Self::session_store)
    /// (unchanged in memory), and on PostgreSQL relaying a client's response
    /// that reaches another node to the node holding the call.
    pub fn sessions(&self, config: SessionConfig) -> SessionConfig {
        let mut config = config;
        if let Some(store) = &self.sessions {
            config.store = store.clone();
        }
        #[cfg(feature = "postgres")]
        if let Some(n) = &self.notifiers {
            config.relay = Some(Arc::new(n.legacy.clone()));
        }
        config
    }

    /// The modern era's task store.
    pub fn task_store(&self) -> &Arc<dyn TaskStore> {
        &self.tasks
    }

    /// The `2025-11-25` era's task store, beside it.
    pub fn legacy_store(&self) -> &Arc<dyn LegacyTaskStore> {
        &self.legacy
    }

    /// The session store; `None` in memory (a `SessionConfig`'s default).
    pub fn session_store(&self) -> Option<&Arc<dyn SessionStore>> {
        self.sessions.as_ref()
    }

    /// The store of the DPoP proofs taken, for `OAuthConfig::dpop_replay_store` (feature
    /// `oauth`): in the database, so every node on it takes a proof once between them;
    /// `None` in memory (the resource server's own, byte-bounded window is the default).
    #[cfg(feature = "oauth")]
    pub fn dpop_replay(&self) -> Option<Arc<dyn conduit_mcp::auth::oauth::DpopReplayStore>> {
        self.dpop_replay.clone()
    }

    /// Where webhook subscriptions, endpoint verifications and the delivery
    /// outbox live: in the database (every node on it shares them, and they
    /// survive a restart), or a `MemoryWebhookStore` in memory (this
    /// process only). The same store on every call.
    pub fn webhooks(&self) -> Arc<dyn WebhookStore> {
        self.webhooks.clone()
    }

    /// The notifiers of the modern and the legacy era's tasks (PostgreSQL).
    #[cfg(feature = "postgres")]
    pub fn notifiers(&self) -> Option<(&PgNotifier, &PgNotifier)> {
        self.notifiers.as_ref().map(|n| (&n.tasks, &n.legacy))
    }

    /// Stops the notifiers' listeners (PostgreSQL; nothing elsewhere). The
    /// stores' connections close when the last handle on them is dropped.
    pub fn stop(&self) {
        #[cfg(feature = "postgres")]
        if let Some(n) = &self.notifiers {
            n.tasks.stop();
            n.legacy.stop();
        }
    }
}
