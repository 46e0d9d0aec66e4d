//! A hostile MCP server on a raw socket: it answers what a test tells it,
//! byte for byte (endless bodies, silence, redirects, escape sequences, SSE
//! streams that end early), and records every request it gets (head and JSON
//! body) and how many bytes it managed to send. [`oauth`] adds a hostile
//! authorization server on the same socket and a login driven by the test.

pub mod oauth;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
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
    Endless {
        /// The `Content-Type` sent.
        content_type: &'static str,
        /// The bytes sent first.
        prefix: &'static [u8],
        /// The byte repeated after them.
        fill: u8,
    },
    /// `307 Temporary Redirect` to this location.
    Redirect(String),
    /// A status without a body (`202` for a notification, `405` for a GET).
    Status(u16),
    /// Any status, headers and body (the body's length is sent).
    Raw {
        /// The status code.
        status: u16,
        /// The headers, as given.
        headers: Vec<(String, String)>,
        /// The body.
        body: String,
    },
    /// `200 text/event-stream`, then `body` as written, then the connection
    /// closes (`hang: false`) or stays open and silent (`hang: true`).
    Sse {
        /// What the stream carries, as written.
        body: String,
        /// Stay open and silent after it, instead of closing.
        hang: bool,
    },
}

/// One request as the hostile server's handler sees it.
#[derive(Debug, Clone)]
pub struct Req {
    /// `http://127.0.0.1:PORT`: the server's own origin.
    pub origin: String,
    /// `GET`, `POST`, ...
    pub method: String,
    /// The request target (path and query), as sent.
    pub target: String,
    /// The request head, lower-cased.
    pub head: String,
    /// The request head as sent.
    pub raw_head: String,
    /// The body as sent.
    pub body: Vec<u8>,
    /// The body as JSON (`Null` when it is not JSON).
    pub json: Value,
}

impl Req {
    /// The target's path.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or_default()
    }

    /// A header's value as sent (the name matched without regard to case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.raw_head.lines().skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim().eq_ignore_ascii_case(name).then_some(v.trim())
        })
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
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
    hostile_http(move |r| f(&r.json, &r.head)).await
}

/// Starts a server answering each request with `f(request)`.
pub async fn hostile_http(f: impl Fn(&Req) -> Reply + Send + Sync + 'static) -> Hostile {
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
                    let Some((raw_head, body)) = read_request(&mut s, &mut buf).await else { return };
                    let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    let head = raw_head.to_lowercase();
                    h.seen.lock().unwrap().push(Seen { head: head.clone(), body: json.clone() });
                    let mut line = raw_head.lines().next().unwrap_or_default().split(' ');
                    let (method, target) = (line.next().unwrap_or_default(), line.next().unwrap_or_default());
                    let req = Req {
                        origin: h.origin.clone(),
                        method: method.to_owned(),
                        target: target.to_owned(),
                        head,
                        raw_head: raw_head.clone(),
                        body,
                        json,
                    };
                    if !answer(&mut s, f(&req), &req.json, &h.sent).await {
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
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            let len = head
                .to_lowercase()
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
        Reply::Status(status) => {
            let head = format!("HTTP/1.1 {status} X\r\ncontent-length: 0\r\n\r\n");
            s.write_all(head.as_bytes()).await.is_ok()
        }
        Reply::Raw { status, headers, body } => {
            let mut head = format!("HTTP/1.1 {status} X\r\ncontent-length: {}\r\n", body.len());
            for (k, v) in headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str("\r\n");
            s.write_all(head.as_bytes()).await.is_ok() && s.write_all(body.as_bytes()).await.is_ok()
        }
        Reply::Sse { body, hang } => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
            let _ = s.write_all(head.as_bytes()).await;
            let _ = s.write_all(body.as_bytes()).await;
            if hang {
                std::future::pending::<()>().await;
            }
            false
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

/// A fresh, empty configuration directory for the CLI's credential store
/// (`CONDUIT_MCP_CONFIG_DIR`).
pub fn config_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "conduit-hostile-{name}-{}-{:08x}",
        std::process::id(),
        rand::random::<u32>()
    ));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Runs `conduit-mcp ARGS` with the credential store in `dir` (and `envs`),
/// waiting at most `limit`: `None` when it was still running then (it is killed).
pub async fn cli_in(dir: &Path, args: &[&str], envs: &[(&str, &str)], limit: Duration) -> Option<std::process::Output> {
    let mut cmd = tokio::process::Command::new(crate::cli_support::BIN);
    cmd.args(args).env("CONDUIT_MCP_CONFIG_DIR", dir).envs(envs.iter().copied()).kill_on_drop(true);
    cmd.stdin(std::process::Stdio::null());
    tokio::time::timeout(limit, cmd.output()).await.ok().map(|o| o.expect("run conduit-mcp"))
}
