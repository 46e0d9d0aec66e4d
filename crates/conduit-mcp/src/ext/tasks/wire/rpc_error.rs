//! A store's refusal as the JSON-RPC error both eras answer with.

use crate::protocol::RpcError;
use crate::task::StoreError;
use serde_json::json;

/// The answer to a missing, foreign or expired task (the same words for all three).
const NOT_FOUND: &str = "Failed to retrieve task: Task not found";

/// The JSON-RPC error for a store's refusal: `-32602` for what the caller
/// named wrongly (a task, a cursor), `-32603` for a cap (`data.cap` names
/// which), a transaction hook that failed or that the store cannot run, or a
/// store that failed (each logged once per window, not per request).
pub(crate) fn store_error(e: StoreError) -> RpcError {
    match e {
        StoreError::NotFound => RpcError::invalid_params(NOT_FOUND),
        StoreError::InvalidCursor => RpcError::invalid_params("Invalid cursor"),
        StoreError::TaskLimitReached => {
            crate::metrics::task_refused_by_limit();
            RpcError::internal("Task limit reached").data(json!({ "cap": "server" }))
        }
        StoreError::OwnerLimitReached => {
            crate::metrics::task_refused_by_limit();
            RpcError::internal("Task limit reached").data(json!({ "cap": "principal" }))
        }
        StoreError::Hook { .. } => {
            if let Some(suppressed) = crate::log_limit::admit("task transaction hook failed") {
                tracing::warn!(error = %e, suppressed, "a task's transaction hook failed; nothing was written");
            }
            RpcError::internal("Internal error: the task could not be started")
        }
        StoreError::Unsupported(why) => {
            if let Some(suppressed) = crate::log_limit::admit("task store refused a transaction hook") {
                tracing::error!(reason = %why, suppressed, "the task store cannot run a transaction hook; nothing written");
            }
            RpcError::internal("Internal error: this server's task store cannot start the task")
        }
        e => {
            crate::metrics::store_error("request");
            if let Some(suppressed) = crate::log_limit::admit("task store failed") {
                tracing::error!(error = %e, suppressed, "task store failed");
            }
            RpcError::internal("Task store unavailable")
        }
    }
}
