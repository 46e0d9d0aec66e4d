//! Every statement SQLite runs on a task table but the inserts (which differ
//! by table: `group_commit` for the extension's, `legacy_store` for the
//! legacy era's): written once here, made once per table.

use super::terminal::TerminalSql;
use crate::common::{LIVE_STATUSES, Sweep, TableKind};
use std::sync::LazyLock;

/// One table's statements.
#[derive(Debug)]
pub struct TableSql {
    pub(super) read: String,
    pub(super) swap: String,
    delete_expired: String,
    delete_finished_unlimited: String,
    pub(super) renew: String,
    pub(super) renew_of: String,
    pub(super) lapsed: String,
    pub(super) leased_to: String,
    /// The legacy table's keyset page (only it has `list_owner`).
    pub(super) list_after: String,
    pub(super) terminal: TerminalSql,
}

static TASKS: LazyLock<TableSql> = LazyLock::new(|| TableSql::of(TableKind::Tasks));

static LEGACY_TASKS: LazyLock<TableSql> = LazyLock::new(|| TableSql::of(TableKind::Legacy));

/// The statements on table `kind`.
pub(super) fn of(kind: TableKind) -> &'static TableSql {
    match kind {
        TableKind::Tasks => &TASKS,
        TableKind::Legacy => &LEGACY_TASKS,
    }
}

/// The columns `decode_row` reads.
const ROW: &str = "version, lease_node, lease_expires_ms, doc";

impl TableSql {
    fn of(kind: TableKind) -> Self {
        let t = kind.table();
        Self {
            read: format!("SELECT {ROW} FROM {t} WHERE task_id = ?1"),
            swap: format!(
                "UPDATE {t} SET owner = ?1, status = ?2, version = ?3, created_at_ms = ?4, \
                 expires_at_ms = ?5, terminal_at_ms = ?6, lease_node = ?7, lease_expires_ms = ?8, doc = ?9, \
                 status_message = ?12, updated_at_ms = ?13 WHERE task_id = ?10 AND version = ?11"
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
            // The version moves too, so a compare-and-swap that read the old
            // lease (a recovery that judged it lapsed) fails and looks again.
            renew: format!(
                "UPDATE {t} SET lease_expires_ms = MAX(COALESCE(lease_expires_ms, 0), ?1), \
                 version = version + 1 WHERE lease_node = ?2 AND status IN {LIVE_STATUSES}"
            ),
            renew_of: format!(
                "UPDATE {t} SET lease_expires_ms = MAX(COALESCE(lease_expires_ms, 0), ?1), \
                 version = version + 1 WHERE lease_node = ?2 AND status IN {LIVE_STATUSES} \
                 AND task_id IN (SELECT value FROM json_each(?3))"
            ),
            lapsed: format!(
                "SELECT {ROW} FROM {t} WHERE lease_expires_ms < ?1 AND status IN {LIVE_STATUSES} \
                 AND (expires_at_ms IS NULL OR expires_at_ms >= ?1) ORDER BY lease_expires_ms LIMIT ?2"
            ),
            leased_to: format!(
                "SELECT {ROW} FROM {t} WHERE lease_node = ?1 AND status IN {LIVE_STATUSES} \
                 AND (expires_at_ms IS NULL OR expires_at_ms >= ?2) LIMIT ?3"
            ),
            list_after: format!(
                "SELECT {ROW} FROM {t} WHERE list_owner = ?1 AND (created_at_ms, task_id) > (?2, ?3) \
                 AND (expires_at_ms IS NULL OR expires_at_ms >= ?4) ORDER BY created_at_ms, task_id LIMIT ?5"
            ),
            terminal: TerminalSql::of(t),
        }
    }

    /// One batch of `sweep`'s rows deleted (`?1` the bound, `?2` the batch size).
    pub(super) fn delete(&'static self, sweep: Sweep) -> &'static str {
        match sweep {
            Sweep::Expired => &self.delete_expired,
            Sweep::FinishedUnlimited => &self.delete_finished_unlimited,
        }
    }
}
