//! The webhook store contract on `SqliteWebhookStore` (a WAL file, and
//! `:memory:`), and webhook state that outlives a reopen of the file.

use crate::support;

use conduit_mcp::clock::SystemClock;
use conduit_mcp::ext::events::webhook::{WebhookCaps, WebhookStore};
use conduit_mcp::testing::{outbox_entry, webhook_store_contract, webhook_subscription};
use conduit_mcp_sql::SqliteStore;
use std::sync::{Arc, Mutex};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_file_webhook_store_meets_the_contract() {
    let files = Arc::new(Mutex::new(Vec::new()));
    let made = files.clone();
    webhook_store_contract(move || {
        let db = support::TempDb::new("webhooks");
        let path = db.path().to_owned();
        made.lock().unwrap().push(db);
        async move { SqliteStore::open(&path, Arc::new(SystemClock)).await.expect("open").webhooks() }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_memory_webhook_store_meets_the_contract() {
    webhook_store_contract(|| async {
        SqliteStore::open(":memory:", Arc::new(SystemClock)).await.expect("open").webhooks()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_state_outlives_a_reopen_of_the_file() {
    let db = support::TempDb::new("webhooks-reopen");
    let now = 1_800_000_000_000;
    let mut sub = webhook_subscription("alice", "https://hooks.example/p", 1);
    sub.refresh_before_ms = None;
    {
        let store = SqliteStore::open(db.path(), Arc::new(SystemClock)).await.expect("open");
        let hooks = store.webhooks();
        hooks.upsert(sub.clone(), WebhookCaps::default(), now).await.expect("create");
        hooks.set_verified("alice", &sub.key.url, now).await.expect("verify");
        assert!(hooks.feed(&sub.id, 0, 3, vec![outbox_entry(&sub, "p3", 3, now)]).await.expect("feed"));
        store.close().await;
    }
    let store = SqliteStore::open(db.path(), Arc::new(SystemClock)).await.expect("reopen");
    let hooks = store.webhooks();
    assert_eq!(hooks.get("alice", &sub.id, now).await.expect("get").map(|s| s.fed_through), Some(3));
    assert!(hooks.verified("alice", &sub.key.url).await.expect("verified"), "a no-expiry subscription's proof stays");
    let claimed = hooks.claim("n1", now, 1_000, 10).await.expect("claim");
    assert_eq!(claimed.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(), ["p3"]);
}
