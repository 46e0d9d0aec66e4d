//! stdio through a child process: the `stdio_echo` example, spawned and driven line by line.

use crate::common;
use crate::legacy_common;

use common::{call, guard, req};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::OnceLock;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

/// The `stdio_echo` example, built once for this binary.
fn example_binary() -> &'static PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| crate::examples::example_binary("stdio_echo"))
}

/// The running child and everything it has written so far.
struct Proc {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
    stderr: ChildStderr,
    /// Every message read, in order.
    seen: Vec<Value>,
    /// Messages read while waiting for another one, not yet handed out.
    backlog: Vec<Value>,
    /// Whether the process was switched to the legacy era (it may then send requests).
    legacy: bool,
}

impl Proc {
    async fn spawn() -> Self {
        let mut child = Command::new(example_binary())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("the example starts");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let stderr = child.stderr.take().expect("stderr");
        Self { child, stdin, stdout, stderr, seen: Vec::new(), backlog: Vec::new(), legacy: false }
    }

    async fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).await.expect("write");
        stdin.write_all(b"\n").await.expect("write");
        stdin.flush().await.expect("flush");
    }

    async fn send(&mut self, msg: &Value) {
        self.send_line(&msg.to_string()).await;
    }

    /// Reads one line from stdout; it must be a JSON-RPC message. `None` at end of output.
    async fn read_line(&mut self) -> Option<Value> {
        let line = guard("a line on stdout", self.stdout.next_line()).await.expect("read stdout")?;
        let v: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}"));
        assert_eq!(v["jsonrpc"], "2.0", "stdout line is not a JSON-RPC message: {line}");
        let request = v.get("method").is_some() && v.get("id").is_some();
        assert!(self.legacy || !request, "the server sends requests only on a legacy session: {line}");
        if self.legacy {
            legacy_common::assert_message(&v);
        }
        self.seen.push(v.clone());
        Some(v)
    }

    /// The first message (backlog first, then new lines) that satisfies `pred`.
    async fn wait_for(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.backlog.iter().position(&pred) {
            return self.backlog.remove(i);
        }
        loop {
            let v = self.read_line().await.unwrap_or_else(|| panic!("stdout ended while waiting for {what}"));
            if pred(&v) {
                return v;
            }
            self.backlog.push(v);
        }
    }

    async fn response(&mut self, id: Value) -> Value {
        self.wait_for(&format!("the response to {id}"), |v| v["id"] == id && v.get("method").is_none()).await
    }

    /// Closes stdin, reads stdout to its end and waits for the process to exit.
    async fn finish(mut self) -> (Vec<Value>, ExitStatus, String) {
        drop(self.stdin.take());
        while self.read_line().await.is_some() {}
        let status = guard("the process to exit on end of input", self.child.wait()).await.expect("wait");
        let mut err = String::new();
        guard("stderr", self.stderr.read_to_string(&mut err)).await.expect("stderr");
        (self.seen, status, err)
    }
}

fn sub_id(v: &Value) -> &Value {
    &v["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"]
}

fn cancel(id: Value) -> Value {
    json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": id, "reason": "test" } })
}

#[tokio::test]
async fn responses_are_matched_by_id_and_the_process_exits_on_eof() {
    let mut p = Proc::spawn().await;
    p.send(&call(1, "echo", json!({ "text": "one" }))).await;
    p.send(&call("two", "echo", json!({ "text": "two" }))).await;
    let counted = req(
        3,
        "tools/call",
        json!({ "name": "count", "arguments": { "n": 2 },
        "_meta": { common::PV: common::V, common::CC: {}, "progressToken": "pt" } }),
    );
    p.send(&counted).await;
    p.send(&call(4, "nope", json!({}))).await;
    p.send_line("{not json").await;
    p.send_line("").await;
    p.send(&req(5, "server/discover", json!({}))).await;

    assert_eq!(p.response(json!("two")).await["result"]["content"][0]["text"], "two");
    assert_eq!(p.response(json!(1)).await["result"]["content"][0]["text"], "one");
    assert_eq!(p.response(json!(4)).await["error"]["code"], -32602);
    let parse_error = p.wait_for("the parse error", |v| v["error"]["code"] == -32700).await;
    assert!(parse_error.get("id").is_none(), "no id could be read: {parse_error}");
    assert_eq!(p.response(json!(5)).await["result"]["supportedVersions"], json!(common::SERVED));
    assert_eq!(p.response(json!(3)).await["result"]["content"][0]["text"], "counted 2");
    // String ids stay strings, integer ids stay integers (the lookups above compare JSON values).

    let (seen, status, stderr) = p.finish().await;
    assert!(status.success(), "exit status {status}; stderr: {stderr}");
    assert!(stderr.contains("end of input"), "{stderr}");
    // Progress for request 3 came before its response, and every request got exactly one response.
    let pos = |pred: &dyn Fn(&Value) -> bool| seen.iter().position(pred);
    let progress =
        pos(&|v| v["method"] == "notifications/progress" && v["params"]["progressToken"] == "pt").expect("progress");
    let response = pos(&|v| v["id"] == 3).expect("response 3");
    assert!(progress < response, "progress precedes the response");
    for id in [json!(1), json!("two"), json!(3), json!(4), json!(5)] {
        assert_eq!(seen.iter().filter(|v| v["id"] == id).count(), 1, "one response for {id}");
    }
}

#[tokio::test]
async fn cancelled_notification_stops_a_request() {
    let mut p = Proc::spawn().await;
    let slow = req(
        5,
        "tools/call",
        json!({ "name": "slow", "_meta": { common::PV: common::V, common::CC: {}, "progressToken": "s" } }),
    );
    p.send(&slow).await;
    p.wait_for("the slow tool to start", |v| v["params"]["progressToken"] == "s").await;

    // Unknown and malformed cancellations are ignored.
    p.send(&cancel(json!(999))).await;
    p.send(&json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": {} })).await;
    p.send(&cancel(json!(5))).await;
    p.send(&call(6, "echo", json!({ "text": "after" }))).await;
    assert_eq!(p.response(json!(6)).await["result"]["content"][0]["text"], "after");

    let (seen, status, stderr) = p.finish().await;
    assert!(status.success(), "exit status {status}");
    assert!(!seen.iter().any(|v| v["id"] == 5), "no response for a cancelled request: {seen:?}");
    assert!(stderr.contains("slow: stopped, cancelled=true"), "the tool saw the cancellation: {stderr}");
    assert_eq!(seen.iter().filter(|v| v.get("id").is_some()).count(), 1, "only request 6 was answered: {seen:?}");
}

#[tokio::test]
async fn listen_streams_are_demultiplexed_by_subscription_id() {
    let mut p = Proc::spawn().await;
    p.send(&req(
        "L1",
        "subscriptions/listen",
        json!({ "notifications": { "toolsListChanged": true, "resourceSubscriptions": ["test://a"] } }),
    ))
    .await;
    p.send(&req(
        2,
        "subscriptions/listen",
        json!({ "notifications": { "toolsListChanged": true, "unknownField": 1 } }),
    ))
    .await;

    // The first message of each subscription is its acknowledgment.
    let first_l1 = p.wait_for("L1's first message", |v| sub_id(v) == "L1").await;
    assert_eq!(first_l1["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        first_l1["params"]["notifications"],
        json!({ "toolsListChanged": true, "resourceSubscriptions": ["test://a"] })
    );
    let first_2 = p.wait_for("2's first message", |v| *sub_id(v) == json!(2)).await;
    assert_eq!(first_2["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(first_2["params"]["notifications"], json!({ "toolsListChanged": true }));

    // One change, two streams, each tagged with its own id (keeping its JSON type).
    p.send(&call(10, "touch", json!({ "what": "tools" }))).await;
    assert_eq!(p.response(json!(10)).await["result"]["content"][0]["text"], "2");
    for id in [json!("L1"), json!(2)] {
        let n = p.wait_for("tools list_changed", |v| *sub_id(v) == id).await;
        assert_eq!(n["method"], "notifications/tools/list_changed", "{n}");
    }
    // A resource update goes only to the stream that subscribed to it.
    p.send(&call(11, "touch", json!({ "what": "test://a" }))).await;
    assert_eq!(p.response(json!(11)).await["result"]["content"][0]["text"], "1");
    let n = p.wait_for("resources/updated", |v| v["method"] == "notifications/resources/updated").await;
    assert_eq!((sub_id(&n), &n["params"]["uri"]), (&json!("L1"), &json!("test://a")));

    // Cancelling L1 ends that stream only.
    p.send(&cancel(json!("L1"))).await;
    let cancel_sent_at = p.seen.len();
    p.send(&call(12, "touch", json!({ "what": "tools" }))).await;
    p.response(json!(12)).await;
    let n = p.wait_for("tools list_changed on 2", |v| *sub_id(v) == json!(2)).await;
    assert_eq!(n["method"], "notifications/tools/list_changed");

    let (seen, status, _) = p.finish().await;
    assert!(status.success());
    let after_cancel = &seen[cancel_sent_at..];
    assert!(!after_cancel.iter().any(|v| sub_id(v) == "L1"), "nothing for L1 after its cancellation: {after_cancel:?}");
    assert!(!seen.iter().any(|v| v["id"] == "L1"), "a cancelled listen gets no response");
    for v in &seen {
        if v["method"]
            .as_str()
            .is_some_and(|m| m.ends_with("list_changed") || m.ends_with("updated") || m.ends_with("acknowledged"))
        {
            assert!(sub_id(v) == "L1" || *sub_id(v) == json!(2), "every listen notification is tagged: {v}");
        }
    }
}

fn initialize(id: i64, caps: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "initialize", "params": { "protocolVersion": "2025-11-25",
        "capabilities": caps, "clientInfo": { "name": "stdio-test", "version": "1" } } })
}

fn legacy_call(id: i64, tool: &str, args: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "name": tool, "arguments": args } })
}

#[tokio::test]
async fn an_unknown_first_message_is_answered_and_initialize_after_discover_switches_to_legacy() {
    let mut p = Proc::spawn().await;
    p.send(&json!({ "jsonrpc": "2.0", "id": 1, "method": "bogus/thing" })).await;
    assert!(p.response(json!(1)).await.get("error").is_some(), "answered, not fatal");
    // A dual-era client probes with discover and sends initialize before the reply.
    p.send(&req(2, "server/discover", json!({}))).await;
    p.legacy = true;
    p.send(&initialize(3, json!({}))).await;
    let discover = p.response(json!(2)).await;
    assert_eq!(discover["result"]["supportedVersions"], json!(common::SERVED));
    let init = p.response(json!(3)).await;
    legacy_common::assert_schema("InitializeResult", &init["result"]);
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    p.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })).await;
    p.send(&json!({ "jsonrpc": "2.0", "id": 4, "method": "ping" })).await;
    assert_eq!(p.response(json!(4)).await["result"], json!({}), "ping is exactly {{}}");
    p.send(&legacy_call(5, "echo", json!({ "text": "legacy" }))).await;
    let r = p.response(json!(5)).await;
    assert_eq!(r["result"]["content"][0]["text"], "legacy");
    assert!(r["result"].get("resultType").is_none() && r["result"].get("_meta").is_none(), "{r}");
    p.send(&initialize(6, json!({}))).await;
    assert_eq!(p.response(json!(6)).await["error"]["code"], -32600, "initialize twice");
    let (_, status, stderr) = p.finish().await;
    assert!(status.success(), "exit status {status}; stderr: {stderr}");
}

#[tokio::test]
async fn a_legacy_process_sends_real_requests_to_the_client_and_finishes_reads_at_eof() {
    let mut p = Proc::spawn().await;
    p.legacy = true;
    p.send(&initialize(1, json!({ "elicitation": {} }))).await;
    p.response(json!(1)).await;
    p.send(&legacy_call(2, "ask", json!({}))).await;
    let ask = p.wait_for("elicitation/create", |v| v["method"] == "elicitation/create").await;
    legacy_common::assert_schema("ElicitRequest", &ask);
    let answer =
        json!({ "jsonrpc": "2.0", "id": ask["id"], "result": { "action": "accept", "content": { "name": "Ada" } } });
    p.send(&answer).await;
    assert_eq!(p.response(json!(2)).await["result"]["content"][0]["text"], "Hello, Ada!");
    // End of input right after a request: the request read still gets its answer.
    p.send(&legacy_call(3, "nap", json!({}))).await;
    let (seen, status, stderr) = p.finish().await;
    assert!(status.success(), "exit status {status}; stderr: {stderr}");
    let nap = seen.iter().find(|v| v["id"] == 3).expect("the nap answered after end of input");
    assert_eq!(nap["result"]["content"][0]["text"], "rested");
}
