//! The CLI under test, for the CLI's client tests: running the
//! `conduit-mcp` binary (piped or in a pseudo-terminal), and a misbehaving
//! HTTP server on a raw socket to point it at. (The library's
//! `tests/client_support/` is another thing: a server and the library
//! client's helpers, in process.)
//!
//! The mock is raw on purpose: it plays a broken *server* (garbage, hang-ups
//! mid-stream, odd statuses), byte for byte, which no client library could.

use serde_json::{Value, json};
use std::process::{Command, Output};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_conduit-mcp");

/// The task ledger of the commands these helpers run: one file per test
/// binary under the temporary directory (never the user's own), which the
/// binary's tests write at once.
pub fn test_ledger() -> String {
    let dir = std::env::temp_dir().join(format!("conduit-cli-tests-{}", std::process::id()));
    dir.join("tasks.db").display().to_string()
}

/// Runs `conduit-mcp ARGS` with piped output (stdin, stdout and stderr are not terminals).
pub fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("CONDUIT_MCP_LEDGER", test_ledger())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run conduit-mcp")
}

/// `conduit-mcp ARGS` in a pseudo-terminal (ANSI escapes stripped from what is read).
pub fn pty(args: &[&str]) -> rexpect::session::PtySession {
    let mut cmd = Command::new(BIN);
    cmd.args(args).env("TERM", "xterm").env("CONDUIT_MCP_LEDGER", test_ledger());
    let opts = rexpect::reader::Options { timeout_ms: Some(20_000), strip_ansi_escape_codes: true };
    rexpect::session::spawn_with_options(cmd, opts).expect("spawn in a pty")
}

/// The exit code of a finished pty session.
pub fn exit_code(p: &mut rexpect::session::PtySession) -> i32 {
    match p.process.wait().expect("wait") {
        rexpect::process::wait::WaitStatus::Exited(_, c) => c,
        other => panic!("did not exit normally: {other:?}"),
    }
}

/// What the mock answers: the raw HTTP status, content type and body.
pub type Answer = (u16, &'static str, String);

/// A JSON-RPC result for `req`.
pub fn result(req: &Value, r: Value) -> Answer {
    (200, "application/json", json!({ "jsonrpc": "2.0", "id": req["id"], "result": r }).to_string())
}

/// A JSON-RPC error for `req`.
pub fn error(req: &Value, code: i64, message: &str) -> Answer {
    (
        200,
        "application/json",
        json!({ "jsonrpc": "2.0", "id": req["id"], "error": { "code": code, "message": message } }).to_string(),
    )
}

/// The discover result of a modern mock with the Tasks extension.
pub fn discover() -> Value {
    json!({ "resultType": "complete", "supportedVersions": ["2026-07-28"], "ttlMs": 0, "cacheScope": "private",
            "capabilities": { "tools": {}, "extensions": { "io.modelcontextprotocol/tasks": {} } } })
}

/// `tools/list` with one argument-less tool `t`.
pub fn one_tool() -> Value {
    json!({ "resultType": "complete", "ttlMs": 0, "cacheScope": "private",
            "tools": [{ "name": "t", "inputSchema": { "type": "object", "properties": {} } }] })
}

/// A task as a mock sends it.
pub fn task(status: &str, created: &str, ttl: Option<u64>) -> Value {
    json!({ "taskId": "t-1", "status": status, "createdAt": created, "lastUpdatedAt": created,
            "ttlMs": ttl, "pollIntervalMs": 20 })
}

/// A server on `127.0.0.1:0` that answers each POST with `f(body)`, or
/// closes mid-answer when `f` returns status 0, or never answers (the
/// connection held open) when it returns status 1. Returns its URL.
pub async fn mock(f: impl Fn(&Value) -> Answer + Send + Sync + 'static) -> String {
    let f = Arc::new(f);
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", l.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let f = f.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                let body = loop {
                    let n = match s.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    buf.extend_from_slice(&chunk[..n]);
                    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else { continue };
                    let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
                    let len = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse::<usize>().ok())
                        .unwrap_or(0);
                    if buf.len() >= end + 4 + len {
                        break buf[end + 4..end + 4 + len].to_vec();
                    }
                };
                let req: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let (status, ct, body) = f(&req);
                if status == 1 {
                    std::future::pending::<()>().await;
                }
                if status == 0 {
                    // Start an SSE answer, then hang up before the response.
                    let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n: hi\n\n").await;
                    return;
                }
                let head = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: {ct}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = s.write_all(head.as_bytes()).await;
                let _ = s.write_all(body.as_bytes()).await;
            });
        }
    });
    url
}
