//! [`Table`]: the task table a [`SqlStore`](super::SqlStore) keeps its rows
//! in — the extension's ([`TaskTable`], `conduit_tasks`) or the legacy era's
//! ([`LegacyTable`], `conduit_legacy_tasks`). Each engine makes its
//! statements for a table once, from its [`TableKind`].

use conduit_mcp::ext::tasks::legacy_store::CursorKey;

/// Which of the crate's two task tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableKind {
    /// `conduit_tasks`: the extension's tasks, on a sharded row counter (PostgreSQL).
    Tasks,
    /// `conduit_legacy_tasks`: the legacy era's tasks, listable per owner
    /// (`list_owner`), with a counter row of their own.
    Legacy,
}

impl TableKind {
    /// The table's name.
    pub(crate) fn table(self) -> &'static str {
        match self {
            TableKind::Tasks => "conduit_tasks",
            TableKind::Legacy => "conduit_legacy_tasks",
        }
    }
}

/// The task table of a [`SqlStore`](super::SqlStore), and what the store
/// keeps for it.
///
/// Sealed: the trait is not reachable from outside this crate.
pub trait Table: std::fmt::Debug + Send + Sync + 'static {
    /// Which table.
    const KIND: TableKind;
}

/// The extension's tasks (`conduit_tasks`): the table of a
/// [`SqliteStore`](crate::SqliteStore) and a [`PostgresStore`](crate::PostgresStore).
#[derive(Debug, Clone, Copy, Default)]
pub struct TaskTable;

impl Table for TaskTable {
    const KIND: TableKind = TableKind::Tasks;
}

/// The legacy era's tasks (`conduit_legacy_tasks`), with the key that seals
/// their `tasks/list` cursors (kept in the database, so every node on it
/// honours the others' cursors): the table of a
/// [`SqliteLegacyStore`](crate::SqliteLegacyStore) and a
/// [`PostgresLegacyStore`](crate::PostgresLegacyStore).
#[derive(Debug)]
pub struct LegacyTable {
    pub(crate) key: CursorKey,
}

impl Table for LegacyTable {
    const KIND: TableKind = TableKind::Legacy;
}
