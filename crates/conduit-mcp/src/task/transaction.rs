//! Writing a task and the application's own rows in one database
//! transaction: the seed's "enqueue the job in the same transaction as the
//! task row", for any queue that lives in the same database.
//!
//! A [`TransactionHook`] runs inside the transaction that writes a task
//! (a tool's [`TaskSpec::start_in_transaction`](super::TaskSpec::start_in_transaction),
//! or the store's `TaskStore::create_with`) or that stores the answer to its
//! input request (`TasksConfig::answer_hook`, `TaskStore::update_with`). It
//! sees the task as written and the store's own connection, on which it adds
//! its rows — a job that will run the task, an outbox entry. Both commit
//! together or not at all: a crash between the two writes leaves neither a
//! task without its job nor a job without its task, and a hook that fails
//! rolls the task write back.
//!
//! The store crate says what the connection is (`conduit_mcp_sql`:
//! `postgres_connection(tx)` gives the `sqlx::PgConnection`,
//! `sqlite_connection(tx)` the `sqlx::SqliteConnection`); stores without
//! transactions (the memory store) refuse a hook, so a task that must have
//! its job never exists without one.

use crate::protocol::tasks::TaskStatus;
use async_trait::async_trait;
use std::any::Any;

/// What a hook's failure carries back (the request is refused with it).
pub type HookError = Box<dyn std::error::Error + Send + Sync>;

/// A store's open transaction, lent to a [`TransactionHook`].
pub trait StoreTransaction: Send {
    /// Which store the transaction belongs to (`"postgres"`, `"sqlite"`, …).
    fn store(&self) -> &'static str;

    /// The transaction's connection, to be downcast by the store crate's
    /// typed accessor (never committed or rolled back by the hook: the store
    /// does that once the hook returns).
    fn connection(&mut self) -> &mut (dyn Any + Send);
}

/// The task a transaction writes, as a hook sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct WrittenTask<'a> {
    /// The task's id. A capability: store it where only the work reads it,
    /// and never log it.
    pub task_id: &'a str,
    /// The principal that owns it (`None` without authentication).
    pub owner: Option<&'a str>,
    /// Its status as written.
    pub status: TaskStatus,
    /// Its version as written (the store's compare-and-swap counter).
    pub version: u64,
}

impl<'a> WrittenTask<'a> {
    /// The task `task_id`, owned by `owner`, written with `status` at `version`.
    pub fn new(task_id: &'a str, owner: Option<&'a str>, status: TaskStatus, version: u64) -> Self {
        Self { task_id, owner, status, version }
    }
}

/// Work that must commit with a task write, or not at all.
///
/// Implement it on a type of yours, or pass a closure returning a boxed
/// future (`|tx, task| Box::pin(async move { … })`).
#[async_trait]
pub trait TransactionHook: Send + Sync {
    /// Adds the caller's rows for `task` on `tx`. An error rolls the whole
    /// transaction back.
    async fn run(&self, tx: &mut dyn StoreTransaction, task: WrittenTask<'_>) -> Result<(), HookError>;
}

#[async_trait]
impl<F> TransactionHook for F
where
    F: for<'a> Fn(
            &'a mut dyn StoreTransaction,
            WrittenTask<'a>,
        ) -> futures_util::future::BoxFuture<'a, Result<(), HookError>>
        + Send
        + Sync,
{
    async fn run(&self, tx: &mut dyn StoreTransaction, task: WrittenTask<'_>) -> Result<(), HookError> {
        self(tx, task).await
    }
}
