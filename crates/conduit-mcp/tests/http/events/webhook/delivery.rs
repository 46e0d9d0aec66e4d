//! Deliveries: the handshake, a task's completion signed and delivered, a
//! refresh (same id, deliveryStatus, a rotated secret signing beside the
//! old), retries with a fresh signature, 410 not retried, and the end of a
//! task-scoped subscription.

use super::*;
use conduit_mcp::clock::Clock;

// subscribe-verification-handshake, delivery-signature, delivery-headers, subscribe-refresh-same-id
#[tokio::test]
async fn a_completed_task_reaches_the_receiver_signed_after_the_handshake() {
    let h = hooks().await;
    let old = secret(1);
    let params = h.params("task.status_changed", json!({}), &old);
    let r = h.subscribe(Some("alice"), 2, params.clone()).await;
    let first = r.assert_ok(&json!(2));
    assert_def("JSONRPCResultResponse", &r.body);
    let id = first["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("sub_") && id.len() == 36, "{first}");
    assert!(first["refreshBefore"].is_string() && first["cursor"].is_string(), "{first}");
    assert_eq!(first["truncated"], false);
    assert!(first.get("deliveryStatus").is_none(), "only on a refresh");

    // The handshake came first, signed, naming the subscription.
    let hello = h.receiver.next().await;
    assert_eq!(hello.json()["type"], "verification");
    assert!(hello.id.starts_with("msg_verification_"), "{}", hello.id);
    assert_eq!(hello.subscription, id);
    assert!(hello.signed_by(&old));

    let task = h.start_job("alice").await;
    h.complete(&task).await;
    let got = h.receiver.next().await;
    let body = got.json();
    assert_eq!(body["name"], "task.status_changed");
    assert_eq!(body["data"]["taskId"], json!(task));
    assert_eq!(body["data"]["status"], "completed");
    assert!(body["cursor"].is_string(), "{body}");
    assert_eq!(got.id, body["eventId"].as_str().unwrap(), "webhook-id is the eventId");
    assert_eq!(got.subscription, id);
    assert_eq!(got.content_type, "application/json");
    assert_eq!(got.timestamp, i64::try_from(h.f.clock.now_ms() / 1000).unwrap());
    assert!(got.signed_by(&old), "signed over the raw body");
    assert!(!got.signed_by(&secret(9)));

    // A refresh with a new secret: the same id, how delivery went, no second handshake.
    let new = secret(2);
    let r = h.subscribe(Some("alice"), 3, h.params("task.status_changed", json!({}), &new)).await;
    let again = r.assert_ok(&json!(3));
    assert_eq!(again["id"], json!(id));
    assert_eq!(again["deliveryStatus"]["active"], true, "{again}");
    assert!(again["deliveryStatus"].get("lastError").is_none(), "{again}");
    assert!(h.receiver.nothing_yet().await, "a proven (principal, url) is not asked again");
    // The cursor it answers is a cursor this principal can poll from.
    h.f.poll(Some("alice"), json!({ "name": "task.status_changed", "cursor": again["cursor"] })).await;

    // Within the grace window both secrets sign.
    let task = h.start_job("alice").await;
    h.complete(&task).await;
    let got = h.receiver.next().await;
    assert_eq!(got.signature.split(' ').count(), 2, "{}", got.signature);
    assert!(got.signed_by(&old) && got.signed_by(&new));
}

// delivery-retry-new-signature, delivery-410-no-retry
#[tokio::test]
async fn a_failed_delivery_is_retried_with_a_fresh_signature_and_a_410_is_not() {
    let h = hooks().await;
    let key = secret(3);
    h.subscribe(Some("alice"), 2, h.params("task.status_changed", json!({}), &key)).await.assert_ok(&json!(2));
    assert_eq!(h.receiver.next().await.json()["type"], "verification");
    h.receiver.script.lock().unwrap().deliveries.extend([500, 204]);

    let task = h.start_job("alice").await;
    h.complete(&task).await;
    let first = h.receiver.next().await;
    h.store.until("the 500 settled", |st| st.waiting().iter().any(|(_, _, attempts)| *attempts == 1)).await;
    h.f.clock.advance(31_000);
    let second = h.receiver.next().await;
    assert_eq!(second.id, first.id, "the same webhook-id");
    assert_eq!(second.body, first.body, "the same bytes");
    assert_eq!(second.timestamp, first.timestamp + 31, "this attempt's time");
    assert_ne!(second.signature, first.signature);
    assert!(first.signed_by(&key) && second.signed_by(&key));
    h.store.until("delivered", |st| st.waiting().is_empty()).await;

    // 410: dropped at once, however long one waits.
    h.receiver.script.lock().unwrap().deliveries.push_back(410);
    let task = h.start_job("alice").await;
    h.complete(&task).await;
    let gone = h.receiver.next().await;
    assert_eq!(gone.json()["data"]["taskId"], json!(task));
    h.store.until("the 410 settled", |st| st.waiting().is_empty()).await;
    h.f.clock.advance(20 * 60_000); // past any retry, within the TTL
    // The next event still goes: the subscription is unaffected.
    let task = h.start_job("alice").await;
    h.complete(&task).await;
    let next = h.receiver.next().await;
    assert_eq!(next.json()["data"]["taskId"], json!(task), "not the 410's event again");
    assert_ne!(next.id, gone.id);
}

// subscription-termination (a task-scoped subscription ends with its task)
#[tokio::test]
async fn a_task_scoped_subscription_ends_with_a_terminated_envelope() {
    let h = hooks().await;
    let task = h.start_job("alice").await;
    let params = h.params("task.status_changed", json!({ "taskId": task }), &secret(4));
    h.subscribe(Some("alice"), 2, params.clone()).await.assert_ok(&json!(2));
    assert_eq!(h.receiver.next().await.json()["type"], "verification");
    h.complete(&task).await;
    let event = h.receiver.next().await;
    assert_eq!(event.json()["data"]["status"], "completed");
    let end = h.receiver.next().await;
    let body = end.json();
    assert_eq!(body["type"], "terminated", "{body}");
    assert_eq!(body["error"]["code"], -32011);
    assert_eq!(body["error"]["data"], json!({ "kind": "subscription", "reason": "task_terminal" }));
    assert!(end.id.starts_with("msg_terminated_") && end.signed_by(&secret(4)));
    // It no longer exists.
    h.store.until("removed", |st| st.subscriptions() == 0).await;
    let unsub = json!({ "name": "task.status_changed", "arguments": { "taskId": task },
                        "delivery": { "url": h.receiver.url } });
    error_of(&h.f.send_as(Some("alice"), &ereq(9, "events/unsubscribe", unsub)).await, 9, -32011);
}

// delivery-suspension, subscribe-refresh-delivery-status, subscribe-refresh-reactivates
#[tokio::test]
async fn sustained_failure_suspends_and_a_refresh_says_so_and_resumes() {
    use conduit_mcp::ext::events::webhook::{RetryPolicy, SuspendPolicy};
    let h = hooks_with(|c| {
        c.retry(RetryPolicy::new(10, Duration::from_secs(30), Duration::from_secs(30)))
            .suspend(SuspendPolicy::new(Duration::from_secs(60), 3))
    })
    .await;
    let key = secret(7);
    let params = h.params("task.status_changed", json!({}), &key);
    h.subscribe(Some("alice"), 1, params.clone()).await.assert_ok(&json!(1));
    assert_eq!(h.receiver.next().await.json()["type"], "verification");
    h.receiver.script.lock().unwrap().deliveries.extend([500, 500, 500, 500]);
    let task = h.start_job("alice").await;
    h.complete(&task).await;
    // Three failures over 60 s: suspended.
    for attempts in 1..=3u32 {
        let got = h.receiver.next().await;
        assert_eq!(got.json()["data"]["taskId"], json!(task));
        h.store.until("settled", |st| st.waiting().iter().any(|(_, _, a)| *a == attempts)).await;
        h.f.clock.advance(30_000);
    }
    // Suspended: the retry now due is not tried.
    assert!(h.receiver.nothing_yet().await, "nothing tried while suspended");
    h.receiver.script.lock().unwrap().deliveries.clear();
    let r = h.subscribe(Some("alice"), 2, params.clone()).await.assert_ok(&json!(2));
    let status = &r["deliveryStatus"];
    assert_eq!(status["active"], false, "{r}");
    assert_eq!(status["lastError"], "http_5xx");
    assert!(status["failedSince"].is_string(), "{r}");
    // The refresh reactivated it: the pending retry goes again (and now succeeds).
    let again = h.receiver.next().await;
    assert_eq!(again.json()["data"]["taskId"], json!(task));
    h.store.until("delivered", |st| st.waiting().is_empty()).await;
    let r = h.subscribe(Some("alice"), 3, params).await.assert_ok(&json!(3));
    assert_eq!(r["deliveryStatus"], json!({ "active": true }), "{r}");
}
