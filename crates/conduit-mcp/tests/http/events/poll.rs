//! `events/poll`: bootstrapping, cursors, filters, limits and truncation.

use super::*;

fn ids(result: &Value) -> Vec<String> {
    result["events"].as_array().unwrap().iter().map(|e| e["data"]["incidentId"].as_str().unwrap().to_owned()).collect()
}

// poll-implemented, poll-bootstraps-subscription, poll-events-array, poll-response-cursor,
// poll-next-poll-ms, poll-stateless-request, poll-one-subscription-per-request,
// cursor-null-starts-from-now, cursor-absent-equals-null, cursor-advances-when-quiet,
// cursor-consistency, occurrence-event-id, occurrence-name, occurrence-timestamp,
// occurrence-data, occurrence-cursor-optional, truncated-false-when-no-replay
#[tokio::test]
async fn a_poll_starts_from_now_then_returns_what_matches_for_its_principal() {
    let f = fixture().await;
    f.incidents.publish(incident("old", Severity::P1), alice()).unwrap();
    let absent = f.poll(Some("alice"), json!({ "name": "incident.created" })).await;
    let null = f.poll(Some("alice"), json!({ "name": "incident.created", "arguments": {}, "cursor": null })).await;
    for first in [&absent, &null] {
        assert_eq!(first["events"], json!([]), "null starts from now: {first}");
        assert!(first["cursor"].is_string());
        assert_eq!(first["truncated"], false);
        assert_eq!(first["hasMore"], false);
        assert!(first["nextPollMs"].as_u64().is_some_and(|ms| ms >= 1000), "{first}");
    }
    let p1 = json!({ "severity": "P1" });
    let start = f.poll(Some("alice"), json!({ "name": "incident.created", "arguments": p1, "cursor": null })).await;
    f.incidents.publish(incident("a", Severity::P1), alice()).unwrap();
    f.incidents.publish(incident("b", Severity::P2), alice()).unwrap();
    f.incidents.publish(incident("c", Severity::P1), Audience::principal("bob")).unwrap();
    f.incidents.publish(incident("d", Severity::P1), Audience::Everyone).unwrap();
    let got =
        f.poll(Some("alice"), json!({ "name": "incident.created", "arguments": p1, "cursor": start["cursor"] })).await;
    assert_eq!(ids(&got), ["a", "d"], "only P1, only what alice may see: {got}");
    let e = &got["events"][0];
    assert_eq!(e["name"], "incident.created");
    assert!(e["eventId"].as_str().is_some_and(|s| !s.is_empty()));
    assert!(e["timestamp"].as_str().unwrap().ends_with('Z'), "RFC 3339: {e}");
    assert_eq!(e["data"], json!({ "incidentId": "a", "severity": "P1" }));
    assert!(e.get("cursor").is_none(), "a poll carries the cursor on the result");
    assert_ne!(got["cursor"], start["cursor"]);
    // The same cursor again gives the same answer (no server state), and bob's view differs.
    let again =
        f.poll(Some("alice"), json!({ "name": "incident.created", "arguments": p1, "cursor": start["cursor"] })).await;
    assert_eq!(again["events"], got["events"]);
    let bob_start = f.poll(Some("bob"), json!({ "name": "incident.created" })).await;
    // Quiet: nothing new, but the cursor still moves past what was checked.
    f.incidents.publish(incident("e", Severity::P2), alice()).unwrap();
    let quiet =
        f.poll(Some("alice"), json!({ "name": "incident.created", "arguments": p1, "cursor": got["cursor"] })).await;
    assert_eq!(quiet["events"], json!([]));
    assert_ne!(quiet["cursor"], got["cursor"], "the cursor advances when quiet");
    let bob = f.poll(Some("bob"), json!({ "name": "incident.created", "cursor": bob_start["cursor"] })).await;
    assert_eq!(ids(&bob), Vec::<String>::new(), "bob's bootstrap came after c and d; e is alice's");
}

// poll-max-events-cap, poll-has-more, poll-next-poll-ms-ignored-when-has-more
#[tokio::test]
async fn max_events_gives_a_partial_batch_with_an_intermediate_cursor() {
    let f = fixture().await;
    let start = f.poll(Some("alice"), json!({ "name": "incident.created" })).await;
    for i in 0..5 {
        f.incidents.publish(incident(&format!("i{i}"), Severity::P1), alice()).unwrap();
    }
    let a =
        f.poll(Some("alice"), json!({ "name": "incident.created", "cursor": start["cursor"], "maxEvents": 2 })).await;
    assert_eq!(ids(&a), ["i0", "i1"]);
    assert_eq!(a["hasMore"], true);
    // With more waiting the interval does not apply: poll again at once.
    assert_eq!(a["nextPollMs"], 0, "{a}");
    let b = f.poll(Some("alice"), json!({ "name": "incident.created", "cursor": a["cursor"], "maxEvents": 2 })).await;
    assert_eq!(ids(&b), ["i2", "i3"]);
    let c = f.poll(Some("alice"), json!({ "name": "incident.created", "cursor": b["cursor"], "maxEvents": 2 })).await;
    assert_eq!(ids(&c), ["i4"]);
    assert_eq!(c["hasMore"], false);
    assert_eq!(c["nextPollMs"], 5_000, "the configured interval once caught up: {c}");
}

// poll-invalid-arguments, poll-errors-are-jsonrpc, error-invalid-params, poll-mode-unsupported
#[tokio::test]
async fn bad_arguments_a_10_mib_argument_and_an_unoffered_mode_are_refused() {
    let f = fixture_with(EventsConfig::new(), HttpConfig::default().body_limit(16 * 1024 * 1024)).await;
    let bad = json!({ "name": "incident.created", "arguments": { "severity": "P9" } });
    error_of(&f.send_as(Some("alice"), &ereq(1, "events/poll", bad)).await, 1, -32602);
    let not_object = json!({ "name": "incident.created", "arguments": [1] });
    error_of(&f.send_as(Some("alice"), &ereq(2, "events/poll", not_object)).await, 2, -32602);
    let huge = json!({ "name": "incident.created", "arguments": { "note": "x".repeat(10 * 1024 * 1024) } });
    let e = error_of(&f.send_as(Some("alice"), &ereq(3, "events/poll", huge.clone())).await, 3, -32602);
    assert_eq!(e["data"]["limit"], "argumentBytes", "{e}");
    assert!(!e.to_string().contains("xxxx"), "the argument is not echoed");
    let e = error_of(&f.send_as(Some("alice"), &ereq(4, "events/stream", huge)).await, 4, -32602);
    assert_eq!(e["data"]["limit"], "argumentBytes");
    let push = json!({ "name": "push.only" });
    let e = error_of(&f.send_as(Some("alice"), &ereq(5, "events/poll", push)).await, 5, -32014);
    assert_eq!(e["data"], json!({ "feature": "deliveryMode", "value": "poll" }));
    // With the default body limit, HTTP refuses the 10 MiB body before it is read.
    let d = fixture().await;
    let huge = json!({ "name": "incident.created", "arguments": { "note": "x".repeat(10 * 1024 * 1024) } });
    assert_eq!(d.send_as(Some("alice"), &ereq(6, "events/poll", huge)).await.status, 413);
}

// cursor-opaque
#[tokio::test]
async fn a_cursor_altered_or_of_another_principal_or_type_is_refused() {
    let f = fixture().await;
    let cursor =
        f.poll(Some("alice"), json!({ "name": "incident.created" })).await["cursor"].as_str().unwrap().to_owned();
    let tasks_cursor = f.poll(Some("alice"), json!({ "name": "task.status_changed" })).await["cursor"].clone();
    let mut altered: Vec<char> = cursor.chars().collect();
    altered[3] = if altered[3] == 'A' { 'B' } else { 'A' };
    let altered: String = altered.into_iter().collect();
    for (who, name, c) in [
        (Some("bob"), "incident.created", json!(cursor)),
        (None, "incident.created", json!(cursor)),
        (Some("alice"), "incident.created", json!(altered)),
        (Some("alice"), "incident.created", tasks_cursor),
        (Some("alice"), "incident.created", json!("not-a-cursor")),
        (Some("alice"), "incident.created", json!(42)),
    ] {
        let r = f.send_as(who, &ereq(1, "events/poll", json!({ "name": name, "cursor": c }))).await;
        error_of(&r, 1, -32602);
    }
}

// replay-ceiling-sets-truncated, truncated-returns-fresh-cursor, truncated-poll-never-an-error
#[tokio::test]
async fn a_cursor_older_than_what_is_kept_is_truncated_with_a_fresh_cursor() {
    let f = fixture_with(EventsConfig::new().retained(3, 1 << 20), HttpConfig::default()).await;
    let start = f.poll(Some("alice"), json!({ "name": "incident.created" })).await;
    for i in 0..5 {
        f.incidents.publish(incident(&format!("i{i}"), Severity::P1), alice()).unwrap();
    }
    let got = f.poll(Some("alice"), json!({ "name": "incident.created", "cursor": start["cursor"] })).await;
    assert_eq!(got["truncated"], true);
    assert_eq!(ids(&got), ["i2", "i3", "i4"]);
    let next = f.poll(Some("alice"), json!({ "name": "incident.created", "cursor": got["cursor"] })).await;
    assert_eq!(next["truncated"], false);
    assert_eq!(next["events"], json!([]));
}

// max-age-ms-floor, max-age-ms-sets-truncated, max-age-ms-ignored-when-cursor-null
#[tokio::test]
async fn max_age_floors_the_start_and_says_so() {
    let f = fixture().await;
    let start = f.poll(Some("alice"), json!({ "name": "incident.created" })).await;
    f.incidents.publish(incident("old", Severity::P1), alice()).unwrap();
    f.clock.advance(60_000);
    f.incidents.publish(incident("new", Severity::P1), alice()).unwrap();
    let got = f
        .poll(Some("alice"), json!({ "name": "incident.created", "cursor": start["cursor"], "maxAgeMs": 30_000 }))
        .await;
    assert_eq!(ids(&got), ["new"]);
    assert_eq!(got["truncated"], true);
    let all = f.poll(Some("alice"), json!({ "name": "incident.created", "cursor": start["cursor"] })).await;
    assert_eq!(ids(&all), ["old", "new"]);
    assert_eq!(all["truncated"], false);
    let null = f.poll(Some("alice"), json!({ "name": "incident.created", "cursor": null, "maxAgeMs": 120_000 })).await;
    assert_eq!(null["events"], json!([]));
    assert_eq!(null["truncated"], false);
}

// delivery-body-size: an occurrence over `EventsConfig::max_payload_bytes` (256 KiB by default, the
// payload with its envelope) is refused at `publish` and never reaches a subscriber; one under the
// bound is delivered whole (the webhook body at the bound exactly: `webhook/delivery.rs`).
#[tokio::test]
async fn a_payload_over_256_kib_is_refused_at_publish_and_never_delivered() {
    use conduit_mcp::ext::events::PublishError;
    const BOUND: usize = 256 * 1024;
    let f = fixture().await;
    let start = f.poll(Some("alice"), json!({ "name": "incident.created" })).await;
    let refused = f.incidents.publish(incident(&"x".repeat(BOUND), Severity::P1), alice()).unwrap_err();
    assert!(matches!(refused, PublishError::TooLarge { len, max: BOUND } if len > BOUND), "{refused:?}");
    let fits = "y".repeat(BOUND - 512);
    f.incidents.publish(incident(&fits, Severity::P1), alice()).unwrap();
    let got = f.poll(Some("alice"), json!({ "name": "incident.created", "cursor": start["cursor"] })).await;
    assert_eq!(ids(&got), [fits], "only the payload within the bound was kept");
}

// occurrence-event-id-from-upstream: an application's own id is the eventId, on a poll and on a stream
#[tokio::test]
async fn an_upstream_id_given_at_publish_is_the_event_id_in_every_mode() {
    let f = fixture().await;
    let start = f.poll(Some("alice"), json!({ "name": "incident.created" })).await;
    let mut s = f.open_as("alice", 3, json!({ "name": "incident.created", "cursor": start["cursor"] })).await;
    assert_eq!(next_non_heartbeat(&mut s).await["method"], "notifications/events/active");
    f.incidents.publish_with_id("pagerduty:Q2X9", incident("a", Severity::P1), alice()).unwrap();
    f.incidents.publish(incident("b", Severity::P1), alice()).unwrap();
    let got = f.poll(Some("alice"), json!({ "name": "incident.created", "cursor": start["cursor"] })).await;
    assert_eq!(ids(&got), ["a", "b"]);
    assert_eq!(got["events"][0]["eventId"], "pagerduty:Q2X9", "{got}");
    let made = got["events"][1]["eventId"].as_str().expect("an id");
    assert!(!made.is_empty() && made != "pagerduty:Q2X9", "one without an upstream id gets one made");
    for want in [json!("pagerduty:Q2X9"), json!(made)] {
        let ev = next_non_heartbeat(&mut s).await;
        assert_eq!(ev["params"]["eventId"], want, "the same id pushed: {ev}");
    }
}
