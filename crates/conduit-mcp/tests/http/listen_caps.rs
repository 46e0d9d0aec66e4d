//! Long-lived streams cannot fill the server (issue 20, finding 10; issue 34,
//! finding 4), over real sockets on `Bound::serve`: a client (its principal;
//! without authentication, an address) holds at most
//! `max_listen_streams_per_client` streams, all clients together at most
//! `max_listen_streams` (below the connection limit), 2026-07-28 listen streams
//! and 2025-11-25 GET streams alike; a refused stream is answered `-32000`
//! (HTTP 429 with `Retry-After`) and its connection closed, and a stream that
//! carries nothing for `listen_idle_timeout` is ended (a listen stream with its
//! closing result).

use crate::common;
use crate::legacy_common;

use common::*;
use conduit_mcp::auth::{BearerTokens, Principal};
use conduit_mcp::prelude::*;
use serde_json::{Value, json};
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

fn server() -> Server {
    Server::builder("listen-caps", "1.0.0").tool(echo_tool()).build().expect("server")
}

fn listen_body(id: &str) -> Value {
    req(id, "subscriptions/listen", json!({ "notifications": { "toolsListChanged": true } }))
}

/// A keep-alive request on a raw socket: `body` with the standard headers.
fn raw_request(addr: SocketAddr, body: &Value) -> Vec<u8> {
    let text = body.to_string();
    let mut head = format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\n", text.len());
    for (k, v) in &std_headers(body) {
        head.push_str(&format!("{k}: {}\r\n", v.to_str().expect("ascii")));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(text.as_bytes());
    bytes
}

/// A connection from `from` (a loopback address: each one is another client).
async fn connect_from(from: IpAddr, to: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().expect("socket");
    socket.bind(SocketAddr::new(from, 0)).expect("bind a loopback source address");
    guard("connect", socket.connect(to)).await.expect("connect")
}

/// Sends a listen request and reads the answer's head, then as much of the body as the
/// server sends at once: 200 with the acknowledgment, or 429 with the error.
async fn open_raw(from: IpAddr, addr: SocketAddr, id: &str) -> (TcpStream, u16, String) {
    let mut c = connect_from(from, addr).await;
    c.write_all(&raw_request(addr, &listen_body(id))).await.expect("write");
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = guard("the listen answer", c.read(&mut buf)).await.expect("read");
        seen.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&seen);
        let done = n == 0 || text.contains("notifications/subscriptions/acknowledged") || text.contains("\"error\"");
        if done {
            break;
        }
    }
    let text = String::from_utf8_lossy(&seen).into_owned();
    let status = text.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    (c, status, text)
}

fn local(n: u8) -> IpAddr {
    IpAddr::from([127, 0, 0, n])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_twelve_listen_attempts_from_one_client_leave_echo_served() {
    let h = serve_with(server(), HttpConfig::default()).await;
    let (mut held, mut refused) = (Vec::new(), 0);
    for i in 0..512 {
        let (mut c, status, text) = open_raw(local(1), h.addr, &format!("l{i}")).await;
        match status {
            200 => held.push(c),
            429 => {
                assert!(text.contains("-32000") && text.contains("for this client"), "{text}");
                assert!(text.to_ascii_lowercase().contains("connection: close"), "{text}");
                // The server closes a refused connection: it holds no slot.
                let mut rest = Vec::new();
                guard("the refused connection to close", c.read_to_end(&mut rest)).await.expect("read");
                refused += 1;
            }
            other => panic!("listen {i}: status {other}: {text}"),
        }
    }
    assert_eq!(held.len(), 16, "the default per-client cap");
    assert_eq!(refused, 512 - 16);
    // Another client's echo is answered at once, and so is this client's own.
    for from in [local(2), local(1)] {
        let mut c = connect_from(from, h.addr).await;
        let bytes = raw_request(h.addr, &call("e", "echo", json!({ "text": "still here" })));
        c.write_all(&bytes).await.expect("write");
        let mut answer = Vec::new();
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(&answer).contains("still here") {
            let n = guard("the echo answer", c.read(&mut buf)).await.expect("read");
            assert!(n > 0, "closed before answering: {}", String::from_utf8_lossy(&answer));
            answer.extend_from_slice(&buf[..n]);
        }
        assert!(answer.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&answer));
    }
    // Another address still gets its own streams.
    let (_other, status, text) = open_raw(local(2), h.addr, "other").await;
    assert_eq!(status, 200, "{text}");
    drop(held);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_total_cap_refuses_everyone_and_a_closed_stream_frees_its_slot() {
    let config = HttpConfig::default().max_listen_streams(3).max_listen_streams_per_client(2);
    let h = serve_with(server(), config).await;
    let (a1, s1, _) = open_raw(local(1), h.addr, "a1").await;
    let (_a2, s2, _) = open_raw(local(1), h.addr, "a2").await;
    assert_eq!((s1, s2), (200, 200));
    let (_, s3, text) = open_raw(local(1), h.addr, "a3").await;
    assert_eq!(s3, 429, "{text}");
    assert!(text.contains("for this client"), "{text}");
    let (_b1, s, text) = open_raw(local(2), h.addr, "b1").await;
    assert_eq!(s, 200, "another client has its own slots: {text}");
    let (_, s, text) = open_raw(local(3), h.addr, "c1").await;
    assert_eq!(s, 429, "{text}");
    assert!(text.contains("Too many open streams; try again later"), "{text}");
    assert!(text.contains("\"id\":\"c1\""), "the refusal answers the request: {text}");
    // The first client closes one stream. The server drops a response stream as soon as it
    // sees its connection close, before it closes its side; the client waits for that.
    let mut a1 = a1;
    a1.shutdown().await.expect("close our side");
    let mut rest = Vec::new();
    let _ = guard("the server to close the connection", a1.read_to_end(&mut rest)).await;
    let (_c2, s, text) = open_raw(local(3), h.addr, "c2").await;
    assert_eq!(s, 200, "the closed stream's slot is free again: {text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_listen_stream_is_ended_with_its_closing_result() {
    let idle = Duration::from_millis(400);
    let config = HttpConfig::default().listen_idle_timeout(idle).keep_alive(Duration::from_millis(50));
    let h = serve_with(server(), config).await;
    let mut s = h.open(&listen_body("quiet")).await;
    assert_eq!(s.status, 200);
    let ack = s.next().await.expect("the acknowledgment");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    // Notifications keep it open past the idle timeout: each one restarts the clock.
    let started = tokio::time::Instant::now();
    let mut tick = tokio::time::interval(idle / 4);
    while started.elapsed() < idle * 2 {
        tick.tick().await;
        h.server.changes().tools_list_changed();
        let note = s.next().await.expect("still open while it carries notifications");
        assert_eq!(note["method"], "notifications/tools/list_changed", "{note}");
    }
    // Then nothing: the server ends it with the closing result (keep-alive comments do not count).
    let closing = s.next().await.expect("the closing result");
    assert_eq!(closing["id"], "quiet", "{closing}");
    assert_eq!(closing["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "quiet", "{closing}");
    assert!(s.next().await.is_none(), "the stream ended");
    assert!(started.elapsed() >= idle * 2, "not before its idle timeout");
    // Its slot is free again: the per-client cap of one admits a new stream.
    let h2 =
        serve_with(server(), HttpConfig::default().max_listen_streams_per_client(1).listen_idle_timeout(idle)).await;
    let mut first = h2.open(&listen_body("one")).await;
    first.next().await.expect("ack");
    assert!(first.next().await.is_some_and(|m| m["id"] == "one"), "closed when idle");
    assert!(first.next().await.is_none(), "and ended");
    let mut again = h2.open(&listen_body("two")).await;
    assert_eq!(again.status, 200);
    again.next().await.expect("ack");
}

/// A legacy client of `h` authenticated with `token`, on connections that are not kept
/// for reuse (an idle pooled connection would hold one of the server's slots).
fn legacy(h: &Harness, token: &str) -> legacy_common::Legacy {
    let mut c = legacy_common::Legacy::new(&h.url).with_token(token);
    c.client = reqwest::Client::builder().pool_max_idle_per_host(0).build().expect("client");
    c
}

/// Finding 4 of issue 34: 2025-11-25 GET streams count against the same caps as listen
/// streams. One principal with twenty sessions gets sixteen GET streams, every further
/// GET (and a listen stream) is refused with 429 and `Retry-After`, and another
/// principal's `tools/list` is answered, with a connection limit of twenty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_principals_get_streams_cannot_take_every_connection() {
    let tokens = BearerTokens::new().token("alice", Principal::new("alice")).token("bob", Principal::new("bob"));
    let h = serve_with(server(), HttpConfig::default().auth(tokens).max_connections(20)).await;
    let mut sessions = Vec::new();
    for _ in 0..20 {
        let mut c = legacy(&h, "alice");
        c.initialize(json!({})).await;
        sessions.push(c);
    }
    let (mut held, mut refused) = (Vec::new(), 0);
    for c in &sessions {
        let r = c.get(None).await;
        match r.status().as_u16() {
            200 => held.push(legacy_common::Events::new(r)),
            429 => {
                let retry = r.headers().get("retry-after").and_then(|v| v.to_str().ok()).map(str::to_owned);
                assert!(retry.is_some_and(|s| s.parse::<u64>().is_ok_and(|n| n > 0)), "a Retry-After in seconds");
                let body: Value = guard("the refusal", r.json()).await.expect("a JSON body");
                assert_eq!(body["error"]["code"], -32000, "{body}");
                assert!(body["error"]["message"].as_str().unwrap_or_default().contains("for this client"), "{body}");
                refused += 1;
            }
            other => panic!("GET: status {other}"),
        }
    }
    assert_eq!((held.len(), refused), (16, 4), "the per-client cap holds GET streams");
    // A listen stream of the same principal draws on the same cap.
    let listen = h.post_with(&listen_body("l"), |hd| set(hd, "authorization", "Bearer alice"));
    let r = read(listen).await;
    r.assert_error(429, -32000, &json!("l"));
    assert!(r.text.contains("for this client"), "{}", r.text);
    // Another principal is served: its tools/list, its own GET stream and listen stream.
    let mut bob = legacy(&h, "bob");
    bob.initialize(json!({})).await;
    let tools = guard("bob's tools/list", bob.result(1, "tools/list", json!({}))).await;
    assert_eq!(tools["tools"][0]["name"], "echo", "{tools}");
    let _bob_get = bob.get_stream().await;
    let mut bob_listen = SseStream::new(
        guard("bob's listen", h.post_with(&listen_body("b"), |hd| set(hd, "authorization", "Bearer bob")).send())
            .await
            .expect("sent"),
    );
    assert_eq!(bob_listen.status, 200);
    assert_eq!(
        bob_listen.next().await.expect("the acknowledgment")["method"],
        "notifications/subscriptions/acknowledged"
    );
    // A GET stream that ends gives its slot back.
    drop(held.pop());
    let again = guard("a GET once a slot is free", async {
        loop {
            let r = sessions[19].get(None).await;
            if r.status() == 200 {
                return r;
            }
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert_eq!(again.status(), 200);
}

/// Finding 4 of issue 34: a GET stream that carries nothing for `listen_idle_timeout`
/// (keep-alive comments do not count) is ended, and its slot is free again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_get_stream_ends_and_frees_its_slot() {
    let idle = Duration::from_millis(300);
    let config = HttpConfig::default()
        .listen_idle_timeout(idle)
        .keep_alive(Duration::from_millis(50))
        .max_listen_streams_per_client(1);
    let h = serve_with(server(), config).await;
    let mut c = legacy_common::Legacy::new(&h.url);
    c.initialize(json!({})).await;
    let mut get = c.get_stream().await;
    let started = tokio::time::Instant::now();
    h.server.notify_tools_list_changed();
    let (_, m) = get.next_msg().await.expect("the list change");
    assert_eq!(m["method"], "notifications/tools/list_changed");
    assert!(guard("the idle GET stream to end", get.next()).await.is_none(), "the stream ended once idle");
    assert!(started.elapsed() >= idle, "not before its idle timeout");
    let mut again = c.get_stream().await;
    h.server.notify_tools_list_changed();
    assert_eq!(again.next_msg().await.expect("carried").1["method"], "notifications/tools/list_changed");
}
