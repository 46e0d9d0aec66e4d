//! The key the Events extension seals cursors with, kept in the database
//! (migration 0037) so that cursors outlive a restart.

use super::{SqliteStore, backend, broken};
use crate::pool::bounded;
use conduit_mcp::task::StoreError;

const KEY: &str = "SELECT key FROM conduit_events_keys WHERE name = 'cursor'";

impl SqliteStore {
    /// The database's cursor key for the Events extension
    /// (`EventsConfig::cursor_key`): the same after every restart, so a
    /// cursor given out before one resumes after it. A secret: never log it.
    pub async fn events_cursor_key(&self) -> Result<[u8; 32], StoreError> {
        let mut c = self.engine().reader().await?;
        let deadline = c.deadline();
        let v = bounded(deadline, sqlx::query_scalar::<_, Vec<u8>>(KEY).fetch_one(c.conn())).await;
        let key = c.finish(v, broken).map_err(|e| backend("read the events cursor key", e))?;
        <[u8; 32]>::try_from(key.as_slice())
            .map_err(|_| StoreError::backend_message("the events cursor key in the database is not 32 bytes"))
    }
}
