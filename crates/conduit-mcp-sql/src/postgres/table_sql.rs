//! What the extension's table (`conduit_tasks`) and the legacy era's
//! (`conduit_legacy_tasks`) share but for the table's name: the row's
//! compare-and-swap, made once per table, and the condition of each sweep.

use crate::common::Sweep;
use std::sync::LazyLock;

/// The extension's tasks: the compare-and-swap of one row.
pub(super) static TASKS_SWAP: LazyLock<String> = LazyLock::new(|| swap("conduit_tasks"));

/// The legacy era's tasks: the compare-and-swap of one row.
pub(super) static LEGACY_TASKS_SWAP: LazyLock<String> = LazyLock::new(|| swap("conduit_legacy_tasks"));

fn swap(t: &str) -> String {
    format!(
        "UPDATE {t} SET owner = $1, status = $2, version = $3, created_at_ms = $4, \
         expires_at_ms = $5, terminal_at_ms = $6, lease_node = $7, lease_expires_ms = $8, doc = $9::json \
         WHERE task_id = $10 AND version = $11"
    )
}

/// The rows one `sweep` deletes (`$1` the bound).
pub(super) fn sweep_condition(sweep: Sweep) -> &'static str {
    match sweep {
        Sweep::Expired => "expires_at_ms < $1",
        Sweep::FinishedUnlimited => "expires_at_ms IS NULL AND terminal_at_ms < $1",
    }
}
