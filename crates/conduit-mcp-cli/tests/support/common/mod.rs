//! Helpers for tests that run `conduit-mcp serve` as a child process and
//! talk to it through the library client (`conduit_mcp::client`): calls,
//! task creates and reads, listen streams. Only [`treq`] builds a raw body,
//! for the tests whose point is the bytes on the wire.

use conduit_mcp::client::{
    Ask, CallOutcome, Client, ClientBuilder, ClientError, InputHandler, InputSupport, ListenEvent, ListenStream,
};
use conduit_mcp::protocol::RpcError;
use conduit_mcp::protocol::content::Content;
use conduit_mcp::protocol::tools::CallToolResult;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The Tasks extension id.
pub const TASKS: &str = "io.modelcontextprotocol/tasks";

/// A running `conduit-mcp serve`; killed (SIGKILL) when dropped.
pub struct Node {
    /// The server's process.
    pub child: std::process::Child,
    /// Where it serves MCP (`http://127.0.0.1:PORT/mcp`).
    pub url: String,
    /// Every line it wrote to stderr so far.
    pub log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    /// Told after every stderr line, and when stderr closes (the process ended).
    pub logged: std::sync::Arc<tokio::sync::Notify>,
    /// Whether stderr has closed.
    pub ended: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// The library clients of this node, by bearer token.
    clients: std::sync::Mutex<HashMap<Option<String>, Client>>,
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
        Node::start_logging(args, "warn").await
    }

    /// [`Node::start_exactly`] with `RUST_LOG=rust_log` (every line kept in [`Node::log`]).
    pub async fn start_logging(args: &[&str], rust_log: &str) -> Node {
        let mut child = Command::new(env!("CARGO_BIN_EXE_conduit-mcp"))
            .arg("serve")
            .args(args)
            .env("RUST_LOG", rust_log)
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
        Node { child, url, log, logged, ended, clients: Default::default() }
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

    /// The library client of this node for `token` (connected once per token, then shared).
    pub async fn client(&self, token: Option<&str>) -> Client {
        let key = token.map(str::to_owned);
        if let Some(c) = self.clients.lock().unwrap().get(&key) {
            return c.clone();
        }
        let mut b = ClientBuilder::http(&self.url).input_handler(DeclaresForms);
        if let Some(t) = token {
            b = b.token(t);
        }
        let c = b.connect().await.unwrap_or_else(|e| panic!("connect to {}: {e}", self.url));
        self.clients.lock().unwrap().insert(key, c.clone());
        c
    }
}

/// Declares form elicitation on every request (a tool such as `deploy`
/// needs it to become a task) and answers nothing: these tests never reply.
struct DeclaresForms;

#[async_trait::async_trait]
impl InputHandler for DeclaresForms {
    fn support(&self) -> InputSupport {
        let mut s = InputSupport::NONE;
        s.form = true;
        s
    }
    async fn answer(&self, _key: &str, _ask: Ask<'_>) -> Result<Value, ClientError> {
        Err(ClientError::Input("these tests answer no input".into()))
    }
}

/// A raw request body declaring the Tasks extension, for the tests whose
/// point is the bytes on the wire (the Host guard); everything that speaks
/// MCP as such goes through the library client ([`Node::client`]).
pub fn treq(id: impl Into<Value>, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": { "elicitation": {}, "extensions": { TASKS: {} } }
    });
    json!({ "jsonrpc": "2.0", "id": id.into(), "method": method, "params": params })
}

/// Calls `tool` and returns the id of the task it made.
pub async fn create(node: &Node, token: Option<&str>, tool: &str, args: Value) -> String {
    match node.client(token).await.call_tool(tool, args).await {
        Ok(CallOutcome::Task(t)) => t.id().to_owned(),
        other => panic!("{tool}: no task: {other:?}"),
    }
}

/// Calls `tool` and returns its result (it must not become a task).
pub async fn call(node: &Node, token: Option<&str>, tool: &str, args: Value) -> CallToolResult {
    match node.client(token).await.call_tool(tool, args).await {
        Ok(CallOutcome::Complete(r)) => r,
        other => panic!("{tool}: not a result: {other:?}"),
    }
}

/// Calls `tool` and returns the JSON-RPC error the server refused it with.
pub async fn call_refused(node: &Node, token: Option<&str>, tool: &str, args: Value) -> RpcError {
    match node.client(token).await.call_tool(tool, args).await {
        Err(ClientError::Rpc(e)) => e,
        other => panic!("{tool}: not refused: {other:?}"),
    }
}

/// The text of a result's first content block.
pub fn first_text(r: &CallToolResult) -> String {
    match r.content.first() {
        Some(Content::Text { text, .. }) => text.clone(),
        other => panic!("no text content: {other:?}"),
    }
}

/// The raw `tasks/get` result (the task as the server wrote it, `_meta` and
/// `resultType` included); fails the test on an error.
pub async fn get(node: &Node, token: Option<&str>, id: &str) -> Value {
    node.client(token)
        .await
        .request("tasks/get", json!({ "taskId": id }))
        .await
        .unwrap_or_else(|e| panic!("tasks/get: task lost: {e}"))
}

/// The JSON-RPC error `tasks/get` answers (a missing or foreign task).
pub async fn get_refused(node: &Node, token: Option<&str>, id: &str) -> RpcError {
    match node.client(token).await.request("tasks/get", json!({ "taskId": id })).await {
        Err(ClientError::Rpc(e)) => e,
        other => panic!("tasks/get was not refused: {other:?}"),
    }
}

/// A `subscriptions/listen` stream opened through the library client.
pub struct Events {
    stream: ListenStream,
}

impl Events {
    /// Opens a listen stream for `ids` as `token`.
    pub async fn listen(node: &Node, token: Option<&str>, ids: &[String]) -> Events {
        let stream = node.client(token).await.listen(json!({ "taskIds": ids })).await.expect("listen");
        Events { stream }
    }

    /// The listen request's id, as notifications carry it in `_meta`.
    pub fn subscription_id(&self) -> Value {
        self.stream.subscription_id().to_value()
    }

    /// The next message (fails after `limit`).
    pub async fn next(&mut self, limit: Duration) -> ListenEvent {
        self.within(limit).await.expect("a message in time")
    }

    /// The next message, or `None` when none comes within `limit`.
    pub async fn within(&mut self, limit: Duration) -> Option<ListenEvent> {
        tokio::time::timeout(limit, self.stream.next()).await.ok().map(|m| m.expect("the stream is still open"))
    }

    /// The acknowledgment, which must come next: the task ids the server acknowledged.
    pub async fn ack(&mut self, limit: Duration) -> Vec<String> {
        let (method, params) = self.notification(limit).await;
        assert_eq!(method, "notifications/subscriptions/acknowledged", "{params}");
        let ids = params["notifications"]["taskIds"].as_array().unwrap_or_else(|| panic!("no taskIds: {params}"));
        ids.iter().map(|v| v.as_str().expect("a task id").to_owned()).collect()
    }

    /// The next notification, which must come within `limit`: its method and `params`.
    pub async fn notification(&mut self, limit: Duration) -> (String, Value) {
        match self.next(limit).await {
            ListenEvent::Notification { method, params } => (method, params),
            other => panic!("not a notification: {other:?}"),
        }
    }

    /// The listen request's closing result, which must come next.
    pub async fn closing(&mut self, limit: Duration) -> Result<Value, RpcError> {
        match self.next(limit).await {
            ListenEvent::Closed(r) => r,
            other => panic!("not the closing result: {other:?}"),
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
    /// The schema's name (`cli_test_` and 16 random hex digits).
    pub name: String,
    url: String,
}

impl Schema {
    /// A fresh schema name on the PostgreSQL server at `url`.
    pub fn new(url: &str) -> Schema {
        Schema { name: format!("cli_test_{:016x}", rand::random::<u64>()), url: url.to_owned() }
    }

    /// Drops the schema and everything in it.
    pub async fn drop_now(&self) {
        use sqlx::Connection;
        if let Ok(mut c) = sqlx::PgConnection::connect(&self.url).await {
            let _ = sqlx::query(sqlx::AssertSqlSafe(format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name)))
                .execute(&mut c)
                .await;
        }
    }
}
