//! A hostile MCP server on a raw socket: it answers what a test tells it,
//! byte for byte (endless bodies, silence, redirects, escape sequences), and
//! records every request it gets (head and JSON body) and how many bytes it
//! managed to send.

#![allow(dead_code)]

use serde_json::{Value, json};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What the hostile server does with one request.
pub enum Reply {
    /// `200 application/json` with this JSON-RPC result for the request's id.
    Result(Value),
    /// `200` with a JSON body given whole.
    Body(Value),
    /// Reads the request and never answers.
    Hang,
    /// Sends this head (content type) and `prefix`, then `fill` bytes until the client hangs up.
    Endless { content_type: &'static str, prefix: &'static [u8], fill: u8 },
    /// `307 Temporary Redirect` to this location.
    Redirect(String),
}

/// One request the server got.
#[derive(Debug, Clone)]
pub struct Seen {
    /// The request head, lower-cased.
    pub head: String,
    /// The body as JSON (`Null` when it was not JSON).
    pub body: Value,
}

/// A running hostile server.
#[derive(Clone)]
pub struct Hostile {
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    /// `http://127.0.0.1:PORT`.
    pub origin: String,
    /// Every request, in order.
    pub seen: Arc<Mutex<Vec<Seen>>>,
    /// Bytes written by `Endless` replies.
    pub sent: Arc<AtomicU64>,
}

impl Hostile {
    /// The requests so far.
    pub fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// Bytes sent by endless replies so far.
    pub fn bytes_sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }
}

/// The discover result of a modern server with tools.
pub fn discover() -> Value {
    json!({ "resultType": "complete", "supportedVersions": ["2026-07-28"], "ttlMs": 0, "cacheScope": "private",
            "capabilities": { "tools": {}, "extensions": { "io.modelcontextprotocol/tasks": {} } } })
}

/// A `tools/list` result with these tools.
pub fn tools(list: Value) -> Value {
    json!({ "resultType": "complete", "ttlMs": 0, "cacheScope": "private", "tools": list })
}

/// Starts a server answering each request with `f(json_body, lower-cased head)`.
pub async fn hostile(f: impl Fn(&Value, &str) -> Reply + Send + Sync + 'static) -> Hostile {
    let f = Arc::new(f);
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", l.local_addr().unwrap());
    let h = Hostile { url: format!("{origin}/mcp"), origin, seen: Arc::default(), sent: Arc::default() };
    let server = h.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let (f, h) = (f.clone(), server.clone());
            tokio::spawn(async move {
                // Keep-alive: answer requests on this connection until it closes.
                let mut buf = Vec::new();
                loop {
                    let Some((head, body)) = read_request(&mut s, &mut buf).await else { return };
                    let req: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    h.seen.lock().unwrap().push(Seen { head: head.clone(), body: req.clone() });
                    if !answer(&mut s, f(&req, &head), &req, &h.sent).await {
                        return;
                    }
                }
            });
        }
    });
    h
}

async fn read_request(s: &mut tokio::net::TcpStream, buf: &mut Vec<u8>) -> Option<(String, Vec<u8>)> {
    let mut chunk = [0u8; 8192];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
            let len = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if buf.len() >= end + 4 + len {
                let body = buf[end + 4..end + 4 + len].to_vec();
                buf.drain(..end + 4 + len);
                return Some((head, body));
            }
        }
        let n = s.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Writes one reply; `false` when the connection is done.
async fn answer(s: &mut tokio::net::TcpStream, reply: Reply, req: &Value, sent: &AtomicU64) -> bool {
    let json = |v: Value| {
        let body = v.to_string();
        format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}", body.len())
    };
    match reply {
        Reply::Result(r) => {
            s.write_all(json(json!({ "jsonrpc": "2.0", "id": req["id"], "result": r })).as_bytes()).await.is_ok()
        }
        Reply::Body(v) => s.write_all(json(v).as_bytes()).await.is_ok(),
        Reply::Redirect(to) => {
            let head = format!("HTTP/1.1 307 Temporary Redirect\r\nlocation: {to}\r\ncontent-length: 0\r\n\r\n");
            s.write_all(head.as_bytes()).await.is_ok()
        }
        Reply::Hang => {
            std::future::pending::<()>().await;
            false
        }
        Reply::Endless { content_type, prefix, fill } => {
            let head = format!("HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\n\r\n");
            if s.write_all(head.as_bytes()).await.is_err() || s.write_all(prefix).await.is_err() {
                return false;
            }
            let block = vec![fill; 64 * 1024];
            // Bounded: 1 GiB at most, as the finding's server sent.
            for _ in 0..(1 << 14) {
                if s.write_all(&block).await.is_err() {
                    break;
                }
                sent.fetch_add(block.len() as u64, Ordering::Relaxed);
            }
            false
        }
    }
}
