//! Holding a node id: a session-level advisory lock on a connection of its
//! own, kept open for the life of the store. PostgreSQL releases it when the
//! session ends, so a node that crashed frees its id at once, and a second
//! live process asking for the same id is refused.

use super::{PgEngine, backend};
use crate::pool::bounded;
use conduit_mcp::task::StoreError;
use sqlx::Connection;
use sqlx::postgres::PgConnection;

/// The node id held and the session holding it.
#[derive(Debug)]
pub(super) struct Hold {
    node: String,
    conn: PgConnection,
}

/// The lock's two keys: one for the schema (stores in different schemas are
/// different services), one for the id.
const TRY_LOCK: &str = "SELECT pg_try_advisory_lock(hashtext($1), hashtext($2))";

impl PgEngine {
    /// See [`TaskStore::claim_node`](conduit_mcp::ext::tasks::TaskStore::claim_node).
    pub(super) async fn hold_node(&self, node: &str) -> Result<(), StoreError> {
        let mut hold = self.node.lock().await;
        if let Some(h) = hold.as_mut() {
            if h.node != node {
                return Err(StoreError::Refused(format!(
                    "this store already holds node id {:?}; one store serves one node",
                    h.node
                )));
            }
            if bounded(self.pool.deadline_from_now(), h.conn.ping()).await.is_ok() {
                return Ok(());
            }
            // The session died (a database restart): the lock went with it.
            *hold = None;
        }
        let mut conn = self.pool.open().await.map_err(|e| backend("claim the node id", e))?;
        let scope = format!("conduit-node:{}", self.schema.as_deref().unwrap_or(""));
        let q = sqlx::query_scalar(TRY_LOCK).bind(scope).bind(node);
        let got: bool = bounded(self.pool.deadline_from_now(), q.fetch_one(&mut conn))
            .await
            .map_err(|e| backend("claim the node id", e))?;
        if !got {
            let _ = conn.close().await;
            return Err(StoreError::Refused(format!(
                "node id {node:?} is held by another live node on this database; give each process its own id"
            )));
        }
        *hold = Some(Hold { node: node.to_owned(), conn });
        Ok(())
    }

    /// Ends the session holding the node id, if any (the lock goes with it).
    pub(super) async fn release_node(&self) {
        if let Some(h) = self.node.lock().await.take() {
            let _ = h.conn.close().await;
        }
    }
}
