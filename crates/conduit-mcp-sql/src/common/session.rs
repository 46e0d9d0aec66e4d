//! What both engines' session stores share: the id's hash (the only form of
//! it stored), the JSON columns, and how a row becomes a record again.

use conduit_mcp::session::{SessionError, SessionRecord};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use sqlx::{Decode, Type};

/// The stored form of a session id: its SHA-256 (the id itself is a bearer
/// capability and is never written).
pub(crate) fn id_hash(id: &str) -> Vec<u8> {
    Sha256::digest(id.as_bytes()).to_vec()
}

/// A backend error: what `engine` could not do, in its own words.
pub(crate) fn session_backend(
    engine: &str,
    what: &str,
    e: impl std::error::Error + Send + Sync + 'static,
) -> SessionError {
    SessionError::backend(format_args!("{engine}: cannot {what}"), e)
}

/// The capabilities and `clientInfo` as JSON text.
pub(crate) fn json_columns(engine: &str, record: &SessionRecord) -> Result<(String, String), SessionError> {
    let caps = serde_json::to_string(&record.client_capabilities)
        .map_err(|e| session_backend(engine, "encode capabilities", e))?;
    Ok((caps, record.client_info.clone()))
}

/// The columns a session read selects, in the order [`decode_session`] reads them.
#[cfg(feature = "sqlite")]
pub(crate) const SESSION_COLUMNS: &str = "owner, protocol_version, client_capabilities, client_info, log_level, \
                                           initialized, created_ms, last_seen_ms, client_key";

/// Rebuilds session `id` from a row selected as [`SESSION_COLUMNS`] (the JSON
/// columns as text).
pub(crate) fn decode_session<'r, R>(engine: &str, id: &str, row: &'r R) -> Result<SessionRecord, SessionError>
where
    R: sqlx::Row,
    usize: sqlx::ColumnIndex<R>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
    bool: Decode<'r, R::Database> + Type<R::Database>,
    String: Decode<'r, R::Database> + Type<R::Database>,
{
    let get = |e: sqlx::Error| session_backend(engine, "decode a session row", e);
    let owner: Option<String> = row.try_get(0).map_err(get)?;
    let version: String = row.try_get(1).map_err(get)?;
    let caps: String = row.try_get(2).map_err(get)?;
    let info: String = row.try_get(3).map_err(get)?;
    let created: i64 = row.try_get(6).map_err(get)?;
    let mut r = SessionRecord::new(id.to_owned(), owner, version, u64::try_from(created).unwrap_or(0));
    r.client_capabilities = serde_json::from_str::<Map<String, Value>>(&caps)
        .map_err(|e| session_backend(engine, "decode capabilities", e))?;
    r.client_info = info;
    r.log_level = row.try_get(4).map_err(get)?;
    r.initialized = row.try_get(5).map_err(get)?;
    r.last_seen_ms = u64::try_from(row.try_get::<i64, _>(7).map_err(get)?).unwrap_or(0);
    r.client_key = row.try_get(8).map_err(get)?;
    Ok(r)
}

/// The id digests a `DELETE … RETURNING id_hash` gave (what a create removed).
pub(crate) fn digests(rows: Vec<Vec<u8>>) -> Vec<[u8; 32]> {
    rows.into_iter().filter_map(|h| <[u8; 32]>::try_from(h.as_slice()).ok()).collect()
}
