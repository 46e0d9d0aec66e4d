//! `SqliteDpopReplay`: the DPoP proofs taken by every process on the SQLite
//! file (`conduit_dpop_jti`), surviving a restart within their window.

use super::{SqliteStore, broken};
use crate::common::dpop_replay::{ADMIT_SQL_SQLITE, SWEEP_SQL_SQLITE as SWEEP_SQL, Sweeps};
use crate::pool::bounded;
use async_trait::async_trait;
use conduit_mcp::auth::oauth::{DpopReplayStore, ReplayStoreError, ReplayVerdict, replay_key};
use std::sync::Arc;

/// The DPoP replay store in an SQLite database; made by
/// [`SqliteStore::dpop_replay`], it writes on the store's one writer. Taking a
/// proof is one `INSERT … ON CONFLICT`; rows past their window are deleted in
/// bounded batches, by the expiry index.
#[derive(Debug, Clone)]
pub struct SqliteDpopReplay {
    store: SqliteStore,
    sweeps: Arc<Sweeps>,
}

impl SqliteStore {
    /// The DPoP replay store in the same database (its table is created by the same
    /// migrations): give it to `OAuthConfig::dpop_replay_store`.
    pub fn dpop_replay(&self) -> SqliteDpopReplay {
        SqliteDpopReplay { store: self.clone(), sweeps: Arc::default() }
    }
}

fn failed(what: &str, e: impl std::fmt::Display) -> ReplayStoreError {
    ReplayStoreError(format!("sqlite: {what}: {e}"))
}

#[async_trait]
impl DpopReplayStore for SqliteDpopReplay {
    async fn admit(&self, jkt: &str, jti: &str, now_ms: u64, until_ms: u64) -> Result<ReplayVerdict, ReplayStoreError> {
        let key = replay_key(jkt, jti);
        let (now, until) = (crate::common::ms(now_ms), crate::common::ms(until_ms));
        if self.sweeps.due(now_ms) {
            let mut c = self.store.engine().writer().await.map_err(|e| failed("connect", e))?;
            let swept = bounded(c.deadline(), sqlx::query(SWEEP_SQL).bind(now).execute(c.conn())).await;
            // A failed sweep is tried again at the next one; the proof is judged regardless.
            if let Err(e) = c.finish(swept, broken) {
                tracing::warn!(error = %e, "DPoP replay store: sweeping expired proofs failed");
            }
        }
        let mut c = self.store.engine().writer().await.map_err(|e| failed("connect", e))?;
        let q = sqlx::query_scalar::<_, i64>(ADMIT_SQL_SQLITE).bind(key.as_slice()).bind(now).bind(until);
        let taken = bounded(c.deadline(), q.fetch_optional(c.conn())).await;
        let taken = c.finish(taken, broken).map_err(|e| failed("take a DPoP proof", e))?;
        Ok(if taken.is_some() { ReplayVerdict::Fresh } else { ReplayVerdict::Replayed })
    }
}
