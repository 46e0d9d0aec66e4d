//! Ours: the conformance fixture's `greet` and `slow_compute` (built by the
//! `conduit_mcp_conformance` library) on conduit-mcp, the task store chosen by
//! `--store` (memory, or SQLite and PostgreSQL from `conduit-mcp-sql`), and the
//! bench-only admin route W5 uses to complete tasks through the worker API.

use axum::extract::State;
use axum::routing::post;
use conduit_mcp::clock::{Clock, SystemClock};
use conduit_mcp::ext::events::webhook::egress::{Egress, EgressPolicy};
use conduit_mcp::ext::events::webhook::{MemoryWebhookStore, WebhookConfig};
use conduit_mcp::ext::events::{Events, EventsConfig};
use conduit_mcp::ext::tasks::{NotifierConfig, TaskStore, Tasks, TasksConfig};
use conduit_mcp::prelude::*;
use conduit_mcp::session::{SessionConfig, SessionLimits};
use conduit_mcp_conformance::tasks_tools;
use conduit_mcp_sql::{PgNotifier, PostgresOptions, SqliteStore};
use serde::Deserialize;
use serde_json::{Value, json};
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Where the bench server keeps its tasks (`--store`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    /// The library's `MemoryStore` (the default).
    Memory,
    /// SQLite, from `conduit-mcp-sql`.
    Sqlite,
    /// PostgreSQL, from `conduit-mcp-sql`.
    Postgres,
}

impl StoreKind {
    /// Every kind, in the order the report lists them.
    pub const ALL: [StoreKind; 3] = [StoreKind::Memory, StoreKind::Sqlite, StoreKind::Postgres];

    /// The `--store` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Memory => "memory",
            Self::Sqlite => "sqlite",
            Self::Postgres => "postgres",
        }
    }
}

impl fmt::Display for StoreKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for StoreKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| format!("unknown store {s:?} (expected memory, sqlite or postgres)"))
    }
}

/// The PostgreSQL schema the bench server keeps its tasks in unless `--pg-schema` says otherwise.
pub const DEFAULT_PG_SCHEMA: &str = "conduit_bench";

/// Whether the bench server can run `kind` with this `--database-url` (the harness asks
/// before a pass starts): SQLite needs a file path, PostgreSQL a `postgres://` URL.
pub fn store_available(kind: StoreKind, database_url: Option<&str>) -> Result<(), String> {
    match (kind, database_url.filter(|u| !u.is_empty())) {
        (StoreKind::Memory, _) => Ok(()),
        (StoreKind::Sqlite, Some(_)) => Ok(()),
        (StoreKind::Postgres, Some(url)) if is_postgres_url(url) => Ok(()),
        (StoreKind::Postgres, Some(_)) => {
            Err("--store postgres: --database-url must be a postgres:// or postgresql:// URL".into())
        }
        (_, None) => Err(format!(
            "--store {kind} needs --database-url ({})",
            if kind == StoreKind::Sqlite { "a file path" } else { "a postgres:// URL" }
        )),
    }
}

fn is_postgres_url(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// Checks a PostgreSQL schema name: an unquoted identifier (a lower-case letter or `_`,
/// then lower-case letters, digits and `_`) short enough that the notification channel
/// `conduit_tasks_<schema>` stays within PostgreSQL's 63 bytes.
pub fn valid_schema(name: &str) -> Result<(), String> {
    let mut bytes = name.bytes();
    let first_ok = bytes.next().is_some_and(|b| b.is_ascii_lowercase() || b == b'_');
    let rest_ok = bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if first_ok && rest_ok && name.len() <= 63 - "conduit_tasks_".len() {
        Ok(())
    } else {
        Err(format!(
            "--pg-schema {name:?}: use a lower-case letter or `_`, then lower-case letters, digits and `_`, \
             at most 49 bytes"
        ))
    }
}

/// How `bench-server` opens its store (`--store`, `--database-url`, `--pg-schema`, `--fresh`).
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// The kind of store.
    pub kind: StoreKind,
    /// A file path for SQLite, a `postgres://` URL for PostgreSQL; ignored for memory.
    pub database_url: Option<String>,
    /// The PostgreSQL schema (validated by [`valid_schema`]).
    pub pg_schema: String,
    /// Start from an empty store: delete the SQLite file (and its `-wal`/`-shm`), or drop
    /// the PostgreSQL schema with everything in it, before opening.
    pub fresh: bool,
}

impl StoreOptions {
    /// The options for `kind` on the default schema, not fresh.
    pub fn new(kind: StoreKind, database_url: Option<&str>) -> Self {
        Self { kind, database_url: database_url.map(str::to_owned), pg_schema: DEFAULT_PG_SCHEMA.into(), fresh: false }
    }
}

/// An opened store: `None` is the extension's default `MemoryStore`; PostgreSQL comes
/// with the notifier that carries changes to the other nodes on the same schema.
pub struct OpenedStore {
    /// The store (`None`: the default `MemoryStore`).
    pub store: Option<Arc<dyn TaskStore>>,
    /// PostgreSQL's `LISTEN`/`NOTIFY` notifier, attached by [`tasks_on`].
    pub notifier: Option<PgNotifier>,
}

impl fmt::Debug for OpenedStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenedStore")
            .field("store", &self.store.as_ref().map(|_| "dyn TaskStore"))
            .field("notifier", &self.notifier)
            .finish()
    }
}

/// Removes an SQLite database file and its `-wal` and `-shm` companions (missing ones are fine).
pub fn remove_sqlite_files(path: &str) -> Result<(), String> {
    for p in [path.to_owned(), format!("{path}-wal"), format!("{path}-shm")] {
        match std::fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("--fresh: cannot remove {p}: {e}")),
        }
    }
    Ok(())
}

/// `DROP SCHEMA IF EXISTS <schema> CASCADE` on `url` (the schema name checked first).
pub async fn drop_pg_schema(url: &str, schema: &str) -> Result<(), String> {
    use sqlx::{Connection, Executor};
    valid_schema(schema)?;
    let mut conn =
        sqlx::PgConnection::connect(url).await.map_err(|e| format!("--fresh: cannot reach PostgreSQL: {e}"))?;
    let sql = format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE");
    conn.execute(sqlx::AssertSqlSafe(sql.as_str())).await.map_err(|e| format!("--fresh: {sql}: {e}"))?;
    conn.close().await.map_err(|e| e.to_string())
}

/// Opens the task store `opts` describes.
///
/// This and [`store_available`] are the one place a store backend is wired into the
/// benchmarks: `bench-server --store`, the harness's `--stores` list and the report
/// all go through them. SQLite and PostgreSQL come from `conduit-mcp-sql`; PostgreSQL
/// keeps its tables in `opts.pg_schema` and publishes changes on the channel
/// `conduit_tasks_<schema>`, so every node on the same schema sees every change.
pub async fn open_store(opts: &StoreOptions, clock: Arc<dyn Clock>) -> Result<OpenedStore, String> {
    store_available(opts.kind, opts.database_url.as_deref())?;
    let url = opts.database_url.as_deref().unwrap_or_default();
    match opts.kind {
        StoreKind::Memory => Ok(OpenedStore { store: None, notifier: None }),
        StoreKind::Sqlite => {
            if opts.fresh {
                remove_sqlite_files(url)?;
            }
            if let Some(dir) = std::path::Path::new(url).parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            }
            let store = SqliteStore::open(url, clock).await.map_err(|e| format!("--store sqlite: {e}"))?;
            Ok(OpenedStore { store: Some(Arc::new(store)), notifier: None })
        }
        StoreKind::Postgres => {
            valid_schema(&opts.pg_schema)?;
            if opts.fresh {
                drop_pg_schema(url, &opts.pg_schema).await?;
            }
            let store = PostgresOptions::new(url)
                .schema(opts.pg_schema.as_str())
                .application_name("conduit-mcp-bench")
                .connect(clock)
                .await
                .map_err(|e| format!("--store postgres: {e}"))?;
            let channel = format!("conduit_tasks_{}", opts.pg_schema);
            let notifier =
                PgNotifier::connect(url, &channel).await.map_err(|e| format!("--store postgres notifier: {e}"))?;
            Ok(OpenedStore { store: Some(Arc::new(store)), notifier: Some(notifier) })
        }
    }
}

/// The Tasks handle the bench server runs on: the extension enabled, no row cap
/// (W4 and W7 hold 100 000 tasks), default janitor, notifier and TTL.
pub fn tasks(store: Option<Arc<dyn TaskStore>>) -> Result<Tasks, String> {
    tasks_on(OpenedStore { store, notifier: None }, Arc::new(SystemClock))
}

/// [`tasks`] on an opened store, with its notifier (PostgreSQL) wired in and attached.
pub fn tasks_on(opened: OpenedStore, clock: Arc<dyn Clock>) -> Result<Tasks, String> {
    let mut config = TasksConfig::enabled().max_rows(None);
    if let Some(store) = opened.store {
        config = config.store(store);
    }
    if let Some(n) = &opened.notifier {
        config = config.notifier(NotifierConfig::Custom(Arc::new(n.clone())));
    }
    let tasks = Tasks::with_clock(config, clock).map_err(|e| e.to_string())?;
    if let Some(n) = &opened.notifier {
        n.attach(&tasks);
    }
    Ok(tasks)
}

/// The bench server: the conformance fixture's `greet` and `slow_compute`
/// (from `conduit_mcp_conformance::tasks_tools`) on `tasks`. Every load comes from
/// one address, so the per-client session cap is lifted to the default total cap (W9
/// opens 10 000 sessions from one client), and the total to four times that (a client
/// holds at most a quarter of it).
pub fn server(tasks: &Tasks) -> Result<Server, String> {
    server_with(tasks, None)
}

/// [`server`] with the Events extension installed beside the tasks when `events` is given.
pub fn server_with(tasks: &Tasks, events: Option<Events>) -> Result<Server, String> {
    let one_client = SessionLimits::default().max_sessions;
    let sessions = SessionConfig::default().max_sessions(4 * one_client).max_sessions_per_client(one_client);
    let mut builder = Server::builder("conduit-mcp-bench", env!("CARGO_PKG_VERSION"))
        .sessions(sessions)
        .extension(tasks.clone())
        .tool(tasks_tools::greet())
        .tool(tasks_tools::slow_compute());
    if let Some(events) = events {
        builder = builder.extension(events);
    }
    builder.build().map_err(|e| e.to_string())
}

/// The Events extension with `task.status_changed` on `tasks`, its cursors sealed with
/// one fixed key (every bench node names a change alike), and the store's change log
/// turned on now (a durable log is written only once a reader turned it on; without
/// this, the first stream or poll would): what `bench-server --events` serves.
/// With `webhooks`, events are delivered by webhook too.
pub async fn events_on(
    tasks: &Tasks,
    store: Option<&Arc<dyn TaskStore>>,
    webhooks: Option<WebhookConfig>,
) -> Result<Events, String> {
    let mut config = EventsConfig::new().cursor_key([7; 32]);
    if let Some(w) = webhooks {
        config = config.webhooks(w);
    }
    let events = Events::new(config).map_err(|e| e.to_string())?;
    events.task_status(tasks);
    if let Some(feed) = store.and_then(|s| s.change_feed()) {
        feed.head().await.map_err(|e| format!("cannot turn the task change log on: {e}"))?;
    }
    Ok(events)
}

/// Webhook delivery as `bench-server --webhook-root-cert` runs it: subscriptions
/// and the outbox in memory, the egress trusting `root_pem` besides the web PKI
/// and letting https callbacks resolve to loopback (the receiver is on this
/// machine), every other rule the library's default.
pub fn webhooks_trusting(root_pem: String) -> Result<WebhookConfig, String> {
    let mut policy = EgressPolicy::new();
    policy.allow_loopback = true;
    policy.root_certificates_pem = vec![root_pem];
    let egress = Egress::new(&policy).map_err(|e| e.to_string())?;
    Ok(WebhookConfig::new(Arc::new(MemoryWebhookStore::new()), Arc::new(egress)))
}

/// Microseconds since the Unix epoch (comparable across processes on one machine).
pub fn now_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0)
}

/// The text a W5 completion carries: `t0=<µs since the epoch>` taken just before `Tasks::complete`.
pub fn completion_text(t0_us: u64) -> String {
    format!("t0={t0_us}")
}

/// Reads the `t0=` stamp back out of a notification's text.
pub fn completion_stamp(text: &str) -> Option<u64> {
    let start = text.find("t0=")? + 3;
    let digits: String = text[start..].chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[derive(Debug, Deserialize)]
struct CompleteRequest {
    #[serde(rename = "taskIds")]
    task_ids: Vec<String>,
    #[serde(rename = "intervalUs", default)]
    interval_us: u64,
}

/// `POST /complete`: completes the named tasks one by one through [`Tasks::complete`],
/// `intervalUs` apart, each result stamped with [`completion_text`]. Answers at once.
async fn complete(State(tasks): State<Tasks>, axum::Json(req): axum::Json<CompleteRequest>) -> axum::Json<Value> {
    let accepted = req.task_ids.len();
    tokio::spawn(async move {
        for id in req.task_ids {
            let t0 = now_us();
            if let Err(e) = tasks.complete(&id, CallToolResult::text(completion_text(t0)), None).await {
                eprintln!("bench admin: cannot complete a task: {e}");
            }
            if req.interval_us > 0 {
                tokio::time::sleep(Duration::from_micros(req.interval_us)).await;
            }
        }
    });
    axum::Json(json!({ "accepted": accepted }))
}

/// The admin route beside the MCP endpoint: `POST /bench/complete` (it completes W5's tasks).
pub fn admin(tasks: Tasks) -> axum::Router {
    axum::Router::new().route("/bench/complete", post(complete)).with_state(tasks)
}

/// Serves `server` at `/mcp` and the admin route on `addr` through the library's own
/// `http::serve` path (`Bound::serve_with`, `TCP_NODELAY`, `config`'s authentication and
/// the default limits, but for listen streams: W5 holds one per connection from one
/// address), printing where it listens; runs until the process is stopped.
pub async fn serve(addr: std::net::SocketAddr, server: Server, tasks: Tasks, config: HttpConfig) -> Result<(), String> {
    let bound = http::bind(addr).await.map_err(|e| format!("cannot bind {addr}: {e}"))?;
    eprintln!("listening on http://{}/mcp", bound.local_addr());
    let forever = std::future::pending::<()>();
    let config = config.max_listen_streams_per_client(usize::MAX);
    bound.serve_with(server, config, admin(tasks), forever).await.map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_kinds() {
        for k in StoreKind::ALL {
            assert_eq!(k.as_str().parse::<StoreKind>(), Ok(k));
        }
        assert!("redis".parse::<StoreKind>().is_err());
        assert!(store_available(StoreKind::Memory, None).is_ok());
        assert!(store_available(StoreKind::Sqlite, Some("target/bench/x.db")).is_ok());
        assert!(store_available(StoreKind::Postgres, Some("postgres://u@127.0.0.1/db")).is_ok());
        let e = store_available(StoreKind::Sqlite, None).expect_err("no path");
        assert!(e.contains("--database-url"), "{e}");
        assert!(store_available(StoreKind::Postgres, None).is_err());
        assert!(store_available(StoreKind::Postgres, Some("target/bench/x.db")).is_err());
    }

    #[test]
    fn schema_names_are_plain_identifiers() {
        for ok in [DEFAULT_PG_SCHEMA, "_x", "bench_2", &"a".repeat(49)] {
            assert!(valid_schema(ok).is_ok(), "{ok}");
        }
        for bad in ["", "2x", "Bench", "a-b", "x\"; DROP TABLE t; --", "a b", &"a".repeat(50)] {
            assert!(valid_schema(bad).is_err(), "{bad}");
        }
    }

    #[tokio::test]
    async fn memory_is_the_default_store() {
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let opened = open_store(&StoreOptions::new(StoreKind::Memory, None), clock.clone()).await.expect("memory");
        assert!(opened.store.is_none() && opened.notifier.is_none());
        let no_url = open_store(&StoreOptions::new(StoreKind::Postgres, None), clock.clone()).await;
        assert!(no_url.is_err());
        let bad_schema =
            StoreOptions { pg_schema: "x; --".into(), ..StoreOptions::new(StoreKind::Postgres, Some("postgres://x")) };
        assert!(open_store(&bad_schema, clock).await.expect_err("refused").contains("--pg-schema"));
    }

    #[tokio::test]
    async fn sqlite_fresh_starts_empty() {
        let dir = std::env::temp_dir().join(format!("conduit-bench-test-{}", std::process::id()));
        let path = dir.join("fresh.db").to_string_lossy().into_owned();
        std::fs::create_dir_all(&dir).expect("dir");
        for p in [path.clone(), format!("{path}-wal"), format!("{path}-shm")] {
            std::fs::write(&p, b"not a database").expect("write");
        }
        let opts = StoreOptions { fresh: true, ..StoreOptions::new(StoreKind::Sqlite, Some(&path)) };
        let opened = open_store(&opts, Arc::new(SystemClock)).await.expect("fresh sqlite");
        let store = opened.store.expect("a store");
        let t = tasks_on(OpenedStore { store: Some(store), notifier: None }, Arc::new(SystemClock)).expect("tasks");
        let _ = server(&t).expect("server");
        let _ = admin(t);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn stamps_round_trip() {
        assert_eq!(completion_stamp(&completion_text(1_234_567)), Some(1_234_567));
        assert_eq!(completion_stamp(r#"{"text":"t0=42"}"#), Some(42));
        assert_eq!(completion_stamp("nothing"), None);
    }

    #[tokio::test]
    async fn the_server_builds_with_both_tools() {
        let t = tasks(None).expect("tasks");
        let _ = server(&t).expect("server");
        let _ = admin(t);
    }
}
