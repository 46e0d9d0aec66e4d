//! The statements the extension's table (`conduit_tasks`) and the legacy era's
//! (`conduit_legacy_tasks`) share but for the table's name: written once here,
//! made once per table.

use crate::common::Sweep;
use std::sync::LazyLock;

/// One table's statements.
pub(super) struct TableSql {
    swap: String,
    delete_expired: String,
    delete_finished_unlimited: String,
}

/// The extension's tasks.
pub(super) static TASKS: LazyLock<TableSql> = LazyLock::new(|| TableSql::of("conduit_tasks"));

/// The legacy era's tasks.
pub(super) static LEGACY_TASKS: LazyLock<TableSql> = LazyLock::new(|| TableSql::of("conduit_legacy_tasks"));

impl TableSql {
    fn of(t: &str) -> Self {
        Self {
            swap: format!(
                "UPDATE {t} SET owner = ?1, status = ?2, version = ?3, created_at_ms = ?4, \
                 expires_at_ms = ?5, terminal_at_ms = ?6, lease_node = ?7, lease_expires_ms = ?8, doc = ?9 \
                 WHERE task_id = ?10 AND version = ?11"
            ),
            delete_expired: format!(
                "DELETE FROM {t} WHERE task_id IN \
                 (SELECT task_id FROM {t} WHERE expires_at_ms < ?1 LIMIT ?2) AND expires_at_ms < ?1"
            ),
            delete_finished_unlimited: format!(
                "DELETE FROM {t} WHERE task_id IN (SELECT task_id FROM {t} \
                 WHERE expires_at_ms IS NULL AND terminal_at_ms < ?1 LIMIT ?2) \
                 AND expires_at_ms IS NULL AND terminal_at_ms < ?1"
            ),
        }
    }

    /// The compare-and-swap of one row (the columns of `Swap`, then the id and the expected version).
    pub(super) fn swap(&'static self) -> &'static str {
        &self.swap
    }

    /// One batch of `sweep`'s rows deleted (`?1` the bound, `?2` the batch size).
    pub(super) fn delete(&'static self, sweep: Sweep) -> &'static str {
        match sweep {
            Sweep::Expired => &self.delete_expired,
            Sweep::FinishedUnlimited => &self.delete_finished_unlimited,
        }
    }
}
