//! What drives tasks: the [`Tasks`] handle and its by-id worker calls, the
//! supervised launch of `spawn`ed and resumable work with its leases, the
//! caps' rule for terminal tasks on create and end (`terminal`), recovery of
//! tasks whose node stopped, the janitor, change notification, the
//! per-client create rate, and the runtime's configuration ([`TasksConfig`],
//! from code or the `[ext_tasks]` TOML value). [`LegacyTasks`] is the same
//! runtime over the `2025-11-25` era's listable store.
//!
//! It drives tasks through the [`store`](super::store) room and knows nothing
//! of the wire.

pub(crate) mod changes;
mod config;
pub(crate) mod config_toml;
mod create_rate;
mod janitor;
mod launch;
mod legacy_tasks;
mod notifier;
mod recovery;
mod terminal;
mod worker;

pub use config::{JanitorConfig, NotifierConfig, TasksConfig};
pub(crate) use janitor::start_janitor;
pub use janitor::sweep;
pub(crate) use launch::{Work, launch, new_lease};
pub use legacy_tasks::LegacyTasks;
pub use notifier::{ListenNotifier, Notifier};
pub use recovery::{Recovery, recover, recover_own};
pub(crate) use terminal::{ended, store_new};
pub use worker::Tasks;
