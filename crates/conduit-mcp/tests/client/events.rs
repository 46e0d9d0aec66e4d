//! The client's Events API against our server over a real socket: the event
//! types listed, polling with the cursor carried (and `hasMore` paging), a
//! push stream read as typed messages whose cursor advances, webhook
//! refusals surfaced as the server's errors, and a clear refusal with
//! nothing sent when the server does not offer the extension.

use crate::client_support;
use crate::common;

use client_support::{connect, server, tasks};
use common::{guard, start};
use conduit_mcp::client::{ClientError, EventQuery, StreamEvent, WebhookSubscription};
use conduit_mcp::ext::events::{Audience, EventPublisher, Events, EventsConfig, TypedEvent};
use conduit_mcp::prelude::*;
use conduit_mcp::protocol::events::DeliveryMode;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// Arguments of `build.finished`.
#[derive(Deserialize, JsonSchema)]
struct BuildFilter {
    /// Only this branch.
    branch: Option<String>,
}

/// A `build.finished` payload.
#[derive(Serialize, JsonSchema)]
struct Build {
    branch: String,
    number: u64,
}

struct BuildFinished;

impl TypedEvent for BuildFinished {
    type Arguments = BuildFilter;
    type Payload = Build;
    const NAME: &'static str = "build.finished";
    const DESCRIPTION: &'static str = "A build finished";

    fn matches(arguments: &BuildFilter, payload: &Build) -> bool {
        arguments.branch.as_ref().is_none_or(|b| *b == payload.branch)
    }

    fn delivery() -> Vec<DeliveryMode> {
        vec![DeliveryMode::Poll, DeliveryMode::Push]
    }
}

async fn events_server() -> (common::Harness, EventPublisher<BuildFinished>) {
    let events = Events::new(EventsConfig::new()).unwrap();
    let builds = events.typed::<BuildFinished>();
    let server = Server::builder("events", "1")
        .extension(events)
        .tool(Tool::new("noop", "does nothing").handle(|_c, _a| async { Ok(CallToolResult::text("ok")) }))
        .build()
        .unwrap();
    (start(server).await, builds)
}

fn build(branch: &str, number: u64) -> Build {
    Build { branch: branch.into(), number }
}

fn main_only() -> Map<String, Value> {
    json!({ "branch": "main" }).as_object().unwrap().clone()
}

#[tokio::test]
async fn lists_and_polls_carrying_the_cursor_and_paging_on_has_more() {
    let (h, builds) = events_server().await;
    let c = connect(&h.url).await;
    assert!(c.offers_events());
    let types = guard("events/list", c.list_events()).await.expect("list");
    let names: Vec<&str> = types.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["build.finished"]);
    assert!(types[0].offers(DeliveryMode::Push) && !types[0].offers(DeliveryMode::Webhook));

    let q = EventQuery::new("build.finished").arguments(main_only());
    let first = guard("poll", c.poll_events(&q, None)).await.expect("bootstrap poll");
    assert!(first.events.is_empty(), "a null cursor starts from now");
    assert!(!first.truncated);
    let start = first.cursor.clone().expect("a replaying type gives a cursor");
    for (branch, n) in [("main", 1), ("dev", 2), ("main", 3), ("main", 4)] {
        builds.publish(build(branch, n), Audience::Everyone).unwrap();
    }
    let q = q.cursor(Some(start));
    let page = guard("poll", c.poll_events(&q, Some(1))).await.expect("poll");
    assert_eq!(page.events.len(), 1);
    assert_eq!(page.events[0].data["number"], 1);
    assert!(page.has_more, "one of three matching events: more wait");
    let q = q.cursor(page.cursor.clone());
    let rest = guard("poll", c.poll_events(&q, None)).await.expect("poll");
    let numbers: Vec<&Value> = rest.events.iter().map(|e| &e.data["number"]).collect();
    assert_eq!(numbers, [&json!(3), &json!(4)], "the dev build is filtered, the first not repeated");
    assert!(!rest.has_more);

    let unknown = c.poll_events(&EventQuery::new("no.such"), None).await.expect_err("unknown type");
    assert_eq!(unknown.rpc().map(|e| e.code), Some(-32011), "{unknown}");
}

#[tokio::test]
async fn a_push_stream_reads_active_then_events_and_keeps_the_last_cursor() {
    let (h, builds) = events_server().await;
    let c = connect(&h.url).await;
    let mut s = guard("events/stream", c.stream_events(&EventQuery::new("build.finished").arguments(main_only())))
        .await
        .expect("stream");
    let Some(Ok(StreamEvent::Active { cursor, truncated })) = guard("active", s.next()).await else {
        panic!("the first message is active")
    };
    assert!(!truncated);
    assert_eq!(s.cursor(), cursor.as_deref());
    builds.publish(build("dev", 1), Audience::Everyone).unwrap();
    builds.publish(build("main", 2), Audience::Everyone).unwrap();
    let ev = loop {
        match guard("an event", s.next()).await.expect("open").expect("valid") {
            StreamEvent::Event(o) => break o,
            StreamEvent::Heartbeat { .. } => continue,
            other => panic!("unexpected {other:?}"),
        }
    };
    assert_eq!(ev.data["number"], 2, "the dev build is filtered");
    assert_eq!(ev.name, "build.finished");
    assert!(ev.cursor.is_some());
    assert_eq!(s.cursor(), ev.cursor.as_deref(), "the stream keeps the last cursor for a reconnect");

    // Reconnecting from a cursor before the event replays it.
    let replay = EventQuery::new("build.finished").arguments(main_only()).cursor(cursor);
    let mut again = guard("events/stream", c.stream_events(&replay)).await.expect("stream");
    let mut seen = Vec::new();
    while seen.is_empty() {
        if let StreamEvent::Event(o) = guard("replay", again.next()).await.expect("open").expect("valid") {
            seen.push(o.event_id);
        }
    }
    assert_eq!(seen, [ev.event_id]);

    let refused = c.stream_events(&EventQuery::new("no.such")).await.expect_err("unknown type");
    assert_eq!(refused.rpc().map(|e| e.code), Some(-32011), "{refused}");
}

#[tokio::test]
async fn webhook_calls_without_a_principal_surface_the_servers_refusal() {
    let (h, _builds) = events_server().await;
    let c = connect(&h.url).await;
    let sub = WebhookSubscription::new(
        EventQuery::new("build.finished"),
        "https://hooks.example/x",
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    )
    .ttl_ms(Some(60_000));
    let e = c.subscribe_webhook(&sub).await.expect_err("no principal");
    assert_eq!(e.rpc().map(|e| e.code), Some(-32012), "Forbidden: {e}");
    assert!(!format!("{sub:?}").contains("whsec_"), "the secret stays out of Debug");
    let e = c.unsubscribe_webhook(&sub).await.expect_err("no principal");
    assert_eq!(e.rpc().map(|e| e.code), Some(-32012), "Forbidden: {e}");
}

#[tokio::test]
async fn a_server_without_the_extension_is_refused_before_anything_is_sent() {
    let h = start(server(&tasks())).await;
    let c = connect(&h.url).await;
    assert!(!c.offers_events());
    let sent = c.requests_sent();
    let q = EventQuery::new("build.finished");
    assert!(matches!(c.list_events().await, Err(ClientError::Unsupported(_))));
    assert!(matches!(c.poll_events(&q, None).await, Err(ClientError::Unsupported(_))));
    assert!(matches!(c.stream_events(&q).await, Err(ClientError::Unsupported(_))));
    assert_eq!(c.requests_sent(), sent, "nothing went to the server");
}
