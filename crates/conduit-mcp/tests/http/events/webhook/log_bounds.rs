//! What the bounded log and the body bound do to webhooks: occurrences
//! evicted before a subscription was fed are a signed `gap` envelope; a
//! subscribe from a cursor the log no longer serves says `truncated` and
//! starts at what is kept; a body is never longer than 256 KiB.
//!
//! Each test's runtime has one thread, so nothing the server does runs
//! between two `publish` calls with no `.await` between them.

use super::*;
use conduit_mcp::ext::events::PublishError;

/// Subscribes alice to `alert.raised` (offered already) from `cursor`, and
/// sees the handshake through; the answer.
async fn subscribed(h: &Hooks, key: &WebhookSecret, cursor: Option<&Value>) -> Value {
    let mut params = h.params("alert.raised", json!({}), key);
    if let Some(c) = cursor {
        params["cursor"] = c.clone();
    }
    let r = h.subscribe(Some("alice"), 2, params).await;
    let result = r.assert_ok(&json!(2)).clone();
    assert_def("JSONRPCResultResponse", &r.body);
    assert_eq!(h.receiver.next().await.json()["type"], "verification");
    result
}

fn text_of(v: &Value) -> &str {
    v["data"]["text"].as_str().unwrap_or_default()
}

// envelope-gap, envelope-type-discriminator, envelope-signed-like-deliveries
#[tokio::test]
async fn occurrences_evicted_before_they_were_fed_are_a_signed_gap_envelope() {
    let h = hooks_over(EventsConfig::new().retained(2, 1 << 20), |c| c).await;
    let alerts = h.f.events.typed::<AlertRaised>();
    let key = secret(5);
    let sub = subscribed(&h, &key, None).await;
    let id = sub["id"].as_str().unwrap();
    alerts.publish(alert("a"), Audience::principal("alice")).unwrap();
    let a = h.receiver.next().await;
    let a_body = a.json();
    assert_eq!(text_of(&a_body), "a");
    // An occurrence is told from an envelope by having no `type`.
    assert!(a_body.get("type").is_none() && a_body["eventId"].is_string(), "{a_body}");
    // Fed through a; b is evicted by c and d before the feeder reads again.
    for text in ["b", "c", "d"] {
        alerts.publish(alert(text), Audience::principal("alice")).unwrap();
    }
    let mut got: Vec<Received> = Vec::new();
    for _ in 0..3 {
        got.push(h.receiver.next().await);
    }
    let (gaps, events): (Vec<&Received>, Vec<&Received>) = got.iter().partition(|r| r.json().get("type").is_some());
    assert_eq!(gaps.len(), 1, "one gap envelope: {got:?}");
    let gap = gaps[0];
    let body = gap.json();
    assert_eq!(body["type"], "gap", "{body}");
    let cursor = body["cursor"].as_str().expect("a fresh cursor");
    assert_eq!(body.as_object().unwrap().len(), 2, "type and cursor only: {body}");
    assert!(gap.id.starts_with("msg_gap_") && gap.id.len() == 8 + 32, "{}", gap.id);
    assert_eq!(gap.subscription, id);
    assert_eq!(gap.content_type, "application/json");
    assert!(gap.signed_by(&key), "signed like a delivery");
    let mut texts: Vec<String> = events.iter().map(|r| text_of(&r.json()).to_owned()).collect();
    texts.sort();
    assert_eq!(texts, ["c", "d"], "b never went");
    for e in &events {
        let v = e.json();
        assert!(v.get("type").is_none(), "{v}");
        assert_eq!(e.id, v["eventId"].as_str().unwrap());
        assert!(e.signed_by(&key));
    }
    // The gap's cursor is where delivery went on: a poll from it sees c and d, nothing lost since.
    let after = h.f.poll(Some("alice"), json!({ "name": "alert.raised", "cursor": cursor })).await;
    assert_eq!(after["truncated"], false, "{after}");
    let polled: Vec<&str> = after["events"].as_array().unwrap().iter().map(text_of).collect();
    assert_eq!(polled, ["c", "d"]);
}

// subscribe-response-truncated
#[tokio::test]
async fn a_subscribe_from_a_cursor_older_than_the_log_says_truncated_and_starts_at_what_is_kept() {
    let h = hooks_over(EventsConfig::new().retained(2, 1 << 20), |c| c).await;
    let alerts = h.f.events.typed::<AlertRaised>();
    let old = h.f.poll(Some("alice"), json!({ "name": "alert.raised" })).await["cursor"].clone();
    for text in ["a", "b", "c"] {
        alerts.publish(alert(text), Audience::principal("alice")).unwrap();
    }
    let key = secret(6);
    let sub = subscribed(&h, &key, Some(&old)).await;
    assert_eq!(sub["truncated"], true, "a was evicted: {sub}");
    // The answered cursor is where delivery starts: b and c follow it, whole.
    let from = h.f.poll(Some("alice"), json!({ "name": "alert.raised", "cursor": sub["cursor"] })).await;
    assert_eq!(from["truncated"], false, "{from}");
    let polled: Vec<&str> = from["events"].as_array().unwrap().iter().map(text_of).collect();
    assert_eq!(polled, ["b", "c"]);
    let mut texts = Vec::new();
    for _ in 0..2 {
        let got = h.receiver.next().await.json();
        assert!(got.get("type").is_none(), "an occurrence, not a gap: {got}");
        texts.push(text_of(&got).to_owned());
    }
    texts.sort();
    assert_eq!(texts, ["b", "c"]);
    // The loss was said once, in the answer: no gap envelope follows.
    h.store.until("delivered", |st| st.waiting().is_empty()).await;
    assert!(h.receiver.nothing_yet().await, "no gap envelope after a truncated subscribe");
}

// delivery-body-size
#[tokio::test]
async fn a_webhook_body_is_at_most_256_kib_the_envelope_counted() {
    const BOUND: usize = 256 * 1024;
    let h = hooks().await;
    let alerts = h.f.events.typed::<AlertRaised>();
    let key = secret(8);
    subscribed(&h, &key, None).await;
    let alice = || Audience::principal("alice");
    // A payload of the bound alone is refused: its envelope would take the body past it.
    let refused = alerts.publish_with_id("up-1", alert(&"x".repeat(BOUND)), alice()).unwrap_err();
    let PublishError::TooLarge { len, max } = refused else { panic!("{refused:?}") };
    assert_eq!(max, BOUND);
    // Shortened by what it is over: a body of the bound exactly, delivered.
    let fits = BOUND - (len - BOUND);
    alerts.publish_with_id("up-1", alert(&"x".repeat(fits)), alice()).unwrap();
    // One byte more is refused at publish.
    let over = alerts.publish_with_id("up-2", alert(&"y".repeat(fits + 1)), alice()).unwrap_err();
    assert_eq!(over, PublishError::TooLarge { len: BOUND + 1, max: BOUND });
    let got = h.receiver.next().await;
    assert_eq!(got.body.len(), BOUND, "the whole body, envelope and cursor included");
    assert!(got.signed_by(&key));
    let body = got.json();
    assert_eq!(body["eventId"], "up-1");
    assert_eq!(text_of(&body).len(), fits);
    assert!(body["cursor"].is_string(), "the cursor counted is there");
    h.store.until("delivered", |st| st.waiting().is_empty()).await;
    assert!(h.receiver.nothing_yet().await, "the refused one never went");
    // A made eventId is counted at its longest: a payload that fits with a short upstream id may not without one.
    let made = alerts.publish(alert(&"x".repeat(fits)), alice());
    assert!(matches!(made, Err(PublishError::TooLarge { .. })), "{made:?}");
}
