//! `events/subscribe` and `events/unsubscribe` with webhooks on: what is
//! refused (and that a refusal stores nothing), the caps, the TTL grant, a
//! failed handshake that never repeats the endpoint's words, and that one
//! principal cannot end another's subscription.

use super::*;
use conduit_mcp::ext::events::webhook::WebhookCaps;

// subscribe-auth-required, subscribe-url-https-required, subscribe-secret-format, error-unsupported,
// subscribe-webhook-offered (events/list), subscribe-ttl-null-only-when-asked
#[tokio::test]
async fn subscribe_refuses_what_it_must_and_stores_nothing_then() {
    let h = hooks().await;
    let listed = h.f.send_as(Some("alice"), &ereq(1, "events/list", json!({}))).await.assert_ok(&json!(1));
    let tsc = listed["events"].as_array().unwrap().iter().find(|e| e["name"] == "task.status_changed").unwrap();
    assert_eq!(tsc["delivery"], json!(["poll", "push", "webhook"]));

    let ok = h.params("task.status_changed", json!({}), &secret(1));
    let e = error_of(&h.subscribe(None, 2, ok.clone()).await, 2, -32012);
    assert!(e["data"]["reason"].is_string());
    let mut http = ok.clone();
    http["delivery"]["url"] = json!("http://127.0.0.1:9/h");
    error_of(&h.subscribe(Some("alice"), 3, http).await, 3, -32602);
    let mut short = ok.clone();
    short["delivery"]["secret"] = json!(format!("whsec_{}", "QUJD"));
    error_of(&h.subscribe(Some("alice"), 4, short).await, 4, -32602);
    let mut bare = ok.clone();
    bare["delivery"]["secret"] = json!(secret(1).to_text().trim_start_matches("whsec_"));
    error_of(&h.subscribe(Some("alice"), 5, bare).await, 5, -32602);
    let unknown = h.params("no.such.event", json!({}), &secret(1));
    error_of(&h.subscribe(Some("alice"), 6, unknown).await, 6, -32011);
    let bad_args = h.params("task.status_changed", json!({ "statuses": ["done"] }), &secret(1));
    error_of(&h.subscribe(Some("alice"), 7, bad_args).await, 7, -32602);
    let push_only = h.params("push.only", json!({}), &secret(1));
    let e = error_of(&h.subscribe(Some("alice"), 8, push_only).await, 8, -32014);
    assert_eq!(e["data"], json!({ "feature": "deliveryMode", "value": "webhook" }));
    let mut bad_cursor = ok.clone();
    bad_cursor["cursor"] = json!("AAAA");
    error_of(&h.subscribe(Some("alice"), 9, bad_cursor).await, 9, -32602);
    assert_eq!(h.store.subscriptions(), 0, "nothing stored");
    assert!(h.receiver.nothing_yet().await, "nothing dialled");

    // ttlMs: null is not granted here: a finite refreshBefore.
    let mut forever = ok.clone();
    forever["ttlMs"] = Value::Null;
    let r = h.subscribe(Some("alice"), 10, forever).await.assert_ok(&json!(10));
    assert!(r["refreshBefore"].is_string(), "{r}");
}

// subscribe-resource-exhausted
#[tokio::test]
async fn a_principal_past_its_cap_is_refused_with_the_limit() {
    let h = hooks_with(|c| {
        let mut caps = WebhookCaps::default();
        caps.max_per_principal = 1;
        c.caps(caps)
    })
    .await;
    let first = h.params("task.status_changed", json!({}), &secret(1));
    h.subscribe(Some("alice"), 1, first.clone()).await.assert_ok(&json!(1));
    let second = h.params("task.status_changed", json!({ "statuses": ["failed"] }), &secret(1));
    let e = error_of(&h.subscribe(Some("alice"), 2, second.clone()).await, 2, -32013);
    assert_eq!(e["data"], json!({ "limit": "subscriptions", "max": 1 }));
    // A refresh of the one it holds passes; bob has his own cap.
    h.subscribe(Some("alice"), 3, first).await.assert_ok(&json!(3));
    h.subscribe(Some("bob"), 4, second).await.assert_ok(&json!(4));
}

// subscribe-callback-challenge-failed, callback-error-no-body-leak
#[tokio::test]
async fn a_failed_handshake_is_challenge_failed_without_the_endpoints_words() {
    let h = hooks().await;
    let marker = "MARKER-7f3a-do-not-echo";
    for (i, (status, body)) in [
        (200, json!({ "challenge": "wrong", "note": marker }).to_string()),
        (500, format!("internal error {marker}")),
        (302, marker.to_owned()),
    ]
    .into_iter()
    .enumerate()
    {
        h.receiver.script.lock().unwrap().verification = Some((status, body));
        let id = i64::try_from(i).unwrap() + 1;
        let r = h.subscribe(Some("alice"), id, h.params("task.status_changed", json!({}), &secret(1))).await;
        let e = error_of(&r, id, -32015);
        assert_eq!(e["data"], json!({ "reason": "challenge_failed" }), "{status}");
        assert!(!r.body.to_string().contains(marker), "{}", r.body);
        assert_eq!(h.receiver.next().await.json()["type"], "verification");
    }
    assert_eq!(h.store.subscriptions(), 0, "not activated");
}

// subscribe-verified-origin (the operator vouches: no handshake)
#[tokio::test]
async fn an_origin_the_operator_vouches_for_is_not_asked() {
    let h = hooks_with(|c| {
        let origin = c.allow_origins[0].clone();
        c.verified_origin(origin)
    })
    .await;
    h.subscribe(Some("alice"), 1, h.params("task.status_changed", json!({}), &secret(1))).await.assert_ok(&json!(1));
    let task = h.start_job("alice").await;
    h.complete(&task).await;
    let first = h.receiver.next().await;
    assert_eq!(first.json()["data"]["taskId"], json!(task), "the first request is the event, no handshake");
}

// unsubscribe-unknown-not-found, unsubscribe-key-scoped-to-principal, subscribe-id-not-an-input
#[tokio::test]
async fn unsubscribe_ends_only_the_callers_own_subscription() {
    let h = hooks().await;
    let params = h.params("task.status_changed", json!({}), &secret(1));
    let id = h.subscribe(Some("alice"), 1, params).await.assert_ok(&json!(1))["id"].clone();
    assert!(id.is_string(), "{id}");
    // The id routes deliveries; no method takes it in place of the key.
    let by_id = json!({ "id": id });
    error_of(&h.f.send_as(Some("alice"), &ereq(7, "events/unsubscribe", by_id)).await, 7, -32602);
    assert_eq!(h.store.subscriptions(), 1, "an id alone ends nothing");
    let unsub = json!({ "name": "task.status_changed", "arguments": {},
                        "delivery": { "mode": "webhook", "url": h.receiver.url } });
    error_of(&h.f.send_as(None, &ereq(2, "events/unsubscribe", unsub.clone())).await, 2, -32012);
    let e = error_of(&h.f.send_as(Some("bob"), &ereq(3, "events/unsubscribe", unsub.clone())).await, 3, -32011);
    assert_eq!(e["data"]["kind"], "subscription");
    assert_eq!(h.store.subscriptions(), 1, "bob ended nothing");
    let mut other_args = unsub.clone();
    other_args["arguments"] = json!({ "statuses": ["failed"] });
    error_of(&h.f.send_as(Some("alice"), &ereq(4, "events/unsubscribe", other_args)).await, 4, -32011);
    let r = h.f.send_as(Some("alice"), &ereq(5, "events/unsubscribe", unsub.clone())).await;
    assert_eq!(r.assert_ok(&json!(5))["resultType"], "complete");
    assert_eq!(h.store.subscriptions(), 0);
    error_of(&h.f.send_as(Some("alice"), &ereq(6, "events/unsubscribe", unsub)).await, 6, -32011);
}
