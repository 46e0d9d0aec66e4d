//! `SqliteSessionStore`: legacy (`2025-11-25`) sessions in the SQLite file,
//! so they survive a restart of the one node that serves them.

use super::{SqliteStore, broken};
use crate::common::{self, SESSION_COLUMNS};
use crate::pool::bounded;
use async_trait::async_trait;
use conduit_mcp::session::{self as store, SessionError, SessionLimits, SessionRecord, SessionStore};
use sqlx::AssertSqlSafe;
use sqlx::Connection;

const ENGINE: &str = "sqlite";

/// Legacy sessions in an SQLite database (`conduit_legacy_sessions`), through
/// the store's connections (writes on its one writer, in order). Made by
/// [`SqliteStore::sessions`].
///
/// Only the SHA-256 of a session id is stored. A `create` runs in one
/// `BEGIN IMMEDIATE` transaction: at the cap it drops expired sessions, then
/// evicts the oldest idle ones, then inserts, so the cap holds for every
/// process on the file.
#[derive(Debug, Clone)]
pub struct SqliteSessionStore {
    store: SqliteStore,
}

impl SqliteStore {
    /// The session store in the same database (its table is created by the
    /// same migrations).
    pub fn sessions(&self) -> SqliteSessionStore {
        SqliteSessionStore { store: self.clone() }
    }
}

fn backend(what: &str, e: impl std::error::Error + Send + Sync + 'static) -> SessionError {
    common::session_backend(ENGINE, what, e)
}

fn connect(e: conduit_mcp::task::StoreError) -> SessionError {
    SessionError::backend(ENGINE, e)
}

/// How a create's transaction ended.
enum Created {
    Yes(Vec<Vec<u8>>),
    Duplicate,
    Full,
    ClientFull,
}

impl SqliteSessionStore {
    /// Runs one write statement on the writer; returns the rows it changed.
    async fn write(&self, what: &str, q: super::SqlQuery<'_>) -> Result<u64, SessionError> {
        let mut c = self.store.engine().writer().await.map_err(connect)?;
        let done = bounded(c.deadline(), q.execute(c.conn())).await.map(|r| r.rows_affected());
        c.finish(done, broken).map_err(|e| backend(what, e))
    }
}

#[async_trait]
impl SessionStore for SqliteSessionStore {
    async fn create(&self, record: SessionRecord, limits: SessionLimits) -> Result<store::Created, SessionError> {
        let (caps, info) = common::json_columns(ENGINE, &record)?;
        let now = common::ms(record.last_seen_ms);
        let expired_bound = now.saturating_sub(common::ms(limits.idle_ms));
        let evict_bound = now.saturating_sub(common::ms(limits.evict_idle_ms));
        let (max, max_client) = (common::limit(limits.max_sessions), common::limit(limits.per_client()));
        let hash = common::id_hash(&record.id);
        let mut c = self.store.engine().writer().await.map_err(connect)?;
        let done: Result<Created, sqlx::Error> = bounded(c.deadline(), async {
            let mut tx = c.conn().begin_with("BEGIN IMMEDIATE").await?;
            let exists: Option<i64> = sqlx::query_scalar("SELECT 1 FROM conduit_legacy_sessions WHERE id_hash = ?1")
                .bind(hash.as_slice())
                .fetch_optional(&mut *tx)
                .await?;
            if exists.is_some() {
                tx.rollback().await?;
                return Ok(Created::Duplicate);
            }
            let mut removed: Vec<Vec<u8>> = Vec::new();
            // The client's own cap first: its oldest idle session makes room.
            let held: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM conduit_legacy_sessions WHERE client_key = ?1 AND last_seen_ms > ?2",
            )
            .bind(record.client_key.as_str())
            .bind(expired_bound)
            .fetch_one(&mut *tx)
            .await?;
            if held >= max_client {
                let need = held - max_client + 1;
                let evicted: Vec<Vec<u8>> = sqlx::query_scalar(
                    "DELETE FROM conduit_legacy_sessions WHERE id_hash IN (SELECT id_hash FROM conduit_legacy_sessions \
                     WHERE client_key = ?1 AND last_seen_ms > ?2 AND last_seen_ms <= ?3 ORDER BY last_seen_ms LIMIT ?4) \
                     RETURNING id_hash",
                )
                .bind(record.client_key.as_str())
                .bind(expired_bound)
                .bind(evict_bound)
                .bind(need)
                .fetch_all(&mut *tx)
                .await?;
                if i64::try_from(evicted.len()).unwrap_or(0) < need {
                    tx.rollback().await?;
                    return Ok(Created::ClientFull);
                }
                removed.extend(evicted);
            }
            let count = "SELECT n FROM conduit_legacy_session_count WHERE id = 1";
            let mut n: i64 = sqlx::query_scalar(count).fetch_one(&mut *tx).await?;
            if n >= max {
                let expired: Vec<Vec<u8>> =
                    sqlx::query_scalar("DELETE FROM conduit_legacy_sessions WHERE last_seen_ms <= ?1 RETURNING id_hash")
                        .bind(expired_bound)
                        .fetch_all(&mut *tx)
                        .await?;
                removed.extend(expired);
                n = sqlx::query_scalar(count).fetch_one(&mut *tx).await?;
            }
            if n >= max {
                let need = n - max + 1;
                let evicted: Vec<Vec<u8>> = sqlx::query_scalar(
                    "DELETE FROM conduit_legacy_sessions WHERE id_hash IN (SELECT id_hash FROM conduit_legacy_sessions \
                     WHERE last_seen_ms <= ?1 ORDER BY last_seen_ms LIMIT ?2) RETURNING id_hash",
                )
                .bind(evict_bound)
                .bind(need)
                .fetch_all(&mut *tx)
                .await?;
                if i64::try_from(evicted.len()).unwrap_or(0) < need {
                    tx.rollback().await?;
                    return Ok(Created::Full);
                }
                removed.extend(evicted);
            }
            sqlx::query(
                "INSERT INTO conduit_legacy_sessions (id_hash, owner, protocol_version, client_capabilities, \
                 client_info, log_level, initialized, created_ms, last_seen_ms, client_key) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            )
            .bind(hash.as_slice())
            .bind(record.owner.as_deref())
            .bind(record.protocol_version.as_str())
            .bind(caps.as_str())
            .bind(info.as_str())
            .bind(record.log_level.as_deref())
            .bind(record.initialized)
            .bind(common::ms(record.created_ms))
            .bind(now)
            .bind(record.client_key.as_str())
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(Created::Yes(removed))
        })
        .await;
        match c.finish(done, broken) {
            Ok(Created::Yes(removed)) => Ok(store::Created::new(common::digests(removed))),
            Ok(Created::Duplicate) => Err(SessionError::Duplicate),
            Ok(Created::Full) => Err(SessionError::LimitReached),
            Ok(Created::ClientFull) => Err(SessionError::ClientLimitReached),
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => Err(SessionError::Duplicate),
            Err(e) => Err(backend("create a session", e)),
        }
    }

    async fn touch(
        &self,
        id: &str,
        owner: Option<&str>,
        now_ms: u64,
        idle_ms: u64,
    ) -> Result<SessionRecord, SessionError> {
        let (now, idle) = (common::ms(now_ms), common::ms(idle_ms));
        let sql = format!(
            "UPDATE conduit_legacy_sessions SET last_seen_ms = MAX(last_seen_ms, ?3) \
             WHERE id_hash = ?1 AND owner IS ?2 AND last_seen_ms + ?4 > ?3 RETURNING {SESSION_COLUMNS}"
        );
        let mut c = self.store.engine().writer().await.map_err(connect)?;
        let q = sqlx::query(AssertSqlSafe(sql)).bind(common::id_hash(id)).bind(owner).bind(now).bind(idle);
        let row = bounded(c.deadline(), q.fetch_optional(c.conn())).await;
        let row = c.finish(row, broken).map_err(|e| backend("touch a session", e))?;
        match row {
            Some(row) => common::decode_session(ENGINE, id, &row),
            None => {
                // Expired: gone for good (whoever asked: nobody may use it any more).
                let q = sqlx::query("DELETE FROM conduit_legacy_sessions WHERE id_hash = ?1 AND last_seen_ms <= ?2")
                    .bind(common::id_hash(id))
                    .bind(now.saturating_sub(idle));
                self.write("drop an expired session", q).await?;
                Err(SessionError::NotFound)
            }
        }
    }

    async fn update(&self, record: &SessionRecord) -> Result<(), SessionError> {
        let (caps, _) = common::json_columns(ENGINE, record)?;
        let q = sqlx::query(
            "UPDATE conduit_legacy_sessions SET client_capabilities = ?3, log_level = ?4, initialized = ?5, \
             last_seen_ms = MAX(last_seen_ms, ?6) WHERE id_hash = ?1 AND owner IS ?2",
        )
        .bind(common::id_hash(&record.id))
        .bind(record.owner.as_deref())
        .bind(caps)
        .bind(record.log_level.as_deref())
        .bind(record.initialized)
        .bind(common::ms(record.last_seen_ms));
        match self.write("update a session", q).await? {
            0 => Err(SessionError::NotFound),
            _ => Ok(()),
        }
    }

    async fn delete(&self, id: &str, owner: Option<&str>) -> Result<(), SessionError> {
        let q = sqlx::query("DELETE FROM conduit_legacy_sessions WHERE id_hash = ?1 AND owner IS ?2")
            .bind(common::id_hash(id))
            .bind(owner);
        match self.write("delete a session", q).await? {
            0 => Err(SessionError::NotFound),
            _ => Ok(()),
        }
    }

    async fn sweep(&self, now_ms: u64, idle_ms: u64) -> Result<usize, SessionError> {
        let bound = common::ms(now_ms).saturating_sub(common::ms(idle_ms));
        let q = sqlx::query("DELETE FROM conduit_legacy_sessions WHERE last_seen_ms <= ?1").bind(bound);
        let n = self.write("sweep idle sessions", q).await?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    async fn count(&self) -> Result<usize, SessionError> {
        let mut c = self.store.engine().reader().await.map_err(connect)?;
        let q = sqlx::query_scalar::<_, i64>("SELECT count(*) FROM conduit_legacy_sessions");
        let n = bounded(c.deadline(), q.fetch_one(c.conn())).await;
        let n = c.finish(n, broken).map_err(|e| backend("count sessions", e))?;
        Ok(usize::try_from(n).unwrap_or(0))
    }
}
