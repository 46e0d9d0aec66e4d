//! A push stream whose client does not read: the server holds a bounded
//! backlog for it, then terminates the stream (`ResourceExhausted`) rather
//! than queue everything the type has to send.

use super::*;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpSocket;

/// Occurrences published, and the bytes of each one's id.
const PUBLISHED: usize = 2048;
const ID_BYTES: usize = 16 * 1024;
/// The backlog bound under test.
const BACKLOG: usize = 64 * 1024;

/// `events/stream` as alice on a raw socket, as bytes.
fn raw_stream_request(addr: std::net::SocketAddr, params: Value) -> Vec<u8> {
    let body = ereq(1, "events/stream", params);
    let text = body.to_string();
    let mut head = format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\n", text.len());
    for (k, v) in &std_headers(&body) {
        head.push_str(&format!("{k}: {}\r\n", v.to_str().expect("ascii")));
    }
    head.push_str("authorization: Bearer alice-token\r\n\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(text.as_bytes());
    bytes
}

/// The JSON messages of the SSE `data:` lines in `raw` (an HTTP/1.1 chunked response).
fn messages(raw: &[u8]) -> Vec<Value> {
    let text = String::from_utf8_lossy(raw);
    text.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap_or_else(|e| panic!("a whole JSON frame ({e}): {d:.80}")))
        .collect()
}

// The server's own bound (no suite id; events.md §2.6 S9 "pace it server-side"):
// stream-terminated-ends-subscription, error-resource-exhausted
#[tokio::test]
async fn a_stream_whose_client_does_not_read_is_terminated_once_its_backlog_stays_past_the_bound() {
    let config = EventsConfig::new()
        .max_streams(1, 10)
        .retained(PUBLISHED, 16 * PUBLISHED * ID_BYTES)
        .stream_backlog(BACKLOG, Duration::from_millis(200));
    let f = fixture_with(config, HttpConfig::default()).await;
    let start = f.poll(Some("alice"), json!({ "name": "incident.created" })).await;
    let big = "x".repeat(ID_BYTES);
    for i in 0..PUBLISHED {
        f.incidents.publish(incident(&format!("{i}:{big}"), Severity::P1), alice()).unwrap();
    }
    // A client with a small receive window that sends the request and then reads nothing.
    let socket = TcpSocket::new_v4().expect("socket");
    socket.set_recv_buffer_size(4096).expect("a small receive buffer");
    let mut c = guard("connect", socket.connect(f.h.addr)).await.expect("connect");
    let params = json!({ "name": "incident.created", "cursor": start["cursor"] });
    c.write_all(&raw_stream_request(f.h.addr, params)).await.expect("write");
    // The stream holds alice's only slot until the server ends it.
    guard("the slow stream to be ended", async {
        loop {
            let mut s = f.open_as("alice", 4, json!({ "name": "incident.created" })).await;
            if s.headers["content-type"] == "application/json" {
                tokio::task::yield_now().await;
                continue;
            }
            assert_eq!(next_non_heartbeat(&mut s).await["method"], "notifications/events/active");
            return;
        }
    })
    .await;
    // Now read what the server had queued: part of the replay, then the reason, then the result.
    let mut raw = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    while !raw.ends_with(b"\r\n0\r\n\r\n") {
        let n = guard("the rest of the stream", c.read(&mut buf)).await.expect("read");
        assert!(n > 0, "closed before the end of the response");
        raw.extend_from_slice(&buf[..n]);
    }
    assert!(raw.starts_with(b"HTTP/1.1 200"), "{:.200}", String::from_utf8_lossy(&raw));
    let got = messages(&raw);
    assert_eq!(got[0]["method"], "notifications/events/active");
    assert_eq!(got[0]["params"]["truncated"], false, "everything published is retained");
    // The occurrences delivered: the first ones, in order, then none.
    let delivered: Vec<usize> = got
        .iter()
        .filter(|m| m["method"] == "notifications/events/event")
        .map(|m| {
            let id = m["params"]["data"]["incidentId"].as_str().expect("an id");
            id.split(':').next().and_then(|n| n.parse().ok()).expect("numbered")
        })
        .collect();
    let events = delivered.len();
    assert!(events > 0, "the stream delivered before it fell behind");
    assert!(events < PUBLISHED, "the server did not queue the whole replay ({events} events)");
    assert_eq!(delivered, (0..events).collect::<Vec<_>>());
    let n = got.len();
    assert!(n >= 2, "{got:?}");
    let end = &got[n - 2];
    assert_message(end);
    assert_eq!(end["method"], "notifications/events/terminated", "{end}");
    assert_eq!(end["params"]["error"]["code"], -32013);
    assert_eq!(end["params"]["error"]["data"], json!({ "limit": "streamBacklogBytes", "max": BACKLOG }));
    assert_eq!(end["params"]["_meta"][SUB_ID], 1);
    assert_eq!(got[n - 1]["id"], 1);
    assert_eq!(got[n - 1]["result"]["resultType"], "complete");
    // Events came in order and the last one's cursor resumes right after it.
    let last = got.iter().rev().find(|m| m["method"] == "notifications/events/event").unwrap();
    let resumed =
        f.poll(Some("alice"), json!({ "name": "incident.created", "cursor": last["params"]["cursor"] })).await;
    let next_id = resumed["events"][0]["data"]["incidentId"].as_str().unwrap();
    assert!(next_id.starts_with(&format!("{events}:")), "resumes at the first one not delivered");
}
