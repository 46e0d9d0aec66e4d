//! The stores and task handles both processes open on the one database: the
//! task store (and the 2025-11-25 era's beside it), a notifier per era so a
//! change the worker writes reaches the server's waiting clients, and the
//! application's own pool.

use crate::queue::{ResumeRender, Schemas};
use conduit_mcp::clock::{Clock, SystemClock};
use conduit_mcp::ext::tasks::legacy_store::LegacyTasks;
use conduit_mcp::ext::tasks::{NotifierConfig, Tasks, TasksConfig};
use conduit_mcp_sql::{PgNotifier, PostgresStore};
use sqlx::PgPool;
use std::sync::Arc;

/// What this example's error paths carry.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// How to reach the database.
#[derive(Debug, Clone)]
pub struct Database {
    /// The PostgreSQL URL.
    pub url: String,
    /// Where the tables are.
    pub schemas: Schemas,
    /// How many attempts the queue makes per job.
    pub max_attempts: i16,
}

/// The handles on the database, the same in the server and the worker.
#[derive(Debug, Clone)]
pub struct Opened {
    /// The task store (both eras' tables, and the sessions').
    pub store: PostgresStore,
    /// The modern era's tasks; by-id calls reach legacy tasks too.
    pub tasks: Tasks,
    /// The 2025-11-25 era's tasks.
    pub legacy: LegacyTasks,
    /// The legacy era's notifier (also the sessions' response relay).
    pub legacy_notifier: PgNotifier,
    /// The notifiers, to stop at shutdown.
    notifiers: [PgNotifier; 2],
    /// The application's pool (`render_state`, the queue).
    pub pool: PgPool,
}

impl Opened {
    /// Stops the notifiers' listeners.
    pub fn stop(&self) {
        for n in &self.notifiers {
            n.stop();
        }
    }
}

/// The notifier channels of a task schema (PostgreSQL channel names are
/// identifiers too, so each schema gets its own pair).
fn channels(schema: &str) -> (String, String) {
    (format!("{schema}_tasks"), format!("{schema}_legacy_tasks"))
}

/// Opens everything: creates the tables on first use (the queue's
/// migrations, `render_state`).
pub async fn open(db: &Database) -> Result<Opened, Error> {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let store = PostgresStore::with_schema(&db.url, &db.schemas.tasks, clock.clone()).await?;
    let pool = sqlx::postgres::PgPoolOptions::new().max_connections(8).connect(&db.url).await?;
    crate::queue::prepare(&pool, &db.schemas).await?;
    let (modern, legacy) = channels(&db.schemas.tasks);
    let notifier = PgNotifier::connect(&db.url, &modern).await?;
    let legacy_notifier = PgNotifier::connect(&db.url, &legacy).await?;
    // An answer to a task's question re-enqueues its job in the same transaction.
    let resume = ResumeRender { queue: db.schemas.queue.clone(), max_attempts: db.max_attempts };
    let config = TasksConfig::enabled().store(Arc::new(store.clone())).answer_hook(Arc::new(resume));
    let legacy_config = config.clone().notifier(NotifierConfig::Custom(Arc::new(legacy_notifier.clone())));
    let legacy_tasks = LegacyTasks::with_store(legacy_config, Arc::new(store.legacy().await?), clock.clone())?;
    legacy_notifier.attach(legacy_tasks.tasks());
    let tasks = Tasks::with_clock(config.notifier(NotifierConfig::Custom(Arc::new(notifier.clone()))), clock)?;
    notifier.attach(&tasks);
    tasks.drive_legacy(&legacy_tasks);
    Ok(Opened {
        store,
        tasks,
        legacy: legacy_tasks,
        legacy_notifier: legacy_notifier.clone(),
        notifiers: [notifier, legacy_notifier],
        pool,
    })
}
