//! Helpers for tests that run `conduit-mcp serve` as a child process.

#![allow(dead_code)]

use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The Tasks extension id.
pub const TASKS: &str = "io.modelcontextprotocol/tasks";

/// A running `conduit-mcp serve`; killed (SIGKILL) when dropped.
pub struct Node {
    pub child: std::process::Child,
    pub url: String,
    /// Every line it wrote to stderr so far.
    pub log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    /// Told after every stderr line, and when stderr closes (the process ended).
    pub logged: std::sync::Arc<tokio::sync::Notify>,
    /// Whether stderr has closed.
    pub ended: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Node {
    /// Waits (up to 20 s, a failure guard) until `done` holds of what the
    /// node has written and whether its stderr has closed; woken by each line.
    pub async fn until_log(&self, what: &str, done: impl Fn(&[String], bool) -> bool) {
        let wait = async {
            loop {
                let next = self.logged.notified();
                tokio::pin!(next);
                next.as_mut().enable();
                let ended = self.ended.load(std::sync::atomic::Ordering::SeqCst);
                if done(&self.log.lock().unwrap(), ended) {
                    return;
                }
                next.await;
            }
        };
        tokio::time::timeout(Duration::from_secs(20), wait).await.unwrap_or_else(|_| panic!("timed out: {what}"));
    }

    /// Starts `conduit-mcp serve --listen 127.0.0.1:0 ARGS` and waits for its address.
    pub async fn start(args: &[&str]) -> Node {
        let mut all = vec!["--listen", "127.0.0.1:0"];
        all.extend_from_slice(args);
        Node::start_exactly(&all).await
    }

    /// Starts `conduit-mcp serve ARGS` (no `--listen` added) and waits for its address.
    pub async fn start_exactly(args: &[&str]) -> Node {
        let mut child = Command::new(env!("CARGO_BIN_EXE_conduit-mcp"))
            .arg("serve")
            .args(args)
            .env("RUST_LOG", "warn")
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn conduit-mcp");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = tokio::sync::oneshot::channel();
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let lines = log.clone();
        let logged = std::sync::Arc::new(tokio::sync::Notify::new());
        let ended = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (tell, end) = (logged.clone(), ended.clone());
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                lines.lock().unwrap().push(line.clone());
                tell.notify_waiters();
                if let Some(url) = line.strip_prefix("listening on ") {
                    if let Some(tx) = tx.take() {
                        let _ = tx.send(url.to_owned());
                    }
                } else if line.starts_with("error") {
                    eprintln!("node: {line}");
                }
            }
            end.store(true, std::sync::atomic::Ordering::SeqCst);
            tell.notify_waiters();
        });
        let url = tokio::time::timeout(Duration::from_secs(60), rx)
            .await
            .expect("the node printed its address in time")
            .expect("the node started");
        Node { child, url, log, logged, ended }
    }

    /// Runs `conduit-mcp serve --listen 127.0.0.1:0 ARGS`, expecting it to refuse
    /// to start: returns its exit code and everything it wrote to stderr.
    pub async fn refused(args: &[&str]) -> (Option<i32>, String) {
        let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_conduit-mcp"))
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(args)
            .env("RUST_LOG", "warn")
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn conduit-mcp");
        let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
            .await
            .expect("the refused node exited in time")
            .expect("output");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!stderr.contains("listening on"), "it started: {stderr}");
        (out.status.code(), stderr)
    }

    /// Kills the process with SIGKILL (no shutdown of any kind).
    pub fn kill(&mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("reaped");
    }

    /// Sends a request with the standard headers and an optional bearer token; returns the JSON body.
    pub async fn send(&self, token: Option<&str>, body: &Value) -> Value {
        let resp = self.post(token, body).send().await.expect("request");
        let text = resp.text().await.expect("body");
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"))
    }

    /// A POST with the MCP headers for `body`.
    pub fn post(&self, token: Option<&str>, body: &Value) -> reqwest::RequestBuilder {
        let method = body["method"].as_str().expect("method").to_owned();
        let name = match method.as_str() {
            "tools/call" => body["params"]["name"].as_str(),
            "tasks/get" | "tasks/update" | "tasks/cancel" => body["params"]["taskId"].as_str(),
            _ => None,
        };
        let mut rb = reqwest::Client::new()
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method);
        if let Some(n) = name {
            rb = rb.header("mcp-name", n);
        }
        if let Some(t) = token {
            rb = rb.bearer_auth(t);
        }
        rb.body(body.to_string())
    }
}

/// A request declaring the Tasks extension.
pub fn treq(id: impl Into<Value>, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": { "elicitation": {}, "extensions": { TASKS: {} } }
    });
    json!({ "jsonrpc": "2.0", "id": id.into(), "method": method, "params": params })
}

/// Creates a task with `tool` and returns its id.
pub async fn create(node: &Node, token: Option<&str>, tool: &str, args: Value) -> String {
    let r = node.send(token, &treq(1, "tools/call", json!({ "name": tool, "arguments": args }))).await;
    r["result"]["taskId"].as_str().unwrap_or_else(|| panic!("no task: {r}")).to_owned()
}

/// `tasks/get` result (or the whole error response).
pub async fn get(node: &Node, token: Option<&str>, id: &str) -> Value {
    node.send(token, &treq(2, "tasks/get", json!({ "taskId": id }))).await
}

/// An open SSE response, read event by event.
pub struct Events {
    resp: reqwest::Response,
    buf: String,
}

impl Events {
    /// Opens a listen stream for `ids`.
    pub async fn listen(node: &Node, token: Option<&str>, id: &str, ids: &[String]) -> Events {
        let body = treq(id, "subscriptions/listen", json!({ "notifications": { "taskIds": ids } }));
        let resp = node.post(token, &body).send().await.expect("listen");
        assert_eq!(resp.status(), 200);
        Events { resp, buf: String::new() }
    }

    /// The next event (fails after `limit`).
    pub async fn next(&mut self, limit: Duration) -> Value {
        self.within(limit).await.expect("an event in time")
    }

    /// The next event, or `None` when none comes within `limit`.
    pub async fn within(&mut self, limit: Duration) -> Option<Value> {
        loop {
            if let Some(end) = self.buf.find("\n\n") {
                let block: String = self.buf.drain(..end + 2).collect();
                let data: Vec<&str> = block.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim).collect();
                if !data.is_empty() {
                    return Some(serde_json::from_str(&data.join("\n")).expect("event JSON"));
                }
                continue;
            }
            let chunk = tokio::time::timeout(limit, self.resp.chunk())
                .await
                .ok()?
                .expect("stream read")
                .expect("stream still open");
            self.buf.push_str(&String::from_utf8_lossy(&chunk).replace("\r\n", "\n"));
        }
    }
}

/// `DATABASE_URL`, or `None` (with a printed reason) when PostgreSQL tests should skip.
pub fn database_url() -> Option<String> {
    match std::env::var("DATABASE_URL") {
        Ok(u) if !u.is_empty() => Some(u),
        _ => {
            assert!(
                std::env::var("CONDUIT_REQUIRE_POSTGRES").as_deref() != Ok("1"),
                "CONDUIT_REQUIRE_POSTGRES=1 but DATABASE_URL is not set"
            );
            eprintln!("skipped: set DATABASE_URL to run the PostgreSQL tests");
            None
        }
    }
}

/// A fresh schema name, and a guard that drops it at the end.
pub struct Schema {
    pub name: String,
    url: String,
}

impl Schema {
    pub fn new(url: &str) -> Schema {
        Schema { name: format!("cli_test_{:016x}", rand::random::<u64>()), url: url.to_owned() }
    }

    pub async fn drop_now(&self) {
        use sqlx::Connection;
        if let Ok(mut c) = sqlx::PgConnection::connect(&self.url).await {
            let _ = sqlx::query(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name)).execute(&mut c).await;
        }
    }
}
