//! The webhook store contract on `PostgresWebhookStore` (a schema of its own
//! per store), and two nodes on one schema: two pools, as two processes
//! would have. A lease that ends is taken over and the first node's late
//! settlement ignored; concurrent feeders enqueue each position once;
//! concurrent upserts never take a principal past its caps. Needs
//! `DATABASE_URL`.

use crate::support;

use conduit_mcp::clock::SystemClock;
use conduit_mcp::ext::events::webhook::{
    DeliveryFailure, Settlement, UpsertError, WebhookCaps, WebhookStore, WebhookSubscription,
};
use conduit_mcp::testing::{outbox_entry, webhook_store_contract, webhook_subscription};
use conduit_mcp_sql::{PostgresStore, PostgresWebhookStore};
use std::sync::Arc;

const NOW: u64 = 1_800_000_000_000;

async fn two_nodes(url: &str, schema: &str) -> (PostgresWebhookStore, PostgresWebhookStore) {
    let a = PostgresStore::with_schema(url, schema, Arc::new(SystemClock)).await.expect("node a");
    let b = PostgresStore::with_schema(url, schema, Arc::new(SystemClock)).await.expect("node b");
    (a.webhooks(), b.webhooks())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_webhook_store_meets_the_contract() {
    let Some(url) = support::pg_url("postgres_webhook_store_meets_the_contract") else { return };
    let schemas = support::Schemas::new(&url);
    webhook_store_contract(|| {
        let (url, schema) = (url.clone(), schemas.fresh());
        async move {
            PostgresStore::with_schema(&url, &schema, Arc::new(SystemClock)).await.expect("connect").webhooks()
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_node_takes_over_an_ended_lease_and_the_first_nodes_late_settle_is_ignored() {
    let test = "another_node_takes_over_an_ended_lease_and_the_first_nodes_late_settle_is_ignored";
    let Some(url) = support::pg_url(test) else { return };
    let schemas = support::Schemas::new(&url);
    let (a, b) = two_nodes(&url, &schemas.fresh()).await;
    let sub = webhook_subscription("alice", "https://hooks.example/n", 1);
    a.upsert(sub.clone(), WebhookCaps::default(), NOW).await.expect("create on a");
    assert!(b.feed(&sub.id, 0, 4, vec![outbox_entry(&sub, "p4", 4, NOW)]).await.expect("feed on b"));
    let on_a = a.claim("node-a", NOW, 30_000, 10).await.expect("a claims");
    assert_eq!(on_a.len(), 1);
    assert!(b.claim("node-b", NOW + 29_999, 30_000, 10).await.expect("b claims").is_empty(), "a holds it");
    // Node A went quiet past its lease: node B takes the entry over.
    let on_b = b.claim("node-b", NOW + 30_000, 30_000, 10).await.expect("b takes over");
    assert_eq!(
        on_b.iter().map(|e| (e.id.as_str(), e.lease.clone())).collect::<Vec<_>>(),
        [("p4", Some(("node-b".to_owned(), NOW + 60_000)))]
    );
    let late = Settlement::Dropped(DeliveryFailure::Timeout);
    assert!(!a.settle("node-a", &sub.id, "p4", late, NOW + 30_001).await.expect("late settle"), "ignored");
    let s = b.get("alice", &sub.id, NOW + 30_001).await.expect("get").expect("live");
    assert_eq!((s.acked_through, s.last_failure), (3, None), "the late settlement changed nothing");
    assert!(b.settle("node-b", &sub.id, "p4", Settlement::Delivered, NOW + 30_002).await.expect("settle"));
    let s = a.get("alice", &sub.id, NOW + 30_002).await.expect("get").expect("live");
    assert_eq!(s.acked_through, 4, "node a sees node b's delivery");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_feeders_and_claimers_on_two_nodes_take_each_position_once() {
    let test = "concurrent_feeders_and_claimers_on_two_nodes_take_each_position_once";
    let Some(url) = support::pg_url(test) else { return };
    let schemas = support::Schemas::new(&url);
    let (a, b) = two_nodes(&url, &schemas.fresh()).await;
    let sub = webhook_subscription("alice", "https://hooks.example/f", 1);
    a.upsert(sub.clone(), WebhookCaps::default(), NOW).await.expect("create");
    // Both nodes' feeders walk the same log in steps of 10, each from the fed_through it read.
    let feeder = |store: PostgresWebhookStore, sub: WebhookSubscription| async move {
        let mut won = 0;
        while let Some(s) = store.get("alice", &sub.id, NOW).await.expect("get") {
            if s.fed_through >= 200 {
                break;
            }
            let (from, to) = (s.fed_through, s.fed_through + 10);
            let batch = (from + 1..=to).map(|p| outbox_entry(&sub, &format!("p{p}"), p, NOW)).collect();
            if store.feed(&sub.id, from, to, batch).await.expect("feed") {
                won += 1;
            }
        }
        won
    };
    let (wa, wb) = tokio::join!(feeder(a.clone(), sub.clone()), feeder(b.clone(), sub.clone()));
    assert_eq!(wa + wb, 20, "every step fed once, by one node or the other");
    // Both nodes claim at once, in small batches, until nothing is left.
    let claimer = |store: PostgresWebhookStore, node: &'static str| async move {
        let mut ids = Vec::new();
        loop {
            let got = store.claim(node, NOW, 60_000, 7).await.expect("claim");
            if got.is_empty() {
                return ids;
            }
            ids.extend(got.into_iter().map(|e| e.position));
        }
    };
    let (ca, cb) = tokio::join!(claimer(a.clone(), "node-a"), claimer(b.clone(), "node-b"));
    let mut all: Vec<u64> = ca.into_iter().chain(cb).collect();
    all.sort_unstable();
    assert_eq!(all, (1..=200).collect::<Vec<_>>(), "each position enqueued once and claimed by one node");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_upserts_on_two_nodes_never_pass_the_caps() {
    let Some(url) = support::pg_url("concurrent_upserts_on_two_nodes_never_pass_the_caps") else { return };
    let schemas = support::Schemas::new(&url);
    let (a, b) = two_nodes(&url, &schemas.fresh()).await;
    for limit in ["subscriptions", "subscriptionBytes"] {
        let principal = format!("p-{limit}");
        let size = webhook_subscription(&principal, "https://hooks.example/c", 10).held_bytes();
        let caps = match limit {
            "subscriptions" => WebhookCaps::new(5, 1 << 20),
            _ => WebhookCaps::new(100, size * 5 + size / 2),
        };
        let mut set = tokio::task::JoinSet::new();
        for n in 0..40u32 {
            let store = if n % 2 == 0 { a.clone() } else { b.clone() };
            let sub = webhook_subscription(&principal, "https://hooks.example/c", n + 10);
            set.spawn(async move { store.upsert(sub, caps, NOW).await });
        }
        let (mut ok, mut full) = (0, 0);
        while let Some(r) = set.join_next().await {
            match r.expect("join") {
                Ok(_) => ok += 1,
                Err(UpsertError::Full { limit: l, .. }) => {
                    assert_eq!(l, limit);
                    full += 1;
                }
                Err(e) => panic!("unexpected {e}"),
            }
        }
        assert_eq!((ok, full), (5, 35), "{limit}: exactly the cap's worth across both nodes");
        assert_eq!(
            a.live(NOW, None, 100).await.expect("live").iter().filter(|s| s.key.principal == principal).count(),
            5
        );
    }
}
