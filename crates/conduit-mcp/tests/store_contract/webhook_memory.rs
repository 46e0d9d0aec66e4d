//! The webhook store contract on `MemoryWebhookStore`, and its own bounds.

use conduit_mcp::ext::events::webhook::{MemoryWebhookLimits, MemoryWebhookStore, WebhookCaps, WebhookStore};
use conduit_mcp::testing::{outbox_entry as entry, webhook_store_contract, webhook_subscription as subscription};

#[tokio::test]
async fn memory_webhook_store_meets_the_contract() {
    webhook_store_contract(|| async { MemoryWebhookStore::new() }).await;
}

#[tokio::test]
async fn memory_webhook_store_bounds_its_outbox_and_verifications() {
    let mut limits = MemoryWebhookLimits::default();
    (limits.max_outbox_bytes, limits.max_verifications) = (400, 2);
    let store = MemoryWebhookStore::with_limits(limits);
    let now = 1_800_000_000_000;
    let sub = subscription("alice", "https://hooks.example/m", 1);
    store.upsert(sub.clone(), WebhookCaps::default(), now).await.expect("create");
    let batch: Vec<_> = (1..=10).map(|p| entry(&sub, &format!("p{p}"), p, now)).collect();
    assert!(store.feed(&sub.id, 0, 10, batch).await.is_err(), "past the outbox bound: refused");
    let s = store.get("alice", &sub.id, now).await.expect("get").expect("live");
    assert_eq!(s.fed_through, 0, "a refused feed writes nothing");
    assert!(store.feed(&sub.id, 0, 1, vec![entry(&sub, "p1", 1, now)]).await.expect("within the bound"));
    for (i, url) in ["https://a.example/", "https://b.example/", "https://c.example/"].iter().enumerate() {
        store.set_verified("alice", url, now + i as u64).await.expect("verify");
    }
    assert!(!store.verified("alice", "https://a.example/").await.expect("verified"), "the oldest went");
    assert!(store.verified("alice", "https://c.example/").await.expect("verified"));
}
