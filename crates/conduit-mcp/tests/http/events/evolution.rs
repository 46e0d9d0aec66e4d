//! An event type offered again under its name: unchanged or only adding
//! optional payload properties, its live streams and cursors go on (and its
//! earlier publishers still reach them); any other change ends its streams
//! with `Unsupported`, `reason: "schema_changed"`, naming the schema.

use super::*;

/// `incident.created` with an optional property added to its payload.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IncidentV2 {
    pub incident_id: String,
    pub severity: Severity,
    /// One line about it, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

struct IncidentCreatedV2;

impl TypedEvent for IncidentCreatedV2 {
    type Arguments = IncidentFilter;
    type Payload = IncidentV2;
    const NAME: &'static str = "incident.created";
    const DESCRIPTION: &'static str = "Fires when an incident is opened (with a summary when known)";

    fn matches(arguments: &IncidentFilter, payload: &IncidentV2) -> bool {
        arguments.severity.is_none_or(|s| s == payload.severity)
    }
}

/// `incident.created` whose `incidentId` became a number: breaking.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct NumberedIncident {
    incident_id: u64,
    severity: Severity,
}

struct IncidentCreatedNumbered;

impl TypedEvent for IncidentCreatedNumbered {
    type Arguments = IncidentFilter;
    type Payload = NumberedIncident;
    const NAME: &'static str = "incident.created";
    const DESCRIPTION: &'static str = "Fires when an incident is opened";
}

/// `push.only` with a required argument: breaking.
#[derive(Deserialize, JsonSchema)]
struct Channel {
    #[allow(dead_code)]
    channel: String,
}

struct PushOnlyByChannel;

impl TypedEvent for PushOnlyByChannel {
    type Arguments = Channel;
    type Payload = serde_json::Map<String, Value>;
    const NAME: &'static str = "push.only";
    const DESCRIPTION: &'static str = "Offered on push streams only";

    fn delivery() -> Vec<DeliveryMode> {
        vec![DeliveryMode::Push]
    }
}

fn ids(v: &Value) -> Vec<&str> {
    v["events"].as_array().unwrap().iter().map(|e| e["data"]["incidentId"].as_str().unwrap()).collect()
}

/// A `subscriptions/listen` stream of alice's asking for `eventsListChanged`, acknowledged.
async fn listen_list_changed(f: &Fixture) -> SseStream {
    let listen = ereq(5, "subscriptions/listen", json!({ "notifications": { "eventsListChanged": true } }));
    let t = "Bearer alice-token".to_owned();
    let resp = guard("listen", f.h.post_with(&listen, |hd| set(hd, "authorization", &t)).send()).await.unwrap();
    let mut l = SseStream::new(resp);
    assert_eq!(l.next().await.unwrap()["method"], "notifications/subscriptions/acknowledged");
    l
}

// removal-additive-no-terminate, schema-evolution-additive, list-changed-notification
#[tokio::test]
async fn offered_again_unchanged_or_only_adding_properties_its_streams_and_cursors_go_on() {
    let f = fixture().await;
    let mut listen = listen_list_changed(&f).await;
    let start = f.poll(Some("alice"), json!({ "name": "incident.created" })).await;
    let mut s = f.open_as("alice", 1, json!({ "name": "incident.created", "arguments": { "severity": "P1" } })).await;
    assert_eq!(next_non_heartbeat(&mut s).await["method"], "notifications/events/active");
    f.incidents.publish(incident("a", Severity::P1), alice()).unwrap();
    assert_eq!(next_non_heartbeat(&mut s).await["params"]["data"]["incidentId"], "a");

    // The same type again: the stream goes on.
    let again = f.events.typed::<IncidentCreated>();
    again.publish(incident("b", Severity::P1), alice()).unwrap();
    assert_eq!(next_non_heartbeat(&mut s).await["params"]["data"]["incidentId"], "b");

    // An optional payload property added (and a new description): listed anew, the stream goes on.
    let v2 = f.events.typed::<IncidentCreatedV2>();
    let changed = listen.next().await.expect("list_changed");
    assert_eq!(changed["method"], "notifications/events/list_changed", "the first list_changed: {changed}");
    let r = f.send_as(Some("alice"), &ereq(2, "events/list", json!({}))).await;
    let listed = &r.assert_ok(&json!(2))["events"][0];
    assert!(listed["payloadSchema"]["properties"].get("summary").is_some(), "{listed}");
    let with = IncidentV2 { incident_id: "c".into(), severity: Severity::P1, summary: Some("disk full".into()) };
    v2.publish(with, alice()).unwrap();
    let c = next_non_heartbeat(&mut s).await;
    assert_eq!(c["method"], "notifications/events/event", "not terminated: {c}");
    assert_eq!(c["params"]["data"], json!({ "incidentId": "c", "severity": "P1", "summary": "disk full" }));
    // The arguments still filter, and a publisher of the first type still reaches the stream.
    v2.publish(IncidentV2 { incident_id: "skip".into(), severity: Severity::P2, summary: None }, alice()).unwrap();
    f.incidents.publish(incident("d", Severity::P1), alice()).unwrap();
    let d = next_non_heartbeat(&mut s).await;
    assert_eq!(d["params"]["data"], json!({ "incidentId": "d", "severity": "P1" }));

    // A cursor from before the changes still reads the one log, whole.
    let p1 = json!({ "severity": "P1" });
    let polled =
        f.poll(Some("alice"), json!({ "name": "incident.created", "arguments": p1, "cursor": start["cursor"] })).await;
    assert_eq!(polled["truncated"], false, "{polled}");
    assert_eq!(ids(&polled), ["a", "b", "c", "d"]);
    // And the stream's own cursor resumes where it was.
    let after_c = f.poll(Some("alice"), json!({ "name": "incident.created", "cursor": c["params"]["cursor"] })).await;
    assert_eq!(ids(&after_c), ["skip", "d"]);
}

// removal-terminates-subscriptions, removal-error-schema-changed
#[tokio::test]
async fn offered_again_with_a_breaking_change_its_streams_end_naming_the_schema() {
    let f = fixture().await;
    let start = f.poll(Some("alice"), json!({ "name": "incident.created" })).await;
    let mut incidents = f.open_as("alice", 1, json!({ "name": "incident.created" })).await;
    let mut pushed = f.open_as("alice", 2, json!({ "name": "push.only" })).await;
    for s in [&mut incidents, &mut pushed] {
        assert_eq!(next_non_heartbeat(s).await["method"], "notifications/events/active");
    }
    f.incidents.publish(incident("a", Severity::P1), alice()).unwrap();
    assert_eq!(next_non_heartbeat(&mut incidents).await["params"]["data"]["incidentId"], "a");

    let numbered = f.events.typed::<IncidentCreatedNumbered>();
    f.events.typed::<PushOnlyByChannel>();
    for (s, id, feature) in [(&mut incidents, 1, "payloadSchema"), (&mut pushed, 2, "inputSchema")] {
        let end = next_non_heartbeat(s).await;
        assert_eq!(end["method"], "notifications/events/terminated", "{end}");
        let error = &end["params"]["error"];
        assert_eq!(error["code"], -32014, "Unsupported, not Forbidden: {end}");
        assert_eq!(error["data"], json!({ "feature": feature, "reason": "schema_changed" }));
        let result = next_non_heartbeat(s).await;
        assert_eq!(result["id"], id);
        assert_eq!(result["result"]["resultType"], "complete");
        assert!(s.next().await.is_none(), "the stream ends after its result");
    }
    // The new type keeps a log of its own: a cursor from before is told it lost its place.
    numbered.publish(NumberedIncident { incident_id: 7, severity: Severity::P1 }, alice()).unwrap();
    let polled = f.poll(Some("alice"), json!({ "name": "incident.created", "cursor": start["cursor"] })).await;
    assert_eq!(polled["truncated"], true, "{polled}");
    // A new stream follows the new type.
    let mut fresh = f.open_as("alice", 3, json!({ "name": "incident.created" })).await;
    assert_eq!(next_non_heartbeat(&mut fresh).await["params"]["truncated"], false);
    numbered.publish(NumberedIncident { incident_id: 8, severity: Severity::P1 }, alice()).unwrap();
    assert_eq!(next_non_heartbeat(&mut fresh).await["params"]["data"]["incidentId"], 8);
}
