//! A webhook subscription when its event type is offered again: it goes on
//! after an additive change and ends with a signed `terminated` envelope
//! (`Unsupported`, `reason: "schema_changed"`) after any other, and with
//! one (`NotFound`) when the type is removed.

use super::*;

/// `alert.raised` under a new description, its schemas unchanged.
struct AlertRaisedReworded;

impl TypedEvent for AlertRaisedReworded {
    type Arguments = serde_json::Map<String, Value>;
    type Payload = serde_json::Map<String, Value>;
    const NAME: &'static str = "alert.raised";
    const DESCRIPTION: &'static str = "Fires when an alert is raised or raised again";

    fn delivery() -> Vec<DeliveryMode> {
        AlertRaised::delivery()
    }
}

/// `alert.raised` whose payload is now a fixed shape: breaking.
#[derive(Serialize, JsonSchema)]
struct Level {
    level: u8,
}

struct AlertRaisedLevelled;

impl TypedEvent for AlertRaisedLevelled {
    type Arguments = serde_json::Map<String, Value>;
    type Payload = Level;
    const NAME: &'static str = "alert.raised";
    const DESCRIPTION: &'static str = "Fires when an alert is raised";

    fn delivery() -> Vec<DeliveryMode> {
        AlertRaised::delivery()
    }
}

// removal-additive-no-terminate, removal-terminates-subscriptions, removal-error-schema-changed,
// removal-error-not-found (webhook)
#[tokio::test]
async fn a_webhook_subscription_goes_on_after_an_additive_change_and_ends_after_a_breaking_one() {
    let h = hooks().await;
    let alerts = h.f.events.typed::<AlertRaised>();
    let key = secret(9);
    let r = h.subscribe(Some("alice"), 2, h.params("alert.raised", json!({}), &key)).await;
    let id = r.assert_ok(&json!(2))["id"].as_str().unwrap().to_owned();
    assert_eq!(h.receiver.next().await.json()["type"], "verification");
    alerts.publish(alert("a"), Audience::principal("alice")).unwrap();
    assert_eq!(h.receiver.next().await.json()["data"]["text"], "a");

    // Reworded, same schemas: the subscription is fed on, from both publishers.
    let reworded = h.f.events.typed::<AlertRaisedReworded>();
    reworded.publish(alert("b"), Audience::principal("alice")).unwrap();
    let b = h.receiver.next().await.json();
    assert_eq!((&b["data"]["text"], b.get("type")), (&json!("b"), None), "{b}");
    alerts.publish(alert("c"), Audience::principal("alice")).unwrap();
    assert_eq!(h.receiver.next().await.json()["data"]["text"], "c");
    h.store.until("delivered", |st| st.waiting().is_empty()).await;
    assert_eq!(h.store.subscriptions(), 1);

    // A payload of another shape: the subscription ends, told why, signed.
    h.f.events.typed::<AlertRaisedLevelled>();
    let end = h.receiver.next().await;
    let body = end.json();
    assert_eq!(body["type"], "terminated", "{body}");
    assert_eq!(body["error"]["code"], -32014);
    assert_eq!(body["error"]["data"], json!({ "feature": "payloadSchema", "reason": "schema_changed" }));
    assert!(end.id.starts_with("msg_terminated_") && end.signed_by(&key));
    assert_eq!(end.subscription, id);
    h.store.until("removed", |st| st.subscriptions() == 0).await;

    // Subscribed again, to the new type (the URL is proven already: no handshake); removing the
    // type ends it too, with NotFound.
    let r = h.subscribe(Some("alice"), 3, h.params("alert.raised", json!({}), &key)).await;
    assert_eq!(r.assert_ok(&json!(3))["id"], json!(id), "the same key, a new subscription");
    h.store.until("subscribed", |st| st.subscriptions() == 1).await;
    assert!(h.f.events.remove("alert.raised"));
    let gone = h.receiver.next().await;
    let body = gone.json();
    assert_eq!(body["type"], "terminated", "{body}");
    assert_eq!(body["error"]["code"], -32011);
    assert_eq!(body["error"]["data"], json!({ "kind": "event" }));
    assert!(gone.signed_by(&key));
    h.store.until("removed", |st| st.subscriptions() == 0).await;
}
