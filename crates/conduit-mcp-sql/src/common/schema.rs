//! The schema: the migrations an engine ships, and the rules that admit a
//! database that already has tables.

use crate::SCHEMA_VERSION;
use crate::error::OpenError;

/// One schema migration shipped with the crate.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Migration {
    pub version: i64,
    pub description: &'static str,
    pub sql: &'static str,
}

/// The columns `conduit_tasks` must have (a table without them is foreign).
const TASK_COLUMNS: [&str; 10] = [
    "task_id",
    "owner",
    "status",
    "version",
    "created_at_ms",
    "expires_at_ms",
    "terminal_at_ms",
    "lease_node",
    "lease_expires_ms",
    "doc",
];

/// Checks an existing `conduit_tasks` table: it has our columns, and our
/// migrations table stands beside it (else another program made it).
pub(crate) fn check_task_table(columns: &[String], has_migrations_table: bool) -> Result<(), OpenError> {
    let missing: Vec<&str> = TASK_COLUMNS.iter().copied().filter(|c| !columns.iter().any(|f| f == c)).collect();
    if !missing.is_empty() {
        return Err(foreign(format!("it lacks the column(s) {}", missing.join(", "))));
    }
    if !has_migrations_table {
        return Err(foreign(
            "it was not created by conduit-mcp-sql (there is no conduit_schema_migrations table)".into(),
        ));
    }
    Ok(())
}

/// Checks the highest migration recorded (`0`: none): not newer than this
/// build, and not none beside an existing `conduit_tasks` table.
pub(crate) fn check_applied(applied: i64, has_task_table: bool) -> Result<(), OpenError> {
    if applied > SCHEMA_VERSION {
        return Err(OpenError::NewerSchema { found: applied, supported: SCHEMA_VERSION });
    }
    if applied == 0 && has_task_table {
        return Err(foreign("it was not created by conduit-mcp-sql (no migration is recorded)".into()));
    }
    Ok(())
}

fn foreign(detail: String) -> OpenError {
    OpenError::ForeignSchema { table: "conduit_tasks".into(), detail }
}
