//! The stores and task handles both processes open on the one database:
//! `conduit_mcp_sql::Stores` (both eras' task stores, the sessions', and a
//! notifier per era so a change the worker writes reaches the server's
//! waiting clients), and the application's own pool.

use crate::queue::{ResumeRender, Schemas};
use conduit_mcp::ext::tasks::{Tasks, TasksConfig};
use conduit_mcp_sql::{Stores, StoresOptions};
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
    /// The task stores (both eras' tables, and the sessions'), with their notifiers.
    pub stores: Stores,
    /// The tasks of both eras: by-id calls reach legacy tasks too.
    pub tasks: Tasks,
    /// The application's pool (`render_state`, the queue).
    pub pool: PgPool,
}

impl Opened {
    /// Stops the notifiers' listeners.
    pub fn stop(&self) {
        self.stores.stop();
    }
}

/// Opens everything: creates the tables on first use (the queue's
/// migrations, `render_state`).
pub async fn open(db: &Database) -> Result<Opened, Error> {
    // The task schema also names the notifier channels, so each schema's servers hear only each other.
    let stores = StoresOptions::new(&db.url).schema(&db.schemas.tasks).open().await?;
    let pool = sqlx::postgres::PgPoolOptions::new().max_connections(8).connect(&db.url).await?;
    crate::queue::prepare(&pool, &db.schemas).await?;
    // An answer to a task's question re-enqueues its job in the same transaction.
    let resume = ResumeRender { queue: db.schemas.queue.clone(), max_attempts: db.max_attempts };
    let tasks = stores.tasks(TasksConfig::enabled().answer_hook(Arc::new(resume)))?;
    Ok(Opened { stores, tasks, pool })
}
