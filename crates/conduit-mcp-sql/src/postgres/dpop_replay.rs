//! `PostgresDpopReplay`: the DPoP proofs every node on the database has taken
//! (`conduit_dpop_jti`), so a proof captured on its way to one node is refused
//! by all the others within its window.

use super::{PostgresStore, is_connection_error};
use crate::common::dpop_replay::{ADMIT_SQL_POSTGRES, SWEEP_SQL_POSTGRES as SWEEP_SQL, Sweeps};
use crate::pool::bounded;
use async_trait::async_trait;
use conduit_mcp::auth::oauth::{DpopReplayStore, ReplayStoreError, ReplayVerdict, replay_key};
use std::sync::Arc;

/// The DPoP replay store of every node on this PostgreSQL schema; made by
/// [`PostgresStore::dpop_replay`], it shares the store's pool. Taking a proof is
/// one `INSERT … ON CONFLICT` (two nodes given one proof at once: one takes it);
/// rows past their window are deleted in bounded batches, by the expiry index.
#[derive(Debug, Clone)]
pub struct PostgresDpopReplay {
    store: PostgresStore,
    sweeps: Arc<Sweeps>,
}

impl PostgresStore {
    /// The DPoP replay store in the same schema (its table is created by the same
    /// migrations): give it to `OAuthConfig::dpop_replay_store` on every node.
    pub fn dpop_replay(&self) -> PostgresDpopReplay {
        PostgresDpopReplay { store: self.clone(), sweeps: Arc::default() }
    }
}

fn failed(what: &str, e: impl std::fmt::Display) -> ReplayStoreError {
    ReplayStoreError(format!("postgres: {what}: {e}"))
}

#[async_trait]
impl DpopReplayStore for PostgresDpopReplay {
    async fn admit(&self, jkt: &str, jti: &str, now_ms: u64, until_ms: u64) -> Result<ReplayVerdict, ReplayStoreError> {
        let key = replay_key(jkt, jti);
        let (now, until) = (crate::common::ms(now_ms), crate::common::ms(until_ms));
        if self.sweeps.due(now_ms) {
            let mut c = self.store.engine().conn().await.map_err(|e| failed("connect", e))?;
            let swept = bounded(c.deadline(), sqlx::query(SWEEP_SQL).bind(now).execute(c.conn())).await;
            // A failed sweep is tried again at the next one; the proof is judged regardless.
            if let Err(e) = c.finish(swept, is_connection_error) {
                tracing::warn!(error = %e, "DPoP replay store: sweeping expired proofs failed");
            }
        }
        let mut c = self.store.engine().conn().await.map_err(|e| failed("connect", e))?;
        let q = sqlx::query_scalar::<_, i32>(ADMIT_SQL_POSTGRES).bind(key.as_slice()).bind(now).bind(until);
        let taken = bounded(c.deadline(), q.fetch_optional(c.conn())).await;
        let taken = c.finish(taken, is_connection_error).map_err(|e| failed("take a DPoP proof", e))?;
        Ok(if taken.is_some() { ReplayVerdict::Fresh } else { ReplayVerdict::Replayed })
    }
}
