//! The janitor: the store's cleanup, and the schedule that runs it (and the
//! lease recovery checks) in the background.

use super::config::JanitorConfig;
use super::recovery::{recover, recover_own};
use super::worker::Tasks;
use crate::ext::tasks::store::Owner;
use crate::task::StoreError;

/// Runs one sweep now: evicts expired tasks (and old terminal unlimited-TTL
/// ones) and emits the `conduit_mcp::ext_tasks::cleanup` event with `removed`
/// and `store`. The scheduled janitor calls this every `interval`.
pub async fn sweep(tasks: &Tasks) -> Result<usize, StoreError> {
    let ttl = match tasks.config().janitor {
        JanitorConfig::Every { ttl, .. } => ttl,
        JanitorConfig::Disabled => JanitorConfig::default_ttl(),
    };
    let store = tasks.store();
    match store.cleanup(ttl.as_millis() as u64).await {
        Ok(removed) => {
            crate::metrics::sweep(removed);
            // Every sweep emits the event; one that removed nothing only at DEBUG.
            if removed > 0 {
                tracing::info!(target: "conduit_mcp::ext_tasks::cleanup", removed, store = store.name(), "task cleanup");
            } else {
                tracing::debug!(target: "conduit_mcp::ext_tasks::cleanup", removed, store = store.name(), "task cleanup");
            }
            if removed > 0 {
                forget_swept(tasks).await;
            }
            Ok(removed)
        }
        Err(e) => {
            crate::metrics::store_error("cleanup");
            tracing::warn!(target: "conduit_mcp::ext_tasks::cleanup", error = %e, store = store.name(), "task cleanup failed");
            Err(e)
        }
    }
}

/// Drops the listen-index entries of watched tasks that no longer exist
/// (swept, or expired): their streams will never hear of them again.
async fn forget_swept(tasks: &Tasks) {
    let listen = tasks.listen_notifier();
    for id in listen.watched() {
        if let Err(StoreError::NotFound) = tasks.store().get(&id, Owner::Any).await {
            listen.forget(&id);
        }
    }
}

impl JanitorConfig {
    /// The default age for evicting terminal unlimited-TTL tasks (1 hour).
    pub fn default_ttl() -> std::time::Duration {
        std::time::Duration::from_secs(3600)
    }
}

/// Starts the background schedule (once) if a runtime is running: this
/// node's own earlier tasks are recovered first, then lapsed leases are
/// checked every tenth of the lease period — always, with or without a
/// janitor — and, when the configuration has one, a sweep runs every
/// `interval`. The extension's start hook calls it.
pub(crate) fn start_janitor(tasks: &Tasks) {
    if tokio::runtime::Handle::try_current().is_err() {
        return;
    }
    let me = tasks.clone();
    tasks.inner.janitor.call_once(move || {
        let shutdown = me.inner.shutdown.clone();
        let tracker = me.inner.tracker.clone();
        // The schedules start now, not when the task is first polled.
        let start = tokio::time::Instant::now();
        let mut sweeps = match me.inner.config.janitor {
            JanitorConfig::Every { interval, .. } => {
                let mut t = tokio::time::interval_at(start + interval, interval);
                t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                Some(t)
            }
            JanitorConfig::Disabled => None,
        };
        // Recovery checks are cheap (an indexed query): run them often, so a
        // lapsed lease is noticed within a tenth of the period.
        let every = me.inner.config.lease / 10;
        let mut check = tokio::time::interval_at(start, every);
        check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tracker.spawn(async move {
            if let Err(e) = recover_own(&me).await {
                tracing::warn!(error = %e, "could not recover this node's earlier tasks");
            }
            loop {
                let sweep_due = async {
                    match sweeps.as_mut() {
                        Some(t) => {
                            t.tick().await;
                        }
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    () = sweep_due => { let _ = sweep(&me).await; }
                    _ = check.tick() => {
                        if let Err(e) = recover(&me).await {
                            tracing::warn!(error = %e, "lease recovery failed");
                        }
                    }
                    _ = shutdown.cancelled() => break,
                }
            }
        });
    });
}
