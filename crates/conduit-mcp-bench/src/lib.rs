//! Benchmarks of conduit-mcp against the official Rust SDK (rmcp) and a bare axum
//! echo, side by side (issue 5), with the conformance fixture on the library's
//! default path (`http::serve`) beside our bench server. Not published.
//!
//! - [`ours`]: the bench server (`bench-server`): the conformance fixture's `greet`
//!   and `slow_compute` (from its library) on conduit-mcp, its store chosen with `--store`;
//! - [`sweep`]: W6, the janitor measured in process (`bench-server sweep`);
//! - [`wire`], [`client`], [`load`]: the requests, a minimal HTTP/1.1 client and
//!   the load generator;
//! - [`harness`]: the plan, the servers' processes, the runs; [`child`]: a server
//!   child process and the address it prints;
//! - [`follow`]: the library client following 1 000 tasks, by push and by polling;
//! - [`caps`]: the newer capabilities (the client's task ledger, the Events change
//!   log, DPoP-bound tokens) measured against themselves off;
//! - [`report`], [`chart`]: `docs/benchmarks.md` and its SVG chart;
//! - [`soak`]: the reference server's soak drivers, the `conduit-mcp-soak` binary
//!   (`scripts/soak.sh`; not a benchmark, here for the HTTP client it shares).
//!
//! `scripts/bench.sh` builds everything and runs the `conduit-mcp-bench` binary.

pub mod caps;
pub mod chart;
pub mod child;
pub mod client;
pub mod follow;
pub mod harness;
pub mod legacy_wire;
pub mod load;
pub mod ours;
pub mod procfs;
pub mod report;
pub mod soak;
pub mod stats;
pub mod sweep;
pub mod wire;
