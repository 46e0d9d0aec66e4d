//! The store contract suite on `MemoryStore`, including the 64-writer race.

use conduit_mcp::ext::tasks::MemoryStore;
use conduit_mcp::testing::{ContractOptions, store_contract};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_store_meets_the_contract() {
    store_contract(|clock| async move { MemoryStore::with_clock(clock) }, ContractOptions::default()).await;
}
