//! Servers that crash and servers side by side: `kill -9` and recovery (with and without the
//! janitor), node ids, two nodes on one store, a DPoP proof taken once across nodes, and a webhook
//! delivery taken over by the surviving node.

#[path = "../support/common/mod.rs"]
pub mod common;

mod crash;
mod dpop_replay;
mod event_cursors;
mod node_ids;
mod recovery_without_janitor;
mod two_nodes;
mod webhook_receiver;
mod webhook_takeover;
