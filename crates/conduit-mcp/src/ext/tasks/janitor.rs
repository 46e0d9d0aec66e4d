//! The janitor: runs the store's cleanup on a schedule.

use super::config::JanitorConfig;
use super::store::StoreError;
use super::worker::Tasks;

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
            tracing::info!(target: "conduit_mcp::ext_tasks::cleanup", removed, store = store.name(), "task cleanup");
            Ok(removed)
        }
        Err(e) => {
            tracing::warn!(target: "conduit_mcp::ext_tasks::cleanup", error = %e, store = store.name(), "task cleanup failed");
            Err(e)
        }
    }
}

impl JanitorConfig {
    /// The default age for evicting terminal unlimited-TTL tasks (1 hour).
    pub fn default_ttl() -> std::time::Duration {
        std::time::Duration::from_secs(3600)
    }
}
