//! A busy `events/stream` read slowly holds a bounded number of bytes in the
//! client: its HTTP reader stops reading the socket while the caller is behind
//! (the reply channel's byte budget), so a server that sends faster than the
//! caller reads is held back by TCP. The server here is a real socket that
//! answers `events/stream` with an endless SSE body and counts what it has
//! produced; everything else goes on to a real events server.

use crate::common::start;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use conduit_mcp::client::{ClientBuilder, EventQuery, StreamEvent};
use conduit_mcp::ext::events::{Events, EventsConfig, TypedEvent};
use conduit_mcp::prelude::*;
use conduit_mcp::protocol::events::DeliveryMode;
use futures_util::StreamExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The payload of one generated event: big enough that the bytes add up fast.
const PAD: usize = 16 * 1024;
/// Events the server would send if nothing held it back (about 64 MiB).
const TOTAL: usize = 4096;
/// What may be in flight between the server's producer and the caller: the
/// client's budget (1 MiB) and one message, the loopback socket's buffers in
/// both directions (a few MiB each at most), hyper's and reqwest's buffers.
const IN_FLIGHT_BOUND: usize = 16 * 1024 * 1024;
/// Turns the slow caller gives everyone else before taking the next event.
const TURNS_PER_EVENT: usize = 16;

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Tick {
    n: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
struct NoArgs {}

struct Ticked;

impl TypedEvent for Ticked {
    type Payload = Tick;
    type Arguments = NoArgs;
    const NAME: &'static str = "tick";
    const DESCRIPTION: &'static str = "A tick";

    fn matches(_arguments: &NoArgs, _payload: &Tick) -> bool {
        true
    }

    fn delivery() -> Vec<DeliveryMode> {
        vec![DeliveryMode::Push]
    }
}

/// One SSE event carrying `notifications/events/event` number `n` for subscription `id`.
fn frame(id: &Value, n: usize) -> Bytes {
    let msg = json!({
        "jsonrpc": "2.0",
        "method": "notifications/events/event",
        "params": {
            "eventId": format!("e{n:08}"),
            "name": "tick",
            "timestamp": "2026-12-06T00:00:00Z",
            "data": { "n": n, "pad": "x".repeat(PAD) },
            "cursor": format!("c{n:08}"),
            "_meta": { "io.modelcontextprotocol/subscriptionId": id },
        },
    });
    Bytes::from(format!("data: {msg}\n\n"))
}

#[tokio::test]
async fn a_stream_read_slowly_holds_the_server_back_instead_of_filling_memory() {
    let events = Events::new(EventsConfig::new()).unwrap();
    let _ticks = events.typed::<Ticked>();
    let server = Server::builder("events", "1").extension(events).build().unwrap();
    let real = start(server).await;

    let produced = Arc::new(AtomicUsize::new(0));
    let upstream = real.url.clone();
    let http = reqwest::Client::new();
    let counted = Arc::clone(&produced);
    let app = axum::Router::new().fallback(move |headers: HeaderMap, body: Bytes| {
        let (upstream, http, produced) = (upstream.clone(), http.clone(), Arc::clone(&counted));
        async move {
            let req: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            if req["method"] == "events/stream" {
                return stream_answer(req["id"].clone(), produced);
            }
            forward(&http, &upstream, headers, body).await
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let c = ClientBuilder::http(&url).connect().await.expect("connect");
    let mut s = c.stream_events(&EventQuery::new("tick")).await.expect("events/stream");
    let frame_len = frame(&s.subscription_id().to_value(), 0).len();
    let mut read = 0usize;
    let mut worst = 0usize;
    while read < TOTAL {
        for _ in 0..TURNS_PER_EVENT {
            tokio::task::yield_now().await;
        }
        match s.next().await.expect("the stream goes on").expect("an event") {
            StreamEvent::Event(o) => assert_eq!(o.data["n"], read, "in order, none lost"),
            StreamEvent::Active { .. } => continue,
            other => panic!("unexpected {other:?}"),
        }
        read += 1;
        let ahead = produced.load(Ordering::SeqCst).saturating_sub(read * frame_len);
        worst = worst.max(ahead);
        assert!(
            ahead <= IN_FLIGHT_BOUND,
            "the server got {ahead} bytes ahead of a caller that read {read} events: the client buffers without bound"
        );
    }
    assert_eq!(s.cursor(), Some(format!("c{:08}", TOTAL - 1).as_str()));
    // The bound was approached: the server did run ahead as far as it could.
    assert!(worst > 1024 * 1024, "the server was never more than {worst} bytes ahead: the test proves nothing");
}

/// `events/stream`'s answer: `active`, then [`TOTAL`] events, counted as the body is polled.
fn stream_answer(id: Value, produced: Arc<AtomicUsize>) -> Response {
    let active = json!({
        "jsonrpc": "2.0",
        "method": "notifications/events/active",
        "params": { "cursor": null, "_meta": { "io.modelcontextprotocol/subscriptionId": id } },
    });
    let first = Bytes::from(format!("data: {active}\n\n"));
    let body = futures_util::stream::iter(std::iter::once(first).chain((0..TOTAL).map(move |n| {
        let f = frame(&id, n);
        produced.fetch_add(f.len(), Ordering::SeqCst);
        f
    })))
    .map(Ok::<_, std::convert::Infallible>);
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(body))
        .unwrap()
}

/// Passes a request on to the real server and its answer back.
async fn forward(http: &reqwest::Client, upstream: &str, headers: HeaderMap, body: Bytes) -> Response {
    let mut rb = http.post(upstream);
    for (k, v) in &headers {
        if k != "host" && k != "content-length" {
            rb = rb.header(k.as_str(), v.as_bytes());
        }
    }
    let resp = rb.body(body).send().await.expect("the real server answers");
    let mut out = Response::builder().status(resp.status().as_u16());
    for (k, v) in resp.headers() {
        if k != "content-length" && k != "transfer-encoding" {
            out = out.header(k.as_str(), v.as_bytes());
        }
    }
    out.body(Body::from(resp.bytes().await.expect("the real server's body"))).unwrap()
}
