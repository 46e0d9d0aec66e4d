//! The HTTP server's limits, over real sockets: a head, a body and an idle
//! keep-alive connection each have a deadline; a listen stream (a request in
//! flight) has none; connections beyond the limit wait; a request stuck in
//! flight cannot hold a shutdown past its deadline.

use crate::common;

use common::*;
use conduit_mcp::prelude::*;
use conduit_mcp::transport::http::{self, HttpConfig};
use serde_json::json;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const SHORT: Duration = Duration::from_millis(200);
const LONG: Duration = Duration::from_secs(60);

struct Served {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    done: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Served {
    async fn start(config: HttpConfig) -> Served {
        let server = Server::builder("limits", "1.0.0").tool(echo_tool()).build().expect("server");
        let bound = http::bind("127.0.0.1:0".parse().expect("addr")).await.expect("bind");
        let addr = bound.local_addr();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let done = tokio::spawn(bound.serve(server, config, async move {
            let _ = stopped.await;
        }));
        Served { addr, stop: Some(stop), done }
    }

    fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Begins shutdown and waits (within the guard) for `serve` to return.
    async fn shut_down(mut self) {
        let _ = self.stop.take().expect("once").send(());
        guard("serve to return", &mut self.done).await.expect("serve task").expect("serve");
    }
}

fn cfg() -> HttpConfig {
    HttpConfig::default().header_timeout(LONG).body_timeout(LONG).idle_timeout(LONG)
}

/// Reads until the server closes the connection; returns what it sent.
async fn until_closed(s: &mut TcpStream) -> Vec<u8> {
    let mut buf = Vec::new();
    let _ = guard("the server to close the connection", s.read_to_end(&mut buf)).await;
    buf
}

fn echo_request(addr: SocketAddr, close: bool) -> Vec<u8> {
    let body = call(1, "echo", json!({ "text": "hi" })).to_string();
    let mut extra = vec![
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", V),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "echo"),
    ];
    if !close {
        extra.push(("Connection", "keep-alive"));
    }
    let mut head = raw_head(addr, &extra, body.len());
    if !close {
        let text = String::from_utf8(head).expect("ascii").replace("Connection: close\r\n", "");
        head = text.into_bytes();
    }
    head.extend_from_slice(body.as_bytes());
    head
}

#[tokio::test]
async fn a_connection_that_sends_nothing_is_closed_after_the_head_timeout() {
    let s = Served::start(cfg().header_timeout(SHORT)).await;
    let mut c = TcpStream::connect(s.addr).await.expect("connect");
    assert!(until_closed(&mut c).await.is_empty());
    s.shut_down().await;
}

#[tokio::test]
async fn a_half_sent_head_is_closed_after_the_head_timeout() {
    let s = Served::start(cfg().header_timeout(SHORT)).await;
    let mut c = TcpStream::connect(s.addr).await.expect("connect");
    c.write_all(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: appl").await.expect("write");
    until_closed(&mut c).await;
    s.shut_down().await;
}

#[tokio::test]
async fn a_half_sent_body_gets_408_after_the_body_timeout() {
    let s = Served::start(cfg().body_timeout(SHORT)).await;
    let mut c = TcpStream::connect(s.addr).await.expect("connect");
    let mut head = raw_head(s.addr, &[("MCP-Protocol-Version", V)], 100);
    head.extend_from_slice(b"{\"jsonrpc\"");
    c.write_all(&head).await.expect("write");
    let answer = String::from_utf8_lossy(&until_closed(&mut c).await).into_owned();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    s.shut_down().await;
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed_after_the_idle_timeout() {
    let s = Served::start(cfg().idle_timeout(SHORT)).await;
    let mut c = TcpStream::connect(s.addr).await.expect("connect");
    c.write_all(&echo_request(s.addr, false)).await.expect("write");
    let answer = String::from_utf8_lossy(&until_closed(&mut c).await).into_owned();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("\"hi\""), "{answer}");
    // A second request on a kept-alive connection starts a fresh head clock.
    let mut c = TcpStream::connect(s.addr).await.expect("connect");
    c.write_all(&echo_request(s.addr, false)).await.expect("write");
    let mut first = vec![0u8; 1];
    guard("the first answer", c.read_exact(&mut first)).await.expect("read");
    c.write_all(&echo_request(s.addr, false)).await.expect("write the second request");
    let rest = String::from_utf8_lossy(&until_closed(&mut c).await).into_owned();
    assert_eq!(rest.matches("HTTP/1.1 200").count(), 1, "the second request was answered: {rest}");
    s.shut_down().await;
}

#[tokio::test]
async fn a_listen_stream_outlives_every_timeout_and_gets_its_closing_result() {
    let config = cfg().header_timeout(SHORT).idle_timeout(SHORT).body_timeout(SHORT).keep_alive(SHORT / 4);
    let s = Served::start(config).await;
    let listen = req("l", "subscriptions/listen", json!({ "notifications": { "toolsListChanged": true } }));
    let resp = reqwest::Client::new().post(s.url()).headers(std_headers(&listen)).body(listen.to_string());
    let mut resp = guard("the listen stream", resp.send()).await.expect("sent");
    assert_eq!(resp.status(), 200);
    // Twenty keep-alive comments: five times every deadline, and still open.
    let mut seen = String::new();
    while seen.matches("\n\n").count() < 21 {
        let chunk = guard("the next chunk", resp.chunk()).await.expect("read").expect("still open");
        seen.push_str(&String::from_utf8_lossy(&chunk).replace("\r\n", "\n"));
    }
    let stop = tokio::spawn(s.shut_down());
    let mut rest = Vec::new();
    while let Some(chunk) = guard("the closing result", resp.chunk()).await.expect("read") {
        rest.extend_from_slice(&chunk);
    }
    let (events, _) = parse_sse(&rest);
    let last = events.last().expect("a closing result");
    assert_eq!(last["id"], "l", "{last}");
    assert!(last.get("result").is_some(), "{last}");
    guard("shutdown", stop).await.expect("shutdown task");
}

#[tokio::test]
async fn connections_beyond_the_limit_wait_for_a_free_slot() {
    let s = Served::start(cfg().max_connections(2)).await;
    let mut held = vec![TcpStream::connect(s.addr).await.expect("1"), TcpStream::connect(s.addr).await.expect("2")];
    let mut third = TcpStream::connect(s.addr).await.expect("3 (in the backlog)");
    third.write_all(&echo_request(s.addr, true)).await.expect("write");
    let mut byte = [0u8; 1];
    let early = tokio::time::timeout(SHORT, third.read(&mut byte)).await;
    assert!(early.is_err(), "served beyond the limit: {early:?}");
    held.pop();
    let answer = String::from_utf8_lossy(&until_closed(&mut third).await).into_owned();
    assert!(answer.starts_with("HTTP/1.1 200"), "served once a slot was free: {answer}");
    drop(held);
    s.shut_down().await;
}

#[tokio::test]
async fn a_stuck_request_cannot_hold_shutdown_past_its_deadline() {
    let s = Served::start(cfg().shutdown_timeout(SHORT)).await;
    let mut c = TcpStream::connect(s.addr).await.expect("connect");
    let mut head = raw_head(s.addr, &[("MCP-Protocol-Version", V)], 100);
    head.extend_from_slice(b"{\"jsonrpc\"");
    c.write_all(&head).await.expect("write");
    // The body never completes; shutdown still returns.
    s.shut_down().await;
    until_closed(&mut c).await;
}
