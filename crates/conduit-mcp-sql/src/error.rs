//! Why a store could not be opened.

use conduit_mcp::task::StoreError;

/// Why [`SqliteStore::open`](crate::SqliteStore::open) or
/// [`PostgresStore::connect`](crate::PostgresStore::connect) refused to start.
///
/// Each variant's message says what was wrong and with which database, so it
/// can be shown to an operator as it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The path or URL could not be understood.
    #[error("invalid database address `{address}`: {detail}")]
    InvalidAddress {
        /// The address as given (a PostgreSQL password is never included).
        address: String,
        /// What is wrong with it.
        detail: String,
    },
    /// The file exists but is not an SQLite database (or is encrypted).
    #[error("`{path}` is not an SQLite database: {detail}")]
    NotADatabase {
        /// The file.
        path: String,
        /// What SQLite said.
        detail: String,
    },
    /// The file is an SQLite database, but damaged.
    #[error("`{path}` is corrupted: {detail}")]
    Corrupt {
        /// The file.
        path: String,
        /// What the integrity check found.
        detail: String,
    },
    /// The database has a table of ours that this crate did not create, or
    /// one whose columns are not the ones it expects.
    #[error("the database has a `{table}` table that is not a conduit-mcp-sql table: {detail}")]
    ForeignSchema {
        /// The table.
        table: String,
        /// What does not match.
        detail: String,
    },
    /// The schema was made by a newer release of this crate.
    #[error(
        "the database schema is at version {found}, newer than this conduit-mcp-sql understands ({supported}); \
         upgrade conduit-mcp-sql"
    )]
    NewerSchema {
        /// The highest migration applied to the database.
        found: i64,
        /// The highest migration this build ships ([`SCHEMA_VERSION`](crate::SCHEMA_VERSION)).
        supported: i64,
    },
    /// The database could not be reached or refused a statement while the
    /// store was opening (connect, migrate, check).
    #[error("could not open the task store: {0}")]
    Database(String),
}

impl From<OpenError> for StoreError {
    fn from(e: OpenError) -> Self {
        StoreError::backend(e.to_string(), e)
    }
}
