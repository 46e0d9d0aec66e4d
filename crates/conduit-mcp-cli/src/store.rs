//! Choosing the task store from `--store` (or the TOML `ext_tasks.store`):
//! the extension's store, and on SQL the legacy era's task store and the
//! session store in the same database, so any node serves any session.

use conduit_mcp::clock::Clock;
use conduit_mcp::ext::tasks::legacy_store::LegacyTaskStore;
use conduit_mcp::ext::tasks::{MemoryStore, NotifierConfig, TaskStore};
use conduit_mcp::session::SessionStore;
use conduit_mcp_sql::{PgNotifier, PostgresOptions, SqliteStore};
use std::sync::Arc;

/// A store and, for PostgreSQL, the notifier that carries changes across nodes.
pub(crate) struct Chosen {
    pub(crate) store: Arc<dyn TaskStore>,
    pub(crate) notifier: Option<PgNotifier>,
    pub(crate) label: String,
    /// The legacy (2025-11-25) task store beside it; `None`: in memory.
    pub(crate) legacy: Option<Arc<dyn LegacyTaskStore>>,
    /// The legacy runtime's own cross-node notifier (PostgreSQL).
    pub(crate) legacy_notifier: Option<PgNotifier>,
    /// Where legacy sessions live; `None`: in memory.
    pub(crate) sessions: Option<Arc<dyn SessionStore>>,
}

/// Opens `spec`: `memory`, `sqlite:PATH` or `postgres:URL` (`postgresql:` too);
/// `source` names where it came from in messages (`--store`, `ext_tasks.store`).
pub(crate) async fn open(
    spec: &str,
    source: &str,
    schema: Option<&str>,
    clock: Arc<dyn Clock>,
) -> Result<Chosen, String> {
    let pg = spec.starts_with("postgres:") || spec.starts_with("postgresql:");
    if let Some(s) = schema.filter(|_| !pg) {
        return Err(format!("--pg-schema {s:?} applies to a postgres: store only, not {source} {spec:?}"));
    }
    if spec == "memory" {
        let store = Arc::new(MemoryStore::with_clock(clock));
        return Ok(Chosen::alone(store, "memory".into()));
    }
    if let Some(path) = spec.strip_prefix("sqlite:") {
        let store = SqliteStore::open(path, clock).await.map_err(|e| format!("{source} {spec:?}: {e}"))?;
        let legacy = store.legacy().await.map_err(|e| format!("{source} {spec:?}: {e}"))?;
        let mut chosen = Chosen::alone(Arc::new(store.clone()), format!("sqlite ({path})"));
        chosen.legacy = Some(Arc::new(legacy));
        chosen.sessions = Some(Arc::new(store.sessions()));
        return Ok(chosen);
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
        // The legacy runtime's changes travel on a channel of their own.
        let legacy_channel = match schema {
            Some(s) => format!("conduit_lgcy_{s}"),
            None => "conduit_legacy_tasks".to_owned(),
        };
        // Checked before connecting: a refused name must not leave a schema behind.
        for c in [&channel, &legacy_channel] {
            PgNotifier::check_channel(c).map_err(|_| {
                format!(
                    "--pg-schema {:?}: use letters, digits and underscores, at most 49 bytes",
                    schema.unwrap_or_default()
                )
            })?;
        }
        let mut opts = PostgresOptions::new(url);
        if let Some(s) = schema {
            opts = opts.schema(s);
        }
        let store = opts.connect(clock).await.map_err(|e| format!("{source} postgres: {e}"))?;
        let failed = |e: &dyn std::fmt::Display| format!("{source} postgres: {e}");
        let notifier = PgNotifier::connect(url, &channel).await.map_err(|e| failed(&e))?;
        let legacy_notifier = PgNotifier::connect(url, &legacy_channel).await.map_err(|e| failed(&e))?;
        let legacy = store.legacy().await.map_err(|e| failed(&e))?;
        let mut chosen = Chosen::alone(Arc::new(store.clone()), "postgres".into());
        chosen.notifier = Some(notifier);
        chosen.legacy = Some(Arc::new(legacy));
        chosen.legacy_notifier = Some(legacy_notifier);
        chosen.sessions = Some(Arc::new(store.sessions()));
        return Ok(chosen);
    }
    Err(format!("{source} {spec:?}: expected memory, sqlite:PATH or postgres:URL"))
}

impl Chosen {
    fn alone(store: Arc<dyn TaskStore>, label: String) -> Self {
        Self { store, notifier: None, label, legacy: None, legacy_notifier: None, sessions: None }
    }

    /// The notifier setting for this store.
    pub(crate) fn notifier_config(&self) -> Option<NotifierConfig> {
        self.notifier.as_ref().map(|n| NotifierConfig::Custom(Arc::new(n.clone())))
    }

    /// The notifier setting for the legacy runtime.
    pub(crate) fn legacy_notifier_config(&self) -> Option<NotifierConfig> {
        self.legacy_notifier.as_ref().map(|n| NotifierConfig::Custom(Arc::new(n.clone())))
    }
}
