//! What a pass runs: the workloads, the servers under test ([`Peer`]) and the
//! sizes and durations of the pass ([`Plan`]).

use crate::ours::StoreKind;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Workload {
    /// `tools/call greet`.
    W1,
    /// `tasks/get` on one live task.
    W2,
    /// `tasks/get` on random ids among the W4 table.
    W3,
    /// Task creation from 0 to the table size.
    W4,
    /// `tools/call greet` inside a 2025-11-25 session (one per connection).
    W8,
}

impl Workload {
    /// `W1` … `W4`.
    pub fn name(self) -> &'static str {
        match self {
            Self::W1 => "W1",
            Self::W2 => "W2",
            Self::W3 => "W3",
            Self::W4 => "W4",
            Self::W8 => "W8",
        }
    }
}

/// One of the servers under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Peer {
    /// conduit-mcp on this store: the bench server (`bench-server`).
    Ours(Store),
    /// The conformance fixture (`conduit-mcp-conformance`) on the library's default
    /// path, `http::serve`; W1 and W2 only.
    Fixture,
    /// The rmcp 3.11 peer.
    Rmcp,
    /// The bare axum echo.
    Echo,
}

/// [`StoreKind`] as it is recorded in the results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Store {
    /// `MemoryStore`.
    Memory,
    /// SQLite.
    Sqlite,
    /// PostgreSQL.
    Postgres,
}

impl From<StoreKind> for Store {
    fn from(k: StoreKind) -> Self {
        match k {
            StoreKind::Memory => Self::Memory,
            StoreKind::Sqlite => Self::Sqlite,
            StoreKind::Postgres => Self::Postgres,
        }
    }
}

impl From<Store> for StoreKind {
    fn from(s: Store) -> Self {
        match s {
            Store::Memory => Self::Memory,
            Store::Sqlite => Self::Sqlite,
            Store::Postgres => Self::Postgres,
        }
    }
}

impl Peer {
    /// The label used in tables and the chart.
    pub fn label(self) -> String {
        match self {
            Self::Ours(Store::Memory) => "conduit-mcp".into(),
            Self::Ours(s) => format!("conduit-mcp ({})", StoreKind::from(s)),
            Self::Fixture => "conduit-mcp fixture (http::serve)".into(),
            Self::Rmcp => "rmcp 3.11".into(),
            Self::Echo => "axum echo".into(),
        }
    }
}

/// Sizes and durations of one benchmark pass.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    /// Rounds (each server runs once per round, alternating).
    pub rounds: usize,
    /// Connection counts.
    pub conns: Vec<usize>,
    /// Warm-up before each measured phase.
    pub warmup_ms: u64,
    /// Measured phase of W1, W2, W3.
    pub measure_ms: u64,
    /// Tasks W4 creates (and W3 reads among).
    pub table: usize,
    /// W4 growth is reported per this many creates.
    pub bucket: usize,
    /// W4 stops after this long even if the table is not full (rmcp slows as it grows).
    pub create_cap_ms: u64,
    /// The same cap for ours on SQLite and PostgreSQL, whose creates are durable commits
    /// (shorter, so that the full pass stays under 20 minutes).
    #[serde(default = "default_sql_create_cap_ms")]
    pub sql_create_cap_ms: u64,
    /// Tasks W5 completes.
    pub notify_tasks: usize,
    /// Tasks in the W6 store.
    pub sweep_tasks: usize,
    /// Percentage of them expired.
    pub sweep_expired_percent: usize,
    /// W6 baseline length.
    pub sweep_baseline_ms: u64,
    /// Task stores ours runs on.
    pub stores: Vec<Store>,
    /// Whether this is the CI smoke pass.
    pub smoke: bool,
    /// Run only these workloads (`W1` … `W9`); empty runs all. W3, W4 and W7 run together.
    #[serde(default)]
    pub only: Vec<String>,
    /// Idle legacy sessions W9 opens.
    #[serde(default = "default_sessions")]
    pub sessions: usize,
}

impl Plan {
    /// The full pass `scripts/bench.sh` runs.
    pub fn full() -> Self {
        Self {
            rounds: 3,
            conns: vec![1, 50],
            warmup_ms: 1_000,
            measure_ms: 5_000,
            table: 100_000,
            bucket: 10_000,
            create_cap_ms: 30_000,
            sql_create_cap_ms: default_sql_create_cap_ms(),
            notify_tasks: 1_000,
            sweep_tasks: 1_000_000,
            sweep_expired_percent: 10,
            sweep_baseline_ms: 2_000,
            stores: vec![Store::Memory],
            smoke: false,
            only: Vec::new(),
            sessions: default_sessions(),
        }
    }

    /// The smoke pass: every workload for a quarter of a second on tiny sizes, one round.
    pub fn smoke() -> Self {
        Self {
            rounds: 1,
            conns: vec![1, 50],
            warmup_ms: 50,
            measure_ms: 250,
            table: 2_000,
            bucket: 500,
            create_cap_ms: 2_000,
            sql_create_cap_ms: 2_000,
            notify_tasks: 20,
            sweep_tasks: 20_000,
            sweep_expired_percent: 10,
            sweep_baseline_ms: 250,
            stores: vec![Store::Memory],
            smoke: true,
            only: Vec::new(),
            sessions: 200,
        }
    }

    /// The W4 time cap for a server of this pass.
    pub fn create_cap(&self, peer: Peer) -> Duration {
        match peer {
            Peer::Ours(Store::Sqlite | Store::Postgres) => Duration::from_millis(self.sql_create_cap_ms),
            _ => Duration::from_millis(self.create_cap_ms),
        }
    }

    /// Whether workload `name` (`W1` … `W9`) is part of this pass.
    pub fn runs(&self, name: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|w| w.eq_ignore_ascii_case(name))
    }

    /// The warm-up before each measured phase.
    pub fn warmup(&self) -> Duration {
        Duration::from_millis(self.warmup_ms)
    }

    /// The measured phase of W1, W2 and W3.
    pub fn measure(&self) -> Duration {
        Duration::from_millis(self.measure_ms)
    }
}

fn default_sessions() -> usize {
    10_000
}

fn default_sql_create_cap_ms() -> u64 {
    8_000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sql_stores_have_their_own_create_cap() {
        let plan = Plan::full();
        assert_eq!(plan.create_cap(Peer::Ours(Store::Memory)), Duration::from_millis(plan.create_cap_ms));
        assert_eq!(plan.create_cap(Peer::Rmcp), Duration::from_millis(plan.create_cap_ms));
        assert_eq!(plan.create_cap(Peer::Ours(Store::Postgres)), Duration::from_millis(plan.sql_create_cap_ms));
        assert!(plan.sql_create_cap_ms < plan.create_cap_ms);
    }

    #[test]
    fn plans_saved_before_the_sql_create_cap_still_read() {
        let mut plan = serde_json::to_value(Plan::full()).expect("plan");
        plan.as_object_mut().expect("object").remove("sql_create_cap_ms");
        let plan: Plan = serde_json::from_value(plan).expect("old plan");
        assert_eq!(plan.sql_create_cap_ms, default_sql_create_cap_ms());
    }
}
