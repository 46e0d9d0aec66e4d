//! The [`WebhookStore`] contract suite: subscriptions under per-principal
//! caps, verifications per `(principal, url)`, and the outbox that the nodes
//! of a deployment feed, claim under leases and settle. Times are passed in;
//! nothing sleeps.
//!
//! ```no_run
//! # use conduit_mcp::ext::events::webhook::MemoryWebhookStore;
//! // In a test file, under `#[tokio::test]`:
//! async fn my_store_meets_the_contract() {
//!     conduit_mcp::testing::webhook_store_contract(|| async { MemoryWebhookStore::new() }).await;
//! }
//! ```

use crate::ext::events::webhook::{
    DeliveryFailure, OutboxEntry, Settlement, SubscriptionKey, TERMINATED_ID_PREFIX, UpsertError, Upserted,
    VERIFICATION_KEEP_MS, WebhookCaps, WebhookSecret, WebhookStore, WebhookSubscription,
};
use serde_json::json;
use std::future::Future;

const T0: u64 = 1_800_000_000_000;
const NODE_A: &str = "contract-node-a";
const NODE_B: &str = "contract-node-b";

/// Runs every check, each on a fresh store from `make` (which must return
/// an empty store each time: `live`, `claim` and `sweep` see every row).
pub async fn webhook_store_contract<S, F, Fut>(make: F)
where
    S: WebhookStore,
    F: Fn() -> Fut,
    Fut: Future<Output = S>,
{
    upsert_creates_then_refreshes(&make().await).await;
    caps_count_live_subscriptions_and_their_bytes(&make().await).await;
    reads_and_removal_are_scoped_to_the_principal(&make().await).await;
    verification_is_per_principal_and_url(&make().await).await;
    live_walks_subscriptions_in_id_order(&make().await).await;
    feed_is_compare_and_set(&make().await).await;
    claims_go_by_due_then_position_under_exclusive_leases(&make().await).await;
    a_terminated_envelope_waits_for_the_rest_of_its_outbox(&make().await).await;
    a_stale_node_cannot_settle(&make().await).await;
    settling_moves_the_safe_watermark_and_failure_state(&make().await).await;
    sweep_removes_lapsed_subscriptions_and_unused_verifications(&make().await).await;
}

/// A subscription of `principal` to `url` (`n` varies the arguments), for
/// an hour from `T0`.
pub fn subscription(principal: &str, url: &str, n: u32) -> WebhookSubscription {
    let key = SubscriptionKey {
        principal: principal.into(),
        url: url.into(),
        name: "task.status_changed".into(),
        arguments: json!({ "n": n }),
    };
    WebhookSubscription {
        id: key.id(),
        key,
        secret: WebhookSecret::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
        previous_secret: None,
        refresh_before_ms: Some(T0 + 3_600_000),
        active: true,
        acked_through: 0,
        fed_through: 0,
        failing_since_ms: None,
        last_failure: None,
    }
}

/// An outbox entry for `sub` at `position`, due at `due_ms`.
pub fn entry(sub: &WebhookSubscription, id: &str, position: u64, due_ms: u64) -> OutboxEntry {
    OutboxEntry {
        id: id.into(),
        subscription_id: sub.id.clone(),
        position,
        body: format!("{{\"eventId\":\"{id}\"}}").into_bytes(),
        attempts: 0,
        due_ms,
        lease: None,
    }
}

fn caps(count: usize, bytes: usize) -> WebhookCaps {
    WebhookCaps { max_per_principal: count, max_bytes_per_principal: bytes }
}

async fn stored(store: &dyn WebhookStore, sub: &WebhookSubscription, now_ms: u64) -> WebhookSubscription {
    store.get(&sub.key.principal, &sub.id, now_ms).await.expect("get").expect("the subscription is live")
}

fn ids(entries: &[OutboxEntry]) -> Vec<&str> {
    entries.iter().map(|e| e.id.as_str()).collect()
}

/// A new subscription is `Created` and read back whole; upserting it again
/// while live `Refreshed`s it (secret, TTL, `active`, previous secret
/// replaced; watermark, `fed_through`, failure state and outbox kept); over a
/// lapsed one it is `Created` afresh, its outbox gone.
pub async fn upsert_creates_then_refreshes(store: &dyn WebhookStore) {
    let sub = subscription("alice", "https://hooks.example/a", 1);
    assert_eq!(store.upsert(sub.clone(), WebhookCaps::default(), T0).await.expect("create"), Upserted::Created);
    assert_eq!(stored(store, &sub, T0).await, sub, "read back whole");
    assert!(store.feed(&sub.id, 0, 10, vec![entry(&sub, "e5", 5, T0)]).await.expect("feed"));
    let got = store.claim(NODE_A, T0, 1_000, 10).await.expect("claim");
    assert_eq!(ids(&got), ["e5"]);
    assert!(
        store
            .settle(NODE_A, &sub.id, "e5", Settlement::RetryAt(T0 + 10, DeliveryFailure::Http5xx), T0)
            .await
            .expect("settle")
    );
    let before = stored(store, &sub, T0).await;
    assert_eq!((before.acked_through, before.fed_through), (4, 10));
    let mut again = sub.clone();
    again.secret = WebhookSecret::new("whsec_bmV3LXNlY3JldC1uZXctc2VjcmV0LW5ldy1zZWNyZXQ=");
    again.previous_secret = Some((sub.secret.clone(), T0 + 60_000));
    again.refresh_before_ms = Some(T0 + 7_200_000);
    again.active = false;
    again.acked_through = 99;
    again.fed_through = 99;
    assert_eq!(
        store.upsert(again.clone(), WebhookCaps::default(), T0 + 1).await.expect("refresh"),
        Upserted::Refreshed
    );
    let after = stored(store, &sub, T0 + 1).await;
    assert_eq!(after.secret, again.secret, "the secret is replaced");
    assert_eq!(after.previous_secret, again.previous_secret);
    assert_eq!((after.refresh_before_ms, after.active), (Some(T0 + 7_200_000), false));
    assert_eq!((after.acked_through, after.fed_through), (4, 10), "the watermark and fed_through are kept");
    assert_eq!(after.last_failure, Some(DeliveryFailure::Http5xx), "the failure state is kept");
    again.active = true;
    store.upsert(again.clone(), WebhookCaps::default(), T0 + 2).await.expect("reactivate");
    assert_eq!(ids(&store.claim(NODE_A, T0 + 10, 1_000, 10).await.expect("claim")), ["e5"], "the outbox is kept");
    // Lapsed: a fresh subscription, from what it is given, with an empty outbox.
    let lapse = T0 + 7_200_000;
    assert!(store.get("alice", &sub.id, lapse).await.expect("get").is_none(), "lapsed reads as missing");
    let mut fresh = sub.clone();
    fresh.refresh_before_ms = Some(lapse + 3_600_000);
    fresh.acked_through = 50;
    fresh.fed_through = 50;
    assert_eq!(
        store.upsert(fresh.clone(), WebhookCaps::default(), lapse).await.expect("create again"),
        Upserted::Created
    );
    assert_eq!(stored(store, &sub, lapse).await, fresh);
    assert!(store.claim(NODE_B, lapse, 1_000, 10).await.expect("claim").is_empty(), "the lapsed outbox went");
}

/// The count cap and the byte cap each refuse the next subscription of one
/// principal (`Full`, naming the cap), not another principal's; lapsed
/// subscriptions do not count; a refresh counts its new size in place of
/// the old.
pub async fn caps_count_live_subscriptions_and_their_bytes(store: &dyn WebhookStore) {
    let short = |n| {
        let mut s = subscription("carol", "https://hooks.example/c", n);
        s.refresh_before_ms = Some(T0 + 1_000);
        s
    };
    store.upsert(short(1), caps(2, 1 << 20), T0).await.expect("first");
    store.upsert(subscription("carol", "https://hooks.example/c", 2), caps(2, 1 << 20), T0).await.expect("second");
    let third = subscription("carol", "https://hooks.example/c", 3);
    match store.upsert(third.clone(), caps(2, 1 << 20), T0).await {
        Err(UpsertError::Full { limit: "subscriptions", max: 2 }) => {}
        other => panic!("the count cap: {other:?}"),
    }
    assert!(store.get("carol", &third.id, T0).await.expect("get").is_none(), "a refusal writes nothing");
    store
        .upsert(subscription("dave", "https://hooks.example/c", 3), caps(2, 1 << 20), T0)
        .await
        .expect("dave is not carol");
    assert_eq!(
        store.upsert(short(1), caps(2, 1 << 20), T0).await.expect("refresh at the cap"),
        Upserted::Refreshed,
        "a refresh at the count cap is no new subscription"
    );
    store.upsert(third.clone(), caps(2, 1 << 20), T0 + 1_000).await.expect("the short one lapsed: room again");
    // Bytes: room for two subscriptions of this size, not three.
    let size = subscription("erin", "https://hooks.example/e", 1).held_bytes();
    let byte_caps = caps(100, size * 2 + size / 2);
    store.upsert(subscription("erin", "https://hooks.example/e", 1), byte_caps, T0).await.expect("first");
    store.upsert(subscription("erin", "https://hooks.example/e", 2), byte_caps, T0).await.expect("second");
    match store.upsert(subscription("erin", "https://hooks.example/e", 3), byte_caps, T0).await {
        Err(UpsertError::Full { limit: "subscriptionBytes", max }) => assert_eq!(max, size * 2 + size / 2),
        other => panic!("the byte cap: {other:?}"),
    }
    let mut bigger = subscription("erin", "https://hooks.example/e", 2);
    bigger.previous_secret = Some((WebhookSecret::new("x".repeat(size)), T0 + 60_000));
    assert!(
        matches!(store.upsert(bigger, byte_caps, T0).await, Err(UpsertError::Full { limit: "subscriptionBytes", .. })),
        "a refresh that grows past the byte cap is refused"
    );
    let mut same = subscription("erin", "https://hooks.example/e", 2);
    same.refresh_before_ms = Some(T0 + 9_000_000);
    assert_eq!(
        store.upsert(same, byte_caps, T0).await.expect("refresh"),
        Upserted::Refreshed,
        "new size in place of old"
    );
}

/// `get` and `remove` find only the principal's own subscription; `remove`
/// takes its outbox with it and says whether a live one was there.
pub async fn reads_and_removal_are_scoped_to_the_principal(store: &dyn WebhookStore) {
    let sub = subscription("alice", "https://hooks.example/r", 1);
    store.upsert(sub.clone(), WebhookCaps::default(), T0).await.expect("create");
    assert!(store.get("mallory", &sub.id, T0).await.expect("get").is_none());
    assert!(!store.remove("mallory", &sub.id, T0).await.expect("remove"), "not mallory's to remove");
    assert!(store.get("alice", &sub.id, T0).await.expect("get").is_some(), "still there");
    store.enqueue(entry(&sub, "msg_verification_1", 0, T0)).await.expect("enqueue");
    assert!(store.remove("alice", &sub.id, T0).await.expect("remove"));
    assert!(store.get("alice", &sub.id, T0).await.expect("get").is_none());
    assert!(!store.remove("alice", &sub.id, T0).await.expect("remove again"), "nothing left");
    assert!(store.claim(NODE_A, T0, 1_000, 10).await.expect("claim").is_empty(), "its outbox went with it");
    store.enqueue(entry(&sub, "orphan", 0, T0)).await.expect("enqueue for a missing subscription");
    assert!(store.claim(NODE_A, T0, 1_000, 10).await.expect("claim").is_empty(), "dropped");
}

/// A verification is `(principal, url)`'s: not another principal's, not
/// another URL's, and it holds across subscriptions of the pair.
pub async fn verification_is_per_principal_and_url(store: &dyn WebhookStore) {
    let url = "https://hooks.example/v";
    assert!(!store.verified("alice", url).await.expect("verified"));
    store.set_verified("alice", url, T0).await.expect("set");
    assert!(store.verified("alice", url).await.expect("verified"));
    assert!(!store.verified("bob", url).await.expect("verified"), "one principal's proof never waives another's");
    assert!(!store.verified("alice", "https://hooks.example/v/").await.expect("verified"), "the URL as sent");
    store.set_verified("alice", url, T0 + 5).await.expect("set again");
    assert!(store.verified("alice", url).await.expect("verified"));
}

/// `live` pages through the subscriptions live at a time, every
/// principal's, in id order, after the id given.
pub async fn live_walks_subscriptions_in_id_order(store: &dyn WebhookStore) {
    let mut subs: Vec<WebhookSubscription> =
        ["alice", "bob", "carol", "dave"].iter().map(|p| subscription(p, "https://hooks.example/l", 1)).collect();
    subs[3].refresh_before_ms = Some(T0 + 10);
    subs[1].active = false;
    for s in &subs {
        store.upsert(s.clone(), WebhookCaps::default(), T0).await.expect("create");
    }
    let mut expected: Vec<String> = subs[..3].iter().map(|s| s.id.clone()).collect();
    expected.sort();
    let now = T0 + 10;
    let first = store.live(now, None, 2).await.expect("live");
    assert_eq!(first.iter().map(|s| s.id.clone()).collect::<Vec<_>>(), expected[..2], "id order, at most `max`");
    let rest = store.live(now, Some(&expected[1]), 10).await.expect("live");
    assert_eq!(rest.iter().map(|s| s.id.clone()).collect::<Vec<_>>(), expected[2..], "after the id; not the lapsed");
    assert_eq!(rest[0], subs.iter().find(|s| s.id == expected[2]).cloned().expect("one of them"), "whole");
}

/// `feed` moves `fed_through` only from the value it names: a second feeder
/// with the same stale `from` writes nothing, so each position is enqueued
/// once; positions fed without entries move the watermark.
pub async fn feed_is_compare_and_set(store: &dyn WebhookStore) {
    let sub = subscription("alice", "https://hooks.example/f", 1);
    store.upsert(sub.clone(), WebhookCaps::default(), T0).await.expect("create");
    let batch = || vec![entry(&sub, "p3", 3, T0), entry(&sub, "p7", 7, T0)];
    assert!(store.feed(&sub.id, 0, 8, batch()).await.expect("feed"));
    assert!(!store.feed(&sub.id, 0, 8, batch()).await.expect("stale feed"), "another node fed it first");
    assert!(!store.feed(&sub.id, 0, 9, vec![entry(&sub, "p9", 9, T0)]).await.expect("stale"));
    assert!(!store.feed("sub_missing", 0, 8, Vec::new()).await.expect("gone"), "no subscription, no feed");
    let s = stored(store, &sub, T0).await;
    assert_eq!((s.fed_through, s.acked_through), (8, 2), "the watermark stops below the lowest pending position");
    let got = store.claim(NODE_A, T0, 1_000, 10).await.expect("claim");
    assert_eq!(ids(&got), ["p3", "p7"], "each position enqueued once");
    // A quiet stretch: nothing of this subscriber's, and nothing pending ahead of it.
    for e in ["p3", "p7"] {
        store.settle(NODE_A, &sub.id, e, Settlement::Delivered, T0).await.expect("settle");
    }
    assert!(store.feed(&sub.id, 8, 20, Vec::new()).await.expect("feed nothing"));
    assert_eq!(stored(store, &sub, T0).await.acked_through, 20);
}

/// Claims come oldest due first, then lowest position; an entry is held by
/// one node until its lease ends, then another takes it over; entries not
/// yet due, and those of a suspended or lapsed subscription, wait.
pub async fn claims_go_by_due_then_position_under_exclusive_leases(store: &dyn WebhookStore) {
    let sub = subscription("alice", "https://hooks.example/q", 1);
    let other = subscription("bob", "https://hooks.example/q", 1);
    store.upsert(sub.clone(), WebhookCaps::default(), T0).await.expect("create");
    store.upsert(other.clone(), WebhookCaps::default(), T0).await.expect("create");
    let entries = vec![entry(&sub, "late", 1, T0 + 5), entry(&sub, "p9", 9, T0), entry(&sub, "p4", 4, T0)];
    assert!(store.feed(&sub.id, 0, 10, entries).await.expect("feed"));
    store.enqueue(entry(&other, "b2", 2, T0 + 1)).await.expect("enqueue");
    store.enqueue(entry(&other, "future", 3, T0 + 60_000)).await.expect("enqueue");
    let now = T0 + 10;
    let first = store.claim(NODE_A, now, 1_000, 2).await.expect("claim");
    assert_eq!(ids(&first), ["p4", "p9"], "due first, then position; at most `max`");
    assert!(first.iter().all(|e| e.lease == Some((NODE_A.into(), now + 1_000))), "returned with the lease");
    let second = store.claim(NODE_B, now, 1_000, 10).await.expect("claim");
    assert_eq!(ids(&second), ["b2", "late"], "held entries are not claimed again; not-yet-due ones wait");
    assert!(store.claim(NODE_B, now + 999, 1_000, 10).await.expect("claim").is_empty(), "leases hold");
    let taken = store.claim(NODE_B, now + 1_000, 1_000, 10).await.expect("claim");
    assert_eq!(ids(&taken), ["p4", "p9", "b2", "late"], "an ended lease is taken over");
    assert!(taken.iter().all(|e| e.lease == Some((NODE_B.into(), now + 2_000))));
    // A suspended subscription's entries wait for the refresh that reactivates it.
    let mut off = other.clone();
    off.active = false;
    store.upsert(off, WebhookCaps::default(), T0).await.expect("suspend");
    let later = T0 + 60_000;
    let got = store.claim(NODE_A, later, 1_000, 10).await.expect("claim");
    assert_eq!(ids(&got), ["p4", "p9", "late"], "nothing of the suspended subscription");
    store.upsert(other.clone(), WebhookCaps::default(), T0).await.expect("reactivate");
    assert_eq!(ids(&store.claim(NODE_A, later, 1_000, 10).await.expect("claim")), ["b2", "future"]);
    assert!(store.claim(NODE_B, T0 + 3_600_000 + 10_000, 1_000, 10).await.expect("claim").is_empty(), "lapsed");
}

/// A subscription's `terminated` envelope (position 0, so first in claim
/// order) is claimed only once nothing else of that subscription is in the
/// outbox: not while an event is held by a node, nor while it waits for a
/// retry. Another subscription's entries do not hold it back.
pub async fn a_terminated_envelope_waits_for_the_rest_of_its_outbox(store: &dyn WebhookStore) {
    let sub = subscription("alice", "https://hooks.example/t", 1);
    let other = subscription("alice", "https://hooks.example/t", 2);
    store.upsert(sub.clone(), WebhookCaps::default(), T0).await.expect("create");
    store.upsert(other.clone(), WebhookCaps::default(), T0).await.expect("create");
    let end = format!("{TERMINATED_ID_PREFIX}t1");
    assert!(store.feed(&sub.id, 0, 3, vec![entry(&sub, "p3", 3, T0), entry(&sub, &end, 0, T0)]).await.expect("feed"));
    assert_eq!(ids(&store.claim(NODE_A, T0, 1_000, 10).await.expect("claim")), ["p3"], "the envelope waits");
    assert!(store.claim(NODE_B, T0, 1_000, 10).await.expect("claim").is_empty(), "also while p3 is held");
    let retry = Settlement::RetryAt(T0 + 5, DeliveryFailure::Http5xx);
    assert!(store.settle(NODE_A, &sub.id, "p3", retry, T0 + 1).await.expect("settle"));
    assert!(store.claim(NODE_B, T0 + 2, 1_000, 10).await.expect("claim").is_empty(), "and while p3 waits to retry");
    assert_eq!(ids(&store.claim(NODE_B, T0 + 5, 1_000, 10).await.expect("claim")), ["p3"]);
    assert!(store.settle(NODE_B, &sub.id, "p3", Settlement::Delivered, T0 + 6).await.expect("settle"));
    store.enqueue(entry(&other, "o1", 1, T0 + 6)).await.expect("enqueue");
    let last = store.claim(NODE_A, T0 + 6, 1_000, 10).await.expect("claim");
    assert_eq!(ids(&last), [end.as_str(), "o1"], "alone in its outbox, the envelope goes");
}

/// Once another node took an entry over, the first node's late settlement
/// is ignored, whatever it says; the holder's counts.
pub async fn a_stale_node_cannot_settle(store: &dyn WebhookStore) {
    let sub = subscription("alice", "https://hooks.example/s", 1);
    store.upsert(sub.clone(), WebhookCaps::default(), T0).await.expect("create");
    assert!(store.feed(&sub.id, 0, 5, vec![entry(&sub, "p5", 5, T0)]).await.expect("feed"));
    assert_eq!(ids(&store.claim(NODE_A, T0, 1_000, 10).await.expect("claim")), ["p5"]);
    assert_eq!(ids(&store.claim(NODE_B, T0 + 1_000, 1_000, 10).await.expect("claim")), ["p5"], "taken over");
    for late in [Settlement::Delivered, Settlement::Dropped(DeliveryFailure::Http4xx)] {
        assert!(!store.settle(NODE_A, &sub.id, "p5", late, T0 + 1_001).await.expect("settle"), "ignored");
    }
    let retry = Settlement::RetryAt(T0 + 2, DeliveryFailure::Timeout);
    assert!(!store.settle(NODE_A, &sub.id, "p5", retry, T0 + 1_001).await.expect("settle"));
    let s = stored(store, &sub, T0 + 1_001).await;
    assert_eq!((s.acked_through, s.last_failure), (4, None), "nothing changed");
    assert!(store.claim(NODE_A, T0 + 1_500, 1_000, 10).await.expect("claim").is_empty(), "B still holds it");
    assert!(!store.settle(NODE_B, "sub_other", "p5", Settlement::Delivered, T0 + 1_002).await.expect("settle"));
    assert!(store.settle(NODE_B, &sub.id, "p5", Settlement::Delivered, T0 + 1_002).await.expect("settle"));
    assert_eq!(stored(store, &sub, T0 + 1_002).await.acked_through, 5);
    assert!(!store.settle(NODE_B, &sub.id, "p5", Settlement::Delivered, T0 + 1_003).await.expect("settle"), "gone");
}

/// `Delivered` and `Dropped` remove the entry and move `acked_through` to
/// the safe watermark (a position stays unacked while an earlier one is
/// pending; envelopes never hold it back; it never moves back); `RetryAt`
/// keeps the entry, one attempt more, due later, recording the failure;
/// `Delivered` clears the failure state.
pub async fn settling_moves_the_safe_watermark_and_failure_state(store: &dyn WebhookStore) {
    let sub = subscription("alice", "https://hooks.example/w", 1);
    store.upsert(sub.clone(), WebhookCaps::default(), T0).await.expect("create");
    let batch = vec![entry(&sub, "p2", 2, T0), entry(&sub, "p5", 5, T0), entry(&sub, "p8", 8, T0)];
    assert!(store.feed(&sub.id, 0, 10, batch).await.expect("feed"));
    store.enqueue(entry(&sub, "msg_gap_1", 0, T0)).await.expect("enqueue an envelope");
    assert_eq!(stored(store, &sub, T0).await.acked_through, 1);
    assert_eq!(store.claim(NODE_A, T0, 1_000, 10).await.expect("claim").len(), 4);
    let sub_ref = &sub;
    let settle = |id: &'static str, outcome: Settlement, at: u64| async move {
        assert!(store.settle(NODE_A, &sub_ref.id, id, outcome, at).await.expect("settle"), "{id} settles");
        stored(store, sub_ref, at).await
    };
    let s = settle("p5", Settlement::Delivered, T0 + 1).await;
    assert_eq!(s.acked_through, 1, "p2 is still pending");
    let s = settle("p2", Settlement::RetryAt(T0 + 500, DeliveryFailure::Http5xx), T0 + 2).await;
    assert_eq!(s.acked_through, 1, "a retry holds the watermark");
    assert_eq!((s.failing_since_ms, s.last_failure), (Some(T0 + 2), Some(DeliveryFailure::Http5xx)));
    assert!(store.claim(NODE_A, T0 + 499, 1_000, 10).await.expect("claim").is_empty(), "not due yet");
    let retried = store.claim(NODE_A, T0 + 500, 1_000, 10).await.expect("claim");
    assert_eq!(ids(&retried), ["p2"]);
    assert_eq!((retried[0].attempts, retried[0].due_ms), (1, T0 + 500), "one attempt more, due later");
    let s = settle("p2", Settlement::RetryAt(T0 + 900, DeliveryFailure::Timeout), T0 + 600).await;
    assert_eq!((s.failing_since_ms, s.last_failure), (Some(T0 + 2), Some(DeliveryFailure::Timeout)), "since the first");
    let again = store.claim(NODE_A, T0 + 900, 1_000, 10).await.expect("claim");
    assert_eq!((ids(&again), again[0].attempts), (vec!["p2"], 2));
    let s = settle("p2", Settlement::Dropped(DeliveryFailure::Http4xx), T0 + 901).await;
    assert_eq!(s.acked_through, 7, "abandoned counts: p5 acked, p8 pending");
    assert_eq!(s.last_failure, Some(DeliveryFailure::Http4xx));
    let s = settle("p8", Settlement::Delivered, T0 + 902).await;
    assert_eq!(s.acked_through, 10, "nothing pending: fed_through");
    assert_eq!((s.failing_since_ms, s.last_failure), (None, None), "a delivery clears the failure state");
    assert_eq!(settle("msg_gap_1", Settlement::Delivered, T0 + 903).await.acked_through, 10);
    // A replay below the watermark does not move it back.
    store.enqueue(entry(&sub, "replay3", 3, T0 + 904)).await.expect("enqueue a replay");
    store.enqueue(entry(&sub, "replay4", 4, T0 + 904)).await.expect("enqueue a replay");
    assert_eq!(store.claim(NODE_A, T0 + 904, 1_000, 10).await.expect("claim").len(), 2);
    assert_eq!(settle("replay4", Settlement::Delivered, T0 + 905).await.acked_through, 10, "never back");
}

/// `sweep` removes lapsed subscriptions with their outbox, and verifications
/// that no subscription names once they are old; live ones stay.
pub async fn sweep_removes_lapsed_subscriptions_and_unused_verifications(store: &dyn WebhookStore) {
    let mut lapsing = subscription("alice", "https://hooks.example/x", 1);
    lapsing.refresh_before_ms = Some(T0 + 1_000);
    let mut forever = subscription("alice", "https://hooks.example/y", 1);
    forever.refresh_before_ms = None;
    store.upsert(lapsing.clone(), WebhookCaps::default(), T0).await.expect("create");
    store.upsert(forever.clone(), WebhookCaps::default(), T0).await.expect("create");
    store.enqueue(entry(&lapsing, "e1", 1, T0)).await.expect("enqueue");
    for url in ["https://hooks.example/x", "https://hooks.example/y", "https://hooks.example/z"] {
        store.set_verified("alice", url, T0).await.expect("verify");
    }
    assert_eq!(store.sweep(T0 + 999).await.expect("sweep"), 0, "nothing lapsed yet");
    let late = T0 + 1_000 + VERIFICATION_KEEP_MS + 1;
    assert_eq!(store.sweep(late).await.expect("sweep"), 1, "the lapsed one");
    assert!(!store.remove("alice", &lapsing.id, late).await.expect("remove"), "already gone");
    assert!(store.get("alice", &forever.id, late).await.expect("get").is_some(), "no expiry: kept");
    let live = store.live(late, None, 10).await.expect("live");
    assert_eq!(live.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), [forever.id.as_str()]);
    assert!(store.verified("alice", "https://hooks.example/y").await.expect("verified"), "named by a subscription");
    assert!(!store.verified("alice", "https://hooks.example/x").await.expect("verified"), "unused and old");
    assert!(!store.verified("alice", "https://hooks.example/z").await.expect("verified"));
    assert!(store.claim(NODE_A, late, 1_000, 10).await.expect("claim").is_empty());
    assert_eq!(store.sweep(late).await.expect("sweep"), 0);
}
