//! The connection of a store's transaction, for a
//! [`TransactionHook`](conduit_mcp::task::TransactionHook): the hook
//! runs its own statements on it, and they commit with the task write.
//!
//! ```no_run
//! # #[cfg(feature = "postgres")]
//! # mod demo {
//! use conduit_mcp::task::{HookError, StoreTransaction, TransactionHook, WrittenTask};
//!
//! /// Puts a job for the task in the application's own queue table.
//! struct Enqueue;
//!
//! #[async_trait::async_trait]
//! impl TransactionHook for Enqueue {
//!     async fn run(&self, tx: &mut dyn StoreTransaction, task: WrittenTask<'_>) -> Result<(), HookError> {
//!         let conn = conduit_mcp_sql::postgres_connection(tx)?;
//!         sqlx::query("INSERT INTO jobs (task_id) VALUES ($1)").bind(task.task_id).execute(conn).await?;
//!         Ok(())
//!     }
//! }
//! # }
//! ```

use conduit_mcp::task::{HookError, StoreTransaction};

/// The `sqlx::PgConnection` inside a PostgreSQL store's transaction; an
/// error when `tx` belongs to another kind of store.
#[cfg(feature = "postgres")]
pub fn postgres_connection(tx: &mut dyn StoreTransaction) -> Result<&mut sqlx::PgConnection, HookError> {
    connection(tx)
}

/// The `sqlx::SqliteConnection` inside an SQLite store's transaction (the
/// write lock is held); an error when `tx` belongs to another kind of store.
#[cfg(feature = "sqlite")]
pub fn sqlite_connection(tx: &mut dyn StoreTransaction) -> Result<&mut sqlx::SqliteConnection, HookError> {
    connection(tx)
}

fn connection<C: 'static>(tx: &mut dyn StoreTransaction) -> Result<&mut C, HookError> {
    let store = tx.store();
    tx.connection().downcast_mut::<C>().ok_or_else(|| {
        format!("a transaction of the {store} store has no {} connection", std::any::type_name::<C>()).into()
    })
}
