//! The session store contract on the in-memory store.

use conduit_mcp::session::MemorySessionStore;

#[tokio::test]
async fn memory_session_store_meets_the_contract() {
    conduit_mcp::testing::session_store_contract(|| async { MemorySessionStore::new() }).await;
}
