//! `events/stream`: the push stream's notifications, heartbeats, caps,
//! cancellation, termination, and `notifications/events/list_changed`.

use super::*;
use std::time::Duration;

fn sub_id(m: &Value) -> &Value {
    &m["params"]["_meta"][SUB_ID]
}

// stream-implemented, stream-active-confirmation, stream-subscription-id-meta,
// stream-event-notification, stream-carries-only-event-notifications, occurrence-meta-ungoverned
#[tokio::test]
async fn a_stream_confirms_then_pushes_each_matching_event_with_its_cursor() {
    let f = fixture().await;
    let mut s = f.open_as("alice", 41, json!({ "name": "incident.created", "arguments": { "severity": "P1" } })).await;
    assert_eq!(s.status, 200);
    assert!(s.headers["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    let active = next_non_heartbeat(&mut s).await;
    assert_eq!(active["method"], "notifications/events/active");
    assert_eq!(active["params"]["truncated"], false);
    assert!(active["params"]["cursor"].is_string());
    assert_eq!(sub_id(&active), &json!(41));
    f.incidents.publish(incident("skip", Severity::P2), alice()).unwrap();
    f.incidents.publish(incident("bob's", Severity::P1), Audience::principal("bob")).unwrap();
    f.incidents.publish(incident("a", Severity::P1), alice()).unwrap();
    let ev = next_non_heartbeat(&mut s).await;
    assert_eq!(ev["method"], "notifications/events/event", "only event notifications: {ev}");
    assert_eq!(ev["params"]["data"]["incidentId"], "a");
    assert_eq!(ev["params"]["name"], "incident.created");
    assert!(ev["params"]["cursor"].is_string(), "push carries a cursor per event");
    assert_eq!(sub_id(&ev), &json!(41));
    // The event's cursor resumes after it: a poll from there sees only what came later.
    f.incidents.publish(incident("b", Severity::P1), alice()).unwrap();
    let ev_b = next_non_heartbeat(&mut s).await;
    assert_eq!(ev_b["params"]["data"]["incidentId"], "b");
    let after_a = f.poll(Some("alice"), json!({ "name": "incident.created", "cursor": ev["params"]["cursor"] })).await;
    let got: Vec<&Value> = after_a["events"].as_array().unwrap().iter().map(|e| &e["data"]["incidentId"]).collect();
    assert_eq!(got, [&json!("b")]);
    assert_eq!(after_a["events"][0]["eventId"], ev_b["params"]["eventId"], "one id in both modes");
}

// stream-error-before-open
#[tokio::test]
async fn an_invalid_subscription_is_an_immediate_error_and_no_stream() {
    let f = fixture().await;
    for (params, code) in [
        (json!({ "name": "nope" }), -32011),
        (json!({ "name": "incident.created", "arguments": { "severity": 1 } }), -32602),
        (json!({ "name": "incident.created", "cursor": "forged" }), -32602),
    ] {
        let r = f.send_as(Some("alice"), &ereq(9, "events/stream", params)).await;
        assert_eq!(r.content_type(), "application/json");
        error_of(&r, 9, code);
    }
}

// stream-replays-from-cursor (S9), stream-gap-resends-active
#[tokio::test]
async fn a_stream_from_a_cursor_replays_and_an_evicted_cursor_starts_truncated() {
    let f = fixture_with(EventsConfig::new().retained(2, 1 << 20), HttpConfig::default()).await;
    let start = f.poll(Some("alice"), json!({ "name": "incident.created" })).await;
    f.incidents.publish(incident("a", Severity::P1), alice()).unwrap();
    f.incidents.publish(incident("b", Severity::P1), alice()).unwrap();
    let mut s = f.open_as("alice", 1, json!({ "name": "incident.created", "cursor": start["cursor"] })).await;
    let active = next_non_heartbeat(&mut s).await;
    assert_eq!(active["params"]["truncated"], false);
    for want in ["a", "b"] {
        assert_eq!(next_non_heartbeat(&mut s).await["params"]["data"]["incidentId"], want);
    }
    f.incidents.publish(incident("c", Severity::P1), alice()).unwrap();
    let mut late = f.open_as("alice", 2, json!({ "name": "incident.created", "cursor": start["cursor"] })).await;
    let active = next_non_heartbeat(&mut late).await;
    assert_eq!(active["method"], "notifications/events/active");
    assert_eq!(active["params"]["truncated"], true, "a was evicted: {active}");
    for want in ["b", "c"] {
        assert_eq!(next_non_heartbeat(&mut late).await["params"]["data"]["incidentId"], want);
    }
}

// stream-heartbeat-required, stream-heartbeat-carries-cursor, stream-heartbeat-interval,
// stream-heartbeat-not-sse-comment
#[tokio::test]
async fn a_quiet_stream_sends_heartbeats_as_data_frames_carrying_the_cursor() {
    let f = fixture_with(EventsConfig::new().heartbeat(Duration::from_millis(50)), HttpConfig::default()).await;
    let mut s = f.open_as("alice", "hb", json!({ "name": "incident.created" })).await;
    let active = s.next().await.unwrap();
    assert_eq!(active["method"], "notifications/events/active");
    // Others' events move the position without sending anything to this stream.
    f.incidents.publish(incident("bob's", Severity::P1), Audience::principal("bob")).unwrap();
    let mut cursors = Vec::new();
    while cursors.len() < 2 {
        let m = s.next().await.expect("open");
        assert_message(&m);
        assert_eq!(m["method"], "notifications/events/heartbeat", "{m}");
        assert_eq!(sub_id(&m), &json!("hb"));
        cursors.push(m["params"]["cursor"].as_str().expect("a cursor").to_owned());
    }
    assert_ne!(active["params"]["cursor"].as_str().unwrap(), cursors[1], "the heartbeat cursor moved past bob's event");
    assert!(f.events.config().heartbeat <= Duration::from_secs(30));
}

// stream-exempt-from-concurrency-cap (the stream cap is its own), stream-cancel-stops-delivery,
// error-resource-exhausted
#[tokio::test]
async fn streams_are_capped_per_client_and_a_closed_stream_gives_its_slot_back() {
    // A short heartbeat: the server notices a closed stream when it next writes to it.
    let config = EventsConfig::new().max_streams(1, 10).heartbeat(Duration::from_millis(50));
    let f = fixture_with(config, HttpConfig::default()).await;
    let mut first = f.open_as("alice", 1, json!({ "name": "incident.created" })).await;
    next_non_heartbeat(&mut first).await;
    let r = f.send_as(Some("alice"), &ereq(2, "events/stream", json!({ "name": "incident.created" }))).await;
    let e = error_of(&r, 2, -32013);
    assert_eq!(e["data"], json!({ "limit": "streams", "max": 1 }));
    // Another principal has its own slot; other requests are not held up by the stream.
    let mut bob = f.open_as("bob", 3, json!({ "name": "incident.created" })).await;
    next_non_heartbeat(&mut bob).await;
    f.poll(Some("alice"), json!({ "name": "incident.created" })).await;
    drop(first);
    // The cancelled stream releases its slot: a new one opens once the server saw the close.
    let reopened = guard("the slot to be released", async {
        loop {
            let mut s = f.open_as("alice", 4, json!({ "name": "incident.created" })).await;
            if s.headers["content-type"] == "application/json" {
                // Still held: refused at once (the -32013 above), as a JSON answer.
                tokio::task::yield_now().await;
                continue;
            }
            return next_non_heartbeat(&mut s).await;
        }
    })
    .await;
    assert_eq!(sub_id(&reopened), &json!(4));
}

// stream-exempt-from-concurrency-cap
#[tokio::test]
async fn event_streams_and_listen_streams_never_count_against_each_others_caps() {
    let http = HttpConfig::default().max_listen_streams(1).max_listen_streams_per_client(1);
    let f = fixture_with(EventsConfig::new().max_streams(1, 10), http).await;
    let t = "Bearer alice-token".to_owned();
    let listen = |id: u64| ereq(id, "subscriptions/listen", json!({ "notifications": { "eventsListChanged": true } }));
    let resp = guard("listen", f.h.post_with(&listen(1), |hd| set(hd, "authorization", &t)).send()).await.unwrap();
    let mut held = SseStream::new(resp);
    assert_eq!(held.next().await.unwrap()["method"], "notifications/subscriptions/acknowledged");
    // The one listen stream the server allows is open: an event stream opens all the same.
    let mut events = f.open_as("alice", 2, json!({ "name": "incident.created" })).await;
    assert_eq!(events.headers["content-type"], "text/event-stream");
    next_non_heartbeat(&mut events).await;
    // The event streams' own cap (1, now full) still holds.
    let r = f.send_as(Some("alice"), &ereq(3, "events/stream", json!({ "name": "incident.created" }))).await;
    assert_eq!(error_of(&r, 3, -32013)["data"], json!({ "limit": "streams", "max": 1 }));
    // While the listen cap refuses a second listen stream.
    let second = guard("listen", f.h.post_with(&listen(4), |hd| set(hd, "authorization", &t)).send()).await.unwrap();
    assert_eq!(second.status(), 429, "the listen cap is full");
    // Requests of every other kind pass while both streams are open.
    f.poll(Some("alice"), json!({ "name": "incident.created" })).await;
    drop((held, events));
}

// removal-terminates-subscriptions, removal-error-not-found, stream-terminated-ends-subscription,
// stream-final-result-shape, stream-final-result-timing, list-changed-notification, capability-list-changed-flag
#[tokio::test]
async fn removing_a_type_terminates_its_streams_and_tells_list_changed_listeners() {
    let f = fixture().await;
    let listen = ereq(5, "subscriptions/listen", json!({ "notifications": { "eventsListChanged": true } }));
    let t = "Bearer alice-token".to_owned();
    let resp = guard("listen", f.h.post_with(&listen, |hd| set(hd, "authorization", &t)).send()).await.unwrap();
    let mut l = SseStream::new(resp);
    let ack = l.next().await.unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(ack["params"]["notifications"]["eventsListChanged"], true, "{ack}");
    let mut s = f.open_as("alice", 6, json!({ "name": "incident.created" })).await;
    next_non_heartbeat(&mut s).await;
    assert!(f.events.remove("incident.created"));
    let end = next_non_heartbeat(&mut s).await;
    assert_eq!(end["method"], "notifications/events/terminated");
    assert_eq!(end["params"]["error"]["code"], -32011);
    assert_eq!(end["params"]["error"]["data"]["kind"], "event");
    assert_eq!(sub_id(&end), &json!(6));
    let result = next_non_heartbeat(&mut s).await;
    assert_eq!(result["id"], 6);
    assert_eq!(result["result"]["resultType"], "complete");
    assert_eq!(result["result"]["_meta"][SUB_ID], 6);
    assert!(s.next().await.is_none(), "the stream ends after its result");
    let changed = l.next().await.unwrap();
    assert_message(&changed);
    assert_eq!(changed["method"], "notifications/events/list_changed");
    assert_eq!(sub_id(&changed), &json!(5));
}

// stream-heartbeat-interval (the bound; the interval kept on the wire is shown above)
#[test]
fn the_heartbeat_defaults_to_15_seconds_and_is_refused_past_30() {
    assert_eq!(EventsConfig::new().heartbeat, Duration::from_secs(15));
    assert!(Events::new(EventsConfig::new()).is_ok());
    assert!(Events::new(EventsConfig::new().heartbeat(Duration::from_secs(30))).is_ok(), "30 s is the most");
    for refused in [Duration::from_millis(30_001), Duration::from_secs(60), Duration::ZERO] {
        let e = Events::new(EventsConfig::new().heartbeat(refused)).expect_err("refused");
        let text = e.to_string();
        assert!(text.contains("heartbeat") && text.contains("30 seconds"), "{text}");
    }
}

// stream-gap-resends-active
#[tokio::test]
async fn a_gap_in_a_live_stream_resends_active_truncated_with_a_fresh_cursor() {
    // Two occurrences kept. The test's runtime has one thread: nothing the server does runs
    // between two publishes below, so the stream cannot read b before c and d evict it.
    let f = fixture_with(EventsConfig::new().retained(2, 1 << 20), HttpConfig::default()).await;
    let mut s = f.open_as("alice", 8, json!({ "name": "incident.created" })).await;
    let first = next_non_heartbeat(&mut s).await;
    assert_eq!(
        (&first["method"], &first["params"]["truncated"]),
        (&json!("notifications/events/active"), &json!(false))
    );
    f.incidents.publish(incident("a", Severity::P1), alice()).unwrap();
    let a = next_non_heartbeat(&mut s).await;
    assert_eq!(a["params"]["data"]["incidentId"], "a", "{a}");
    // The stream has read through a; b goes before it reads again.
    for id in ["b", "c", "d"] {
        f.incidents.publish(incident(id, Severity::P1), alice()).unwrap();
    }
    let again = next_non_heartbeat(&mut s).await;
    assert_eq!(again["method"], "notifications/events/active", "the gap is announced first: {again}");
    assert_eq!(again["params"]["truncated"], true);
    assert_eq!(sub_id(&again), &json!(8));
    let fresh = again["params"]["cursor"].as_str().expect("a fresh cursor");
    assert_ne!(fresh, a["params"]["cursor"].as_str().unwrap(), "not the cursor before the gap");
    for want in ["c", "d"] {
        let ev = next_non_heartbeat(&mut s).await;
        assert_eq!(
            (&ev["method"], &ev["params"]["data"]["incidentId"]),
            (&json!("notifications/events/event"), &json!(want))
        );
    }
    // The fresh cursor is where delivery went on: a poll from it sees c and d, not truncated.
    let from = f.poll(Some("alice"), json!({ "name": "incident.created", "cursor": fresh })).await;
    assert_eq!(from["truncated"], false, "{from}");
    let got: Vec<&Value> = from["events"].as_array().unwrap().iter().map(|e| &e["data"]["incidentId"]).collect();
    assert_eq!(got, [&json!("c"), &json!("d")]);
}
