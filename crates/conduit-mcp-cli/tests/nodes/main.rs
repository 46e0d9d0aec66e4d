//! Servers that crash and servers side by side: `kill -9` and recovery (with and without the
//! janitor), node ids, and two nodes on one store.

#[path = "../support/common/mod.rs"]
pub mod common;

mod crash;
mod event_cursors;
mod node_ids;
mod recovery_without_janitor;
mod two_nodes;
