//! Discovery, listing and the extension's errors.

use super::*;
use crate::legacy_common::Legacy;
use conduit_mcp::protocol::events::ErrorCodeProfile;

// capability-events-object, capability-list-changed-flag
#[tokio::test]
async fn the_capability_is_an_object_in_the_extensions_map_and_at_the_top_level() {
    let f = fixture().await;
    let r = f.anon.send(&ereq("d", "server/discover", json!({}))).await;
    let result = r.assert_ok(&json!("d"));
    assert_def("DiscoverResultResponse", &r.body);
    let caps = &result["capabilities"];
    assert_eq!(caps["extensions"][EVENTS], json!({ "listChanged": true }), "{caps}");
    assert_eq!(caps["events"], json!({ "listChanged": true }), "clients in the field read the top level");
    assert_eq!(caps["extensions"][TASKS], json!({}), "the Tasks extension is still declared beside it");
}

// list-implemented, list-pagination, descriptor-name, descriptor-description,
// descriptor-input-schema, descriptor-payload-schema, descriptor-meta, descriptor-delivery-subset
#[tokio::test]
async fn events_list_shows_every_type_with_its_schemas_and_delivery_modes() {
    let f = fixture().await;
    let r = f.send_as(Some("alice"), &ereq(1, "events/list", json!({}))).await;
    let result = r.assert_ok(&json!(1));
    assert_def("JSONRPCResultResponse", &r.body);
    assert_eq!(result["resultType"], "complete");
    assert!(result.get("nextCursor").is_none(), "one page: no nextCursor: {result}");
    let list = result["events"].as_array().expect("events array");
    let names: Vec<&str> = list.iter().map(|d| d["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["incident.created", "push.only", "task.status_changed"]);
    for d in list {
        assert!(d["description"].as_str().is_some_and(|s| !s.is_empty()), "{d}");
        let modes = d["delivery"].as_array().expect("delivery");
        assert!(!modes.is_empty() && modes.iter().all(|m| ["poll", "push", "webhook"].contains(&m.as_str().unwrap())));
        for schema in ["inputSchema", "payloadSchema"] {
            assert_eq!(d[schema]["type"], "object", "{schema} of {d}");
            jsonschema::validator_for(&d[schema]).expect("a JSON Schema");
        }
        assert!(d.get("_meta").is_none_or(Value::is_object));
    }
    let incident = &list[0];
    assert_eq!(incident["delivery"], json!(["poll", "push"]));
    assert!(incident["inputSchema"]["properties"].get("severity").is_some(), "{incident}");
    assert!(incident["payloadSchema"]["properties"].get("incidentId").is_some(), "{incident}");
    assert_eq!(list[1]["delivery"], json!(["push"]));
    let task = &list[2];
    let payload: Vec<&String> = task["payloadSchema"]["properties"].as_object().unwrap().keys().collect();
    assert_eq!(payload, ["lastUpdatedAt", "status", "statusMessage", "taskId"], "payload-minimality");
    // A cursor the server never issued is bad params.
    let bad = f.anon.send(&ereq(2, "events/list", json!({ "cursor": "%%%" }))).await;
    error_of(&bad, 2, -32602);
}

// error-not-found, error-server-range, removal-poll-not-found
#[tokio::test]
async fn an_unknown_type_is_not_found_in_either_numbering() {
    let f = fixture().await;
    let p = json!({ "name": "no.such.event", "arguments": {}, "cursor": null });
    let e = error_of(&f.send_as(Some("alice"), &ereq(3, "events/poll", p.clone())).await, 3, -32011);
    assert_eq!(e["data"]["kind"], "event");
    assert_eq!(e["message"], "NotFound");
    let stream = error_of(&f.send_as(Some("alice"), &ereq(3, "events/stream", p.clone())).await, 3, -32011);
    assert_eq!(stream["data"]["kind"], "event");
    // A type removed is not found on the next poll.
    let cursor = f.poll(Some("alice"), json!({ "name": "incident.created" })).await["cursor"].clone();
    assert!(f.events.remove("incident.created"));
    let gone = json!({ "name": "incident.created", "cursor": cursor });
    error_of(&f.send_as(Some("alice"), &ereq(4, "events/poll", gone)).await, 4, -32011);

    let sep = fixture_with(EventsConfig::new().error_codes(ErrorCodeProfile::Sep3415), HttpConfig::default()).await;
    let e = error_of(&sep.send_as(Some("alice"), &ereq(5, "events/poll", p)).await, 5, -32023);
    let code = e["code"].as_i64().unwrap();
    assert!((-32099..=-32000).contains(&code));
}

#[tokio::test]
async fn events_methods_are_method_not_found_where_the_extension_is_not_offered() {
    // Not installed.
    let plain = start(Server::builder("plain", "1").tool(echo_tool()).build().unwrap()).await;
    for m in ["events/list", "events/poll", "events/stream", "events/subscribe", "events/unsubscribe"] {
        let r = plain.send(&ereq(1, m, json!({ "name": "x" }))).await;
        r.assert_error(404, -32601, &json!(1));
    }
    // Installed, but on 2025-11-25 (the extension is defined for 2026-07-28 only).
    let f = fixture().await;
    let mut c = Legacy::new(&f.h.url).with_token("alice-token");
    let init = c.initialize(json!({})).await;
    assert!(init["capabilities"].get("events").is_none(), "{init}");
    assert!(init["capabilities"]["extensions"].get(EVENTS).is_none(), "{init}");
    let e = c.error(2, "events/list", json!({})).await;
    assert_eq!(e["code"], -32601, "{e}");
}

// subscribe-auth-required, subscribe-url-https-required, subscribe-url-non-https-rejected,
// subscribe-secret-required, subscribe-secret-format, subscribe-secret-rejected,
// subscribe-webhook-only, error-unsupported, unsubscribe-unknown-not-found, error-forbidden
#[tokio::test]
async fn webhook_methods_check_their_input_then_refuse_without_webhook_egress() {
    use base64::Engine;
    let f = fixture().await;
    let secret = format!("whsec_{}", base64::engine::general_purpose::STANDARD.encode([9u8; 32]));
    let sub = |url: &str, secret: &str| {
        json!({ "name": "incident.created", "arguments": {},
                "delivery": { "mode": "webhook", "url": url, "secret": secret }, "ttlMs": 60000 })
    };
    let ok = sub("https://hooks.example/h", &secret);
    let e = error_of(&f.send_as(None, &ereq(1, "events/subscribe", ok.clone())).await, 1, -32012);
    assert_eq!(e["message"], "Forbidden");
    error_of(
        &f.send_as(Some("alice"), &ereq(2, "events/subscribe", sub("http://hooks.example/h", &secret))).await,
        2,
        -32602,
    );
    error_of(
        &f.send_as(Some("alice"), &ereq(3, "events/subscribe", sub("https://hooks.example/h", "whsec_c2hvcnQ="))).await,
        3,
        -32602,
    );
    let mut no_secret = ok.clone();
    no_secret["delivery"].as_object_mut().unwrap().remove("secret");
    error_of(&f.send_as(Some("alice"), &ereq(4, "events/subscribe", no_secret)).await, 4, -32602);
    let mut push = ok.clone();
    push["delivery"]["mode"] = json!("push");
    error_of(&f.send_as(Some("alice"), &ereq(5, "events/subscribe", push)).await, 5, -32602);
    let e = error_of(&f.send_as(Some("alice"), &ereq(6, "events/subscribe", ok)).await, 6, -32014);
    assert_eq!(e["data"], json!({ "feature": "deliveryMode", "value": "webhook" }));
    let unsub = json!({ "name": "incident.created", "arguments": {}, "delivery": { "mode": "webhook", "url": "https://hooks.example/h" } });
    let e = error_of(&f.send_as(Some("alice"), &ereq(7, "events/unsubscribe", unsub.clone())).await, 7, -32011);
    assert_eq!(e["data"]["kind"], "subscription");
    error_of(&f.send_as(None, &ereq(8, "events/unsubscribe", unsub)).await, 8, -32012);
}

/// Every page of `events/list` as `who` sees it, following `nextCursor`: the names of each page.
async fn list_pages(f: &Fixture) -> Vec<Vec<String>> {
    let mut pages = Vec::new();
    let mut cursor = None;
    loop {
        let params = cursor.map_or_else(|| json!({}), |c: Value| json!({ "cursor": c }));
        let r = f.send_as(Some("alice"), &ereq(1, "events/list", params)).await;
        let result = r.assert_ok(&json!(1));
        assert_def("JSONRPCResultResponse", &r.body);
        let names = result["events"].as_array().expect("events").iter();
        pages.push(names.map(|d| d["name"].as_str().expect("a name").to_owned()).collect());
        match result.get("nextCursor") {
            None => return pages,
            Some(next) => {
                assert!(next.is_string(), "{result}");
                cursor = Some(next.clone());
            }
        }
        assert!(pages.len() <= 10, "the pages end");
    }
}

// list-pagination
#[tokio::test]
async fn events_list_pages_follow_next_cursor_and_list_each_type_once() {
    assert_eq!(EventsConfig::new().list_page_size, 100, "a hundred types a page by default");
    let all = ["incident.created", "push.only", "task.status_changed"];
    // Two a page: a full page with nextCursor, then the last one without.
    let f = fixture_with(EventsConfig::new().list_page_size(2), HttpConfig::default()).await;
    assert_eq!(list_pages(&f).await, [&all[..2], &all[2..]]);
    // One a page: three pages, each type once, in order.
    let f = fixture_with(EventsConfig::new().list_page_size(1), HttpConfig::default()).await;
    let pages = list_pages(&f).await;
    assert_eq!(pages, all.map(|n| vec![n.to_owned()]));
    // A page that holds exactly what is left says no nextCursor.
    let f = fixture_with(EventsConfig::new().list_page_size(3), HttpConfig::default()).await;
    assert_eq!(list_pages(&f).await, [all]);
    // A type added between pages is listed once, on the page its name falls on.
    let f = fixture_with(EventsConfig::new().list_page_size(2), HttpConfig::default()).await;
    let r = f.send_as(Some("alice"), &ereq(1, "events/list", json!({}))).await;
    let next = r.assert_ok(&json!(1))["nextCursor"].clone();
    f.events.typed::<Zebra>();
    let r = f.send_as(Some("alice"), &ereq(2, "events/list", json!({ "cursor": next }))).await;
    let rest: Vec<&str> =
        r.body["result"]["events"].as_array().unwrap().iter().map(|d| d["name"].as_str().unwrap()).collect();
    assert_eq!(rest, ["task.status_changed", "zebra.seen"]);
    // Zero types a page is refused.
    assert!(Events::new(EventsConfig::new().list_page_size(0)).is_err());
}

/// A type whose name sorts last.
struct Zebra;

impl TypedEvent for Zebra {
    type Arguments = serde_json::Map<String, Value>;
    type Payload = serde_json::Map<String, Value>;
    const NAME: &'static str = "zebra.seen";
    const DESCRIPTION: &'static str = "Fires when a zebra is seen";
}
