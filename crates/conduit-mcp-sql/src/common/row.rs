//! The row layout: the columns every write derives from a record, how they
//! are bound, and how a row becomes a record again.

use super::ms;
use conduit_mcp::ext::tasks::{Lease, TaskRecord};
use conduit_mcp::task::StoreError;
use sqlx::{Database, Decode, Encode, Type};

/// The columns every write derives from the record.
#[derive(Debug)]
pub(crate) struct Columns {
    pub owner: Option<String>,
    pub status: &'static str,
    pub version: i64,
    pub created_at_ms: i64,
    pub expires_at_ms: Option<i64>,
    pub terminal_at_ms: Option<i64>,
    pub lease_node: Option<String>,
    pub lease_expires_ms: Option<i64>,
    pub doc: String,
    /// The status message and the last update, columns of their own on
    /// SQLite (its change log's triggers read them; PostgreSQL reads the
    /// document): bound by [`Columns::bind_change`].
    pub status_message: Option<String>,
    pub updated_at_ms: i64,
}

impl Columns {
    pub(crate) fn of(record: &TaskRecord) -> Result<Self, StoreError> {
        let doc = serde_json::to_string(record)
            .map_err(|e| StoreError::backend(format!("cannot encode the task record as JSON: {e}"), e))?;
        Ok(Self {
            owner: record.owner.clone(),
            status: record.status.as_str(),
            version: ms(record.version),
            created_at_ms: ms(record.created_at_ms),
            expires_at_ms: record.expires_at_ms().map(ms),
            terminal_at_ms: record.terminal_at_ms.map(ms),
            lease_node: record.lease.as_ref().map(|l| l.node.clone()),
            lease_expires_ms: record.lease.as_ref().map(|l| ms(l.expires_at_ms)),
            doc,
            status_message: record.status_message.clone(),
            updated_at_ms: ms(record.last_updated_at_ms),
        })
    }
}

impl Columns {
    /// Binds the nine columns after the id, in table order (`owner` … `doc`).
    /// The values are encoded as they are bound, so the query does not
    /// borrow them.
    pub(crate) fn bind<'a, 'q, DB>(&'a self, q: Query<'q, DB>) -> Query<'q, DB>
    where
        DB: Database,
        &'a str: Encode<'a, DB> + Type<DB>,
        Option<&'a str>: Encode<'a, DB> + Type<DB>,
        i64: Encode<'a, DB> + Type<DB>,
        Option<i64>: Encode<'a, DB> + Type<DB>,
    {
        q.bind(self.owner.as_deref())
            .bind(self.status)
            .bind(self.version)
            .bind(self.created_at_ms)
            .bind(self.expires_at_ms)
            .bind(self.terminal_at_ms)
            .bind(self.lease_node.as_deref())
            .bind(self.lease_expires_ms)
            .bind(self.doc.as_str())
    }

    /// Binds `status_message` and `updated_at_ms` (SQLite's statements, after
    /// whatever comes before them).
    pub(crate) fn bind_change<'a, 'q, DB>(&'a self, q: Query<'q, DB>) -> Query<'q, DB>
    where
        DB: Database,
        Option<&'a str>: Encode<'a, DB> + Type<DB>,
        i64: Encode<'a, DB> + Type<DB>,
    {
        q.bind(self.status_message.as_deref()).bind(self.updated_at_ms)
    }
}

/// A statement with its arguments, on any engine.
pub(crate) type Query<'q, DB> = sqlx::query::Query<'q, DB, <DB as Database>::Arguments>;

/// A backend error: what `engine` could not do, with the driver's error as the source.
pub(crate) fn backend(engine: &str, what: &str, e: sqlx::Error) -> StoreError {
    StoreError::backend(format!("{engine}: cannot {what}: {e}"), e)
}

/// Rebuilds a record from a row selected as `version, lease_node,
/// lease_expires_ms, doc`: the document, with `version` and the lease taken
/// from their columns (which are authoritative).
pub(crate) fn decode_row<'r, R>(engine: &str, row: &'r R) -> Result<TaskRecord, StoreError>
where
    R: sqlx::Row,
    usize: sqlx::ColumnIndex<R>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    &'r str: Decode<'r, R::Database> + Type<R::Database>,
{
    let get = |e: sqlx::Error| backend(engine, "decode a task row", e);
    let version: i64 = row.try_get(0).map_err(get)?;
    let lease_node: Option<String> = row.try_get(1).map_err(get)?;
    let lease_expires_ms: Option<i64> = row.try_get(2).map_err(get)?;
    let doc: &str = row.try_get(3).map_err(get)?;
    let mut record: TaskRecord = serde_json::from_str(doc)
        .map_err(|e| StoreError::backend(format!("{engine}: a stored task document is unreadable: {e}"), e))?;
    record.version = u64::try_from(version).unwrap_or(0);
    record.lease = match (lease_node, lease_expires_ms) {
        (Some(node), Some(exp)) => Some(Lease { node, expires_at_ms: u64::try_from(exp).unwrap_or(0) }),
        _ => None,
    };
    Ok(record)
}
