//! The legacy store contract suite (the whole `TaskStore` suite, then
//! listing) on `MemoryLegacyStore`, including the 64-writer race.

use conduit_mcp::ext::tasks::legacy_store::MemoryLegacyStore;
use conduit_mcp::testing::{ContractOptions, legacy_store_contract};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_legacy_store_meets_the_contract() {
    legacy_store_contract(|clock| async move { MemoryLegacyStore::with_clock(clock) }, ContractOptions::default())
        .await;
}
