//! The SQL stores' integration tests: one binary, a module per area.
//!
//! - `contract`: the `conduit-mcp` contract suites (tasks of both eras,
//!   sessions) on SQLite and PostgreSQL;
//! - `sqlite`: one file's faults, group commit and node-id lock;
//! - `postgres`: a database that goes away or stalls, many nodes on one
//!   database (both eras), the sharded row cap;
//! - `stores`: `Stores::open`, what opening refuses, and transaction hooks
//!   on both engines;
//! - `support`: what they share (temporary files and schemas, a stalling
//!   proxy, a 2025-11-25 session client).
//!
//! The PostgreSQL tests need `DATABASE_URL` (skipped without it, failed
//! without it under `CONDUIT_REQUIRE_POSTGRES=1`). No test sets process-wide
//! state: each works in its own file or schema, node-id locks are per file,
//! and the one tracing subscriber (`postgres::stalls`) is the test thread's own.

mod contract;
mod postgres;
mod sqlite;
mod stores;
mod support;
