//! The contract suites of `conduit_mcp::testing` on every SQL store: the
//! extension's tasks, the legacy era's tasks, sessions and webhook state, on
//! SQLite and on PostgreSQL.

mod legacy_postgres;
mod legacy_sqlite;
mod sessions_postgres;
mod sessions_sqlite;
mod tasks_postgres;
mod tasks_sqlite;
mod webhooks_postgres;
mod webhooks_sqlite;
