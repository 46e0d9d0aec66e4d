//! `Stores::webhooks`: one store per `Stores`, the database's on SQLite
//! (every opener of the file sees the same subscriptions), a memory store
//! of its own in memory.

use crate::support::TempDb;
use conduit_mcp::ext::events::webhook::WebhookCaps;
use conduit_mcp::testing::webhook_subscription;
use conduit_mcp_sql::Stores;

const NOW: u64 = 1_800_000_000_000;

#[tokio::test]
async fn stores_hand_out_the_databases_webhook_store() {
    let db = TempDb::new("stores-webhooks");
    let url = format!("sqlite:{}", db.path());
    let (one, two) = (Stores::open(&url).await.expect("open"), Stores::open(&url).await.expect("open again"));
    let sub = webhook_subscription("alice", "https://hooks.example/s", 1);
    one.webhooks().upsert(sub.clone(), WebhookCaps::default(), NOW).await.expect("create");
    let seen = two.webhooks().get("alice", &sub.id, NOW).await.expect("get");
    assert_eq!(seen.map(|s| s.id), Some(sub.id.clone()), "the file's subscriptions, from any opener");
    let memory = Stores::open("memory").await.expect("memory");
    memory.webhooks().upsert(sub.clone(), WebhookCaps::default(), NOW).await.expect("create in memory");
    let again = memory.webhooks().get("alice", &sub.id, NOW).await.expect("get");
    assert!(again.is_some(), "every call hands out the same memory store");
    let other = Stores::open("memory").await.expect("memory");
    assert!(other.webhooks().get("alice", &sub.id, NOW).await.expect("get").is_none(), "nothing shared in memory");
}
