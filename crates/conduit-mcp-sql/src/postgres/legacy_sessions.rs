//! `PostgresSessionStore`: legacy (`2025-11-25`) sessions in PostgreSQL, so
//! any node serves any session's requests.

use super::{PostgresStore, is_connection_error};
use crate::common;
use crate::pool::bounded;
use async_trait::async_trait;
use conduit_mcp::session::{self as store, SessionError, SessionLimits, SessionRecord, SessionStore};
use sqlx::AssertSqlSafe;
use sqlx::Row;
use sqlx::postgres::PgRow;

/// Legacy sessions in PostgreSQL (`conduit_legacy_sessions`), shared by every
/// node on the schema. Made by [`PostgresStore::sessions`]; shares its pool.
///
/// Session ids are bearer capabilities, so only their SHA-256 is stored: a
/// read of the table does not yield a usable id. The cap on live sessions
/// holds across nodes: a `create` locks a one-row counter until it commits,
/// drops expired sessions and evicts the oldest idle ones in the same
/// transaction when it needs room.
#[derive(Debug, Clone)]
pub struct PostgresSessionStore {
    store: PostgresStore,
}

impl PostgresStore {
    /// The session store in the same schema (its table is created by the
    /// same migrations).
    pub fn sessions(&self) -> PostgresSessionStore {
        PostgresSessionStore { store: self.clone() }
    }
}

const ENGINE: &str = "postgres";

fn hash(id: &str) -> Vec<u8> {
    common::id_hash(id)
}

fn ms(v: u64) -> i64 {
    common::ms(v)
}

fn backend(what: &str, e: impl std::error::Error + Send + Sync + 'static) -> SessionError {
    common::session_backend(ENGINE, what, e)
}

fn decode(id: &str, row: &PgRow) -> Result<SessionRecord, SessionError> {
    common::decode_session(ENGINE, id, row)
}

/// How a create's transaction ended.
enum Created {
    Yes(Vec<Vec<u8>>),
    Duplicate,
    Full,
    ClientFull,
}

/// A statement that deletes the rows `condition` selects and lowers the
/// counter with them; it returns how many went.
fn delete_counted(condition: &str) -> String {
    format!(
        "WITH gone AS (DELETE FROM conduit_legacy_sessions WHERE {condition} RETURNING 1), \
              k AS (SELECT count(*) AS k FROM gone) \
         UPDATE conduit_legacy_session_count SET n = GREATEST(n - (SELECT k FROM k), 0) WHERE id = 1 \
         RETURNING (SELECT k FROM k)"
    )
}

type Scalar<'q> = sqlx::query::QueryScalar<'q, sqlx::Postgres, i64, sqlx::postgres::PgArguments>;

impl PostgresSessionStore {
    /// Moves `last_seen_ms` of live session `id` of `owner` to `now_ms` and returns the
    /// columns `returning` names; an expired session is deleted and `NotFound`.
    async fn touched(
        &self,
        id: &str,
        owner: Option<&str>,
        now_ms: u64,
        idle_ms: u64,
        returning: &str,
    ) -> Result<PgRow, SessionError> {
        let sql = format!(
            "UPDATE conduit_legacy_sessions SET last_seen_ms = GREATEST(last_seen_ms, $3) \
             WHERE id_hash = $1 AND owner IS NOT DISTINCT FROM $2 AND last_seen_ms + $4 > $3 RETURNING {returning}"
        );
        let mut c = self.store.engine().conn().await.map_err(|e| SessionError::backend(ENGINE, e))?;
        let q = sqlx::query(AssertSqlSafe(sql)).bind(hash(id)).bind(owner).bind(ms(now_ms)).bind(ms(idle_ms));
        let row = bounded(c.deadline(), q.fetch_optional(c.conn())).await;
        match c.finish(row, is_connection_error).map_err(|e| backend("touch a session", e))? {
            Some(row) => Ok(row),
            None => {
                // Expired: gone for good (its owner is not checked: nobody may use it any more).
                let bound = ms(now_ms).saturating_sub(ms(idle_ms));
                let sql = delete_counted("id_hash = $1 AND last_seen_ms <= $2");
                self.delete_where("drop an expired session", sql, |q| q.bind(hash(id)).bind(bound)).await?;
                Err(SessionError::NotFound)
            }
        }
    }

    /// Runs a [`delete_counted`] statement with its parameters bound by `bind`.
    async fn delete_where<'q>(
        &self,
        what: &str,
        sql: String,
        bind: impl FnOnce(Scalar<'q>) -> Scalar<'q>,
    ) -> Result<u64, SessionError> {
        let mut c = self.store.engine().conn().await.map_err(|e| SessionError::backend(ENGINE, e))?;
        let gone =
            bounded(c.deadline(), bind(sqlx::query_scalar::<_, i64>(AssertSqlSafe(sql))).fetch_one(c.conn())).await;
        let gone = c.finish(gone, is_connection_error).map_err(|e| backend(what, e))?;
        Ok(u64::try_from(gone).unwrap_or(0))
    }
}

#[async_trait]
impl SessionStore for PostgresSessionStore {
    async fn create(&self, record: SessionRecord, limits: SessionLimits) -> Result<store::Created, SessionError> {
        let (caps, info) = common::json_columns(ENGINE, &record)?;
        let now = ms(record.last_seen_ms);
        let expired_bound = now.saturating_sub(ms(limits.idle_ms));
        let evict_bound = now.saturating_sub(ms(limits.evict_idle_ms));
        let (max, max_client) = (common::limit(limits.max_sessions), common::limit(limits.per_client()));
        let mut c = self.store.engine().conn().await.map_err(|e| SessionError::backend(ENGINE, e))?;
        let done: Result<Created, sqlx::Error> = bounded(c.deadline(), async {
            use sqlx::Connection;
            let mut tx = c.conn().begin().await?;
            // The counter row's lock orders creates on every node until this commits.
            let mut n: i64 = sqlx::query_scalar("SELECT n FROM conduit_legacy_session_count WHERE id = 1 FOR UPDATE")
                .fetch_one(&mut *tx)
                .await?;
            let exists: Option<i32> = sqlx::query_scalar("SELECT 1 FROM conduit_legacy_sessions WHERE id_hash = $1")
                .bind(hash(&record.id))
                .fetch_optional(&mut *tx)
                .await?;
            if exists.is_some() {
                tx.rollback().await?;
                return Ok(Created::Duplicate);
            }
            let mut removed: Vec<Vec<u8>> = Vec::new();
            // The client's own cap first: its oldest idle session makes room.
            let held: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM conduit_legacy_sessions WHERE client_key = $1 AND last_seen_ms > $2",
            )
            .bind(record.client_key.as_str())
            .bind(expired_bound)
            .fetch_one(&mut *tx)
            .await?;
            if held >= max_client {
                let need = held - max_client + 1;
                let evicted: Vec<Vec<u8>> = sqlx::query_scalar(
                    "DELETE FROM conduit_legacy_sessions WHERE id_hash IN (SELECT id_hash FROM conduit_legacy_sessions \
                     WHERE client_key = $1 AND last_seen_ms > $2 AND last_seen_ms <= $3 ORDER BY last_seen_ms LIMIT $4) \
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
                n -= need;
                removed.extend(evicted);
            }
            if n >= max {
                let expired: Vec<Vec<u8>> =
                    sqlx::query_scalar("DELETE FROM conduit_legacy_sessions WHERE last_seen_ms <= $1 RETURNING id_hash")
                        .bind(expired_bound)
                        .fetch_all(&mut *tx)
                        .await?;
                n -= i64::try_from(expired.len()).unwrap_or(0);
                removed.extend(expired);
            }
            if n >= max {
                let need = n - max + 1;
                let evicted: Vec<Vec<u8>> = sqlx::query_scalar(
                    "DELETE FROM conduit_legacy_sessions WHERE id_hash IN (SELECT id_hash FROM conduit_legacy_sessions \
                     WHERE last_seen_ms <= $1 ORDER BY last_seen_ms LIMIT $2) RETURNING id_hash",
                )
                .bind(evict_bound)
                .bind(need)
                .fetch_all(&mut *tx)
                .await?;
                if i64::try_from(evicted.len()).unwrap_or(0) < need {
                    tx.rollback().await?;
                    return Ok(Created::Full);
                }
                n -= need;
                removed.extend(evicted);
            }
            sqlx::query(
                "INSERT INTO conduit_legacy_sessions (id_hash, owner, protocol_version, client_capabilities, \
                 client_info, log_level, initialized, created_ms, last_seen_ms, client_key) \
                 VALUES ($1, $2, $3, $4::json, $5::json, $6, $7, $8, $9, $10)",
            )
            .bind(hash(&record.id))
            .bind(record.owner.as_deref())
            .bind(record.protocol_version.as_str())
            .bind(caps.as_str())
            .bind(info.as_str())
            .bind(record.log_level.as_deref())
            .bind(record.initialized)
            .bind(ms(record.created_ms))
            .bind(now)
            .bind(record.client_key.as_str())
            .execute(&mut *tx)
            .await?;
            sqlx::query("UPDATE conduit_legacy_session_count SET n = $1 WHERE id = 1")
                .bind(n + 1)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(Created::Yes(removed))
        })
        .await;
        match c.finish(done, is_connection_error) {
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
        let returning = "owner, protocol_version, client_capabilities::text, client_info::text, log_level, \
                         initialized, created_ms, last_seen_ms, client_key";
        let row = self.touched(id, owner, now_ms, idle_ms, returning).await?;
        decode(id, &row)
    }

    async fn touch_seen(&self, id: &str, owner: Option<&str>, now_ms: u64, idle_ms: u64) -> Result<u64, SessionError> {
        let row = self.touched(id, owner, now_ms, idle_ms, "last_seen_ms").await?;
        let seen: i64 = row.try_get(0).map_err(|e| backend("read a touched session", e))?;
        Ok(u64::try_from(seen).unwrap_or(0))
    }

    async fn update(&self, record: &SessionRecord) -> Result<(), SessionError> {
        let (caps, _) = common::json_columns(ENGINE, record)?;
        let mut c = self.store.engine().conn().await.map_err(|e| SessionError::backend(ENGINE, e))?;
        let q = sqlx::query(
            "UPDATE conduit_legacy_sessions SET client_capabilities = $3::json, log_level = $4, initialized = $5, \
             last_seen_ms = GREATEST(last_seen_ms, $6) WHERE id_hash = $1 AND owner IS NOT DISTINCT FROM $2",
        )
        .bind(hash(&record.id))
        .bind(record.owner.as_deref())
        .bind(caps.as_str())
        .bind(record.log_level.as_deref())
        .bind(record.initialized)
        .bind(ms(record.last_seen_ms));
        let done = bounded(c.deadline(), q.execute(c.conn())).await.map(|r| r.rows_affected());
        match c.finish(done, is_connection_error).map_err(|e| backend("update a session", e))? {
            0 => Err(SessionError::NotFound),
            _ => Ok(()),
        }
    }

    async fn delete(&self, id: &str, owner: Option<&str>) -> Result<(), SessionError> {
        let sql = delete_counted("id_hash = $1 AND owner IS NOT DISTINCT FROM $2");
        let owner = owner.map(str::to_owned);
        match self.delete_where("delete a session", sql, |q| q.bind(hash(id)).bind(owner)).await? {
            0 => Err(SessionError::NotFound),
            _ => Ok(()),
        }
    }

    async fn sweep(&self, now_ms: u64, idle_ms: u64) -> Result<usize, SessionError> {
        let bound = ms(now_ms).saturating_sub(ms(idle_ms));
        let sql = delete_counted("last_seen_ms <= $1");
        let n = self.delete_where("sweep idle sessions", sql, |q| q.bind(bound)).await?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    async fn count(&self) -> Result<usize, SessionError> {
        let rows = self
            .store
            .engine()
            .read_rows("count sessions", "SELECT count(*) FROM conduit_legacy_sessions", |q| q)
            .await
            .map_err(|e| SessionError::backend(ENGINE, e))?;
        let n: i64 =
            rows.first().map(|r| r.try_get(0)).transpose().map_err(|e| backend("count sessions", e))?.unwrap_or(0);
        Ok(usize::try_from(n).unwrap_or(0))
    }
}
