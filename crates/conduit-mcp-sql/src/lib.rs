//! SQLite and PostgreSQL stores for `conduit-mcp` servers: tasks that survive
//! a crash, and many nodes on one database. [`Stores`] opens every store a
//! server keeps from one URL (both eras' task stores, the `2025-11-25` era's
//! sessions, and on PostgreSQL a [`PgNotifier`] per era carrying changes
//! between nodes); underneath are the [`TaskStore`](conduit_mcp::ext::tasks::TaskStore)
//! backends [`SqliteStore`] (one file, one node, survives restarts) and
//! [`PostgresStore`] (one database, many nodes), and the transaction hooks
//! ([`postgres_connection`], [`sqlite_connection`]) that write a task and your
//! own rows (a job, an outbox entry) in one transaction.
//!
//! Both stores keep every task in one table, `conduit_tasks`: a few indexed columns
//! (owner, status, `version`, expiry, terminal time, lease) derived from the
//! record on every write, and the whole [`TaskRecord`](conduit_mcp::ext::tasks::TaskRecord)
//! as a JSON document. Their guarantees are the store contract of `conduit-mcp`,
//! proved by the same suite as the in-memory store
//! (`conduit_mcp::testing::store_contract`):
//!
//! - **Durable before acknowledged.** `create` commits before it returns, so a
//!   `tasks/get` on any connection — or any node — finds the task.
//! - **Compare-and-swap writes.** Every write is
//!   `UPDATE … WHERE task_id = ? AND version = ?`; a writer that lost the race
//!   reads again and re-applies its change. A client's `tasks/update` can never
//!   overwrite a worker's `completed`, and terminal rows never change.
//! - **Atomic row cap.** `create` bumps a one-row counter under the cap in the
//!   same transaction (or statement) as the insert; deletes decrement it. The
//!   per-principal cap (`create`'s `CreateCaps`) counts the owner's rows by an index,
//!   in the insert's transaction (PostgreSQL: under a per-owner advisory lock).
//! - **Group commit.** Creates that queue up behind the commit in flight are
//!   written together (SQLite: one transaction; PostgreSQL: one statement),
//!   the counter moved once per batch, each create failing alone.
//! - **Indexed expiry.** `cleanup` deletes by range on the `expires_at_ms` and
//!   `terminal_at_ms` indexes, in bounded batches, so a sweep costs what it removes.
//! - **Leases** (the node running a task's work) live in their own indexed
//!   columns and are authoritative over the document: renewal is one `UPDATE`.
//! - **Faults are errors, not losses.** A database that goes away turns into
//!   [`StoreError::Backend`](conduit_mcp::task::StoreError::Backend)
//!   (`-32603` on the wire); nothing already acknowledged is lost, and the pool
//!   reconnects when the database returns.
//!
//! Beside them, each engine keeps the legacy era's tasks (protocol
//! `2025-11-25`, listable per owner) in a table of their own,
//! `conduit_legacy_tasks`, with their own row cap: [`SqliteStore::legacy`]
//! and [`PostgresStore::legacy`] give a
//! [`LegacyTaskStore`](conduit_mcp::ext::tasks::legacy_store::LegacyTaskStore) that
//! shares the store's connections and passes the legacy contract suite
//! (`conduit_mcp::testing::legacy_store_contract`). Its `tasks/list` cursors
//! are sealed with a key kept in the database, so any node honours them. For
//! `tasks/result` to wake on every node, attach a [`PgNotifier`] (on a
//! channel of its own, e.g. `conduit_legacy_tasks`) to the
//! `LegacyTasks` handle, as for the extension's `Tasks`.
//!
//! Legacy sessions (`Mcp-Session-Id`) live there too: [`PostgresStore::sessions`]
//! is a [`SessionStore`](conduit_mcp::session::SessionStore) every node shares,
//! [`SqliteStore::sessions`] one that survives a restart (ids stored only as
//! their SHA-256, the session cap held for every node or process on the database).
//!
//! The schema is created and upgraded by migrations shipped in this crate
//! (`migrations/sqlite`, `migrations/postgres`), recorded in their own table,
//! `conduit_schema_migrations`, so they never collide with your application's
//! migrations in the same database. A database that has a `conduit_tasks`
//! table this crate did not make, or an SQLite file that is not a database or
//! is corrupted, is refused at open with an [`OpenError`].
//!
//! [`Stores`] opens all of it from one URL — `memory`, `sqlite:PATH` or
//! `postgres:URL` — and makes the `Tasks` handle of both eras over it, with
//! the notifiers attached:
//!
//! ```no_run
//! use conduit_mcp::prelude::*;
//! use conduit_mcp_sql::Stores;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let stores = Stores::open("sqlite:tasks.db").await?;
//! let tasks = stores.tasks(TasksConfig::enabled())?;
//! let server = Server::builder("app", "1.0.0")
//!     .sessions(stores.sessions(SessionConfig::default()))
//!     .extension(tasks.clone())
//!     .build()?;
//! # let _ = server;
//! # Ok(())
//! # }
//! ```
//!
//! Each store also stands alone, for a server that wires them itself:
//!
//! ```no_run
//! use conduit_mcp::clock::SystemClock;
//! use conduit_mcp::ext::tasks::{Tasks, TasksConfig};
//! use conduit_mcp_sql::SqliteStore;
//! use std::sync::Arc;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let clock = Arc::new(SystemClock);
//! let store = SqliteStore::open("tasks.db", clock.clone()).await?;
//! let tasks = Tasks::new(TasksConfig::enabled().store(Arc::new(store)))?;
//! # let _ = tasks;
//! # Ok(())
//! # }
//! ```
//!
//! Features: `sqlite` and `postgres` (both on by default) select the stores;
//! `postgres-tls` adds TLS (rustls) for `sslmode=require` connections.
//!
// The stores guide (docs/stores.md), its examples compiled as doc tests.
#![cfg_attr(
    any(not(doctest), all(feature = "sqlite", feature = "postgres")),
    doc = include_str!("../guides/stores.md")
)]
#![forbid(unsafe_code)]
// docs.rs builds with `--cfg docsrs`: every item shows the features it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod common;

/// Running a task's work in a job queue: the transaction hooks, resuming after a question, what
/// at-least-once delivery asks of a worker (`docs/jobs.md`).
pub mod jobs {
    #![cfg_attr(
        any(not(doctest), all(feature = "sqlite", feature = "postgres")),
        doc = include_str!("../guides/jobs.md")
    )]
}

mod error;
#[cfg(feature = "postgres")]
pub mod pg_notifier;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod pool;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;
mod stores;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod transaction;

#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub use common::{LegacyTable, SqlStore, TaskTable};
pub use error::OpenError;
#[cfg(feature = "postgres")]
pub use pg_notifier::PgNotifier;
#[cfg(all(feature = "postgres", feature = "oauth"))]
pub use postgres::PostgresDpopReplay;
#[cfg(feature = "postgres")]
pub use postgres::{
    PgEngine, PostgresLegacyStore, PostgresOptions, PostgresSessionStore, PostgresStore, PostgresWebhookStore,
};
#[cfg(all(feature = "sqlite", feature = "oauth"))]
pub use sqlite::SqliteDpopReplay;
#[cfg(feature = "sqlite")]
pub use sqlite::{SqliteEngine, SqliteLegacyStore, SqliteOptions, SqliteSessionStore, SqliteStore, SqliteWebhookStore};
pub use stores::{DEFAULT_LEGACY_CHANNEL, MAX_SCHEMA_LEN, Stores, StoresError, StoresOptions};
#[cfg(feature = "postgres")]
pub use transaction::postgres_connection;
#[cfg(feature = "sqlite")]
pub use transaction::sqlite_connection;

/// The schema version this build of the crate creates and understands
/// (the highest migration it ships; 43 is SQLite's alone, so a PostgreSQL
/// database records 42 at most).
pub const SCHEMA_VERSION: i64 = 43;

/// The crate README's example (the crates.io page) compiles.
#[cfg(all(doctest, feature = "sqlite"))]
#[doc = include_str!("../README.md")]
struct CrateReadmeDoctests;
