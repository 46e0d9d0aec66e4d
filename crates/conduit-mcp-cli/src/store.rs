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

/// Opens `spec`: `memory`, `sqlite:PATH` or `postgres:URL` (`postgresql:` too);
/// `source` names where it came from in messages (`--store`, `ext_tasks.store`).
pub(crate) async fn open(
    spec: &str,
    source: &str,
    schema: Option<&str>,
    clock: Arc<dyn Clock>,
) -> Result<Chosen, String> {
    if spec == "memory" {
        return Ok(Chosen { store: Arc::new(MemoryStore::with_clock(clock)), notifier: None, label: "memory".into() });
    }
    if let Some(path) = spec.strip_prefix("sqlite:") {
        let store = SqliteStore::open(path, clock).await.map_err(|e| format!("{source} {spec:?}: {e}"))?;
        return Ok(Chosen { store: Arc::new(store), notifier: None, label: format!("sqlite ({path})") });
    }
    let pg_url = if spec.starts_with("postgres://") || spec.starts_with("postgresql://") {
        Some(spec)
    } else {
        spec.strip_prefix("postgres:").or_else(|| spec.strip_prefix("postgresql:"))
    };
    if let Some(url) = pg_url {
        let channel = match schema {
            Some(s) => format!("conduit_tasks_{s}"),
            None => conduit_mcp_sql::pg_notifier::DEFAULT_CHANNEL.to_owned(),
        };
        // Checked before connecting: a refused name must not leave a schema behind.
        PgNotifier::check_channel(&channel).map_err(|_| {
            format!(
                "--pg-schema {:?}: use letters, digits and underscores, at most 49 bytes",
                schema.unwrap_or_default()
            )
        })?;
        let mut opts = PostgresOptions::new(url);
        if let Some(s) = schema {
            opts = opts.schema(s);
        }
        let store = opts.connect(clock).await.map_err(|e| format!("{source} postgres: {e}"))?;
        let notifier = PgNotifier::connect(url, &channel).await.map_err(|e| format!("{source} postgres: {e}"))?;
        return Ok(Chosen { store: Arc::new(store), notifier: Some(notifier), label: "postgres".into() });
    }
    Err(format!("{source} {spec:?}: expected memory, sqlite:PATH or postgres:URL"))
}

impl Chosen {
    /// The notifier setting for this store.
    pub(crate) fn notifier_config(&self) -> Option<NotifierConfig> {
        self.notifier.as_ref().map(|n| NotifierConfig::Custom(Arc::new(n.clone())))
    }
}
