//! Choosing the task store from `--store` (or the TOML `ext_tasks.store`).

use conduit_mcp::clock::Clock;
use conduit_mcp::ext::tasks::{MemoryStore, NotifierConfig, TaskStore};
use conduit_mcp_sql::{PgNotifier, PostgresOptions, SqliteStore};
use std::sync::Arc;

/// A store and, for PostgreSQL, the notifier that carries changes across nodes.
pub(crate) struct Chosen {
    pub(crate) store: Arc<dyn TaskStore>,
    pub(crate) notifier: Option<PgNotifier>,
    pub(crate) label: String,
}

/// Opens `spec`: `memory`, `sqlite:PATH` or `postgres:URL` (`postgresql:` too).
pub(crate) async fn open(spec: &str, schema: Option<&str>, clock: Arc<dyn Clock>) -> Result<Chosen, String> {
    if spec == "memory" {
        return Ok(Chosen { store: Arc::new(MemoryStore::with_clock(clock)), notifier: None, label: "memory".into() });
    }
    if let Some(path) = spec.strip_prefix("sqlite:") {
        let store = SqliteStore::open(path, clock).await.map_err(|e| format!("--store {spec}: {e}"))?;
        return Ok(Chosen { store: Arc::new(store), notifier: None, label: format!("sqlite ({path})") });
    }
    let pg_url = if spec.starts_with("postgres://") || spec.starts_with("postgresql://") {
        Some(spec)
    } else {
        spec.strip_prefix("postgres:").or_else(|| spec.strip_prefix("postgresql:"))
    };
    if let Some(url) = pg_url {
        let mut opts = PostgresOptions::new(url);
        if let Some(s) = schema {
            opts = opts.schema(s);
        }
        let store = opts.connect(clock).await.map_err(|e| format!("--store postgres: {e}"))?;
        let channel = match schema {
            Some(s) => format!("conduit_tasks_{s}"),
            None => conduit_mcp_sql::pg_notifier::DEFAULT_CHANNEL.to_owned(),
        };
        let notifier = PgNotifier::connect(url, &channel).await.map_err(|e| format!("--store postgres: {e}"))?;
        return Ok(Chosen { store: Arc::new(store), notifier: Some(notifier), label: "postgres".into() });
    }
    Err(format!("--store {spec:?}: expected memory, sqlite:PATH or postgres:URL"))
}

impl Chosen {
    /// The notifier setting for this store.
    pub(crate) fn notifier_config(&self) -> Option<NotifierConfig> {
        self.notifier.as_ref().map(|n| NotifierConfig::Custom(Arc::new(n.clone())))
    }
}
