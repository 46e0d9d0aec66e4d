//! Malformed input over a real socket: each row gets its status and JSON-RPC code,
//! and after every row the same server still answers `server/discover`.

use crate::common;

use common::*;
use conduit_mcp::prelude::*;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};

struct Row {
    name: &'static str,
    body: Vec<u8>,
    headers: HeaderMap,
    status: u16,
    code: i64,
    /// The id the error must echo (`Null`: the id could not be read, so none is sent).
    id: Value,
}

fn headers(method: &str) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert("content-type", HeaderValue::from_static("application/json"));
    h.insert("accept", HeaderValue::from_static("application/json, text/event-stream"));
    h.insert("mcp-protocol-version", HeaderValue::from_static(V));
    h.insert("mcp-method", HeaderValue::from_str(method).expect("ascii"));
    h
}

fn row(name: &'static str, body: impl Into<Vec<u8>>, method: &str, status: u16, code: i64, id: Value) -> Row {
    Row { name, body: body.into(), headers: headers(method), status, code, id }
}

fn json_row(name: &'static str, body: Value, status: u16, code: i64, id: Value) -> Row {
    let std = std_headers(&body);
    Row { name, body: body.to_string().into_bytes(), headers: std, status, code, id }
}

fn rows() -> Vec<Row> {
    let discover = req(1, "server/discover", json!({})).to_string();
    let mut deep = String::new();
    for _ in 0..1000 {
        deep.push('[');
    }
    for _ in 0..1000 {
        deep.push(']');
    }
    let nested = format!(
        r#"{{"jsonrpc":"2.0","id":"deep","method":"server/discover","params":{{"_meta":{},"x":{deep}}}}}"#,
        meta()
    );
    let huge_text = "x".repeat(5 * 1024 * 1024);
    let huge = call("huge", "echo", json!({ "text": huge_text })).to_string();
    let mut bad_utf8 = br#"{"jsonrpc":"2.0","id":"utf8","method":"server/discover","params":{"x":""#.to_vec();
    bad_utf8.extend_from_slice(b"\xff\xfe");
    bad_utf8.extend_from_slice(br#""}}"#);

    let mut text_plain = row("non-JSON content type", discover.clone(), "server/discover", 400, -32700, Value::Null);
    text_plain.headers.insert("content-type", HeaderValue::from_static("text/plain"));
    let mut no_content_type = row("no content type", discover.clone(), "server/discover", 400, -32700, Value::Null);
    no_content_type.headers.remove("content-type");

    // serde_json gives this member name a meaning of its own (raw JSON text) when it comes
    // first in an object, and a stored, re-read copy puts it first: refused at the door.
    let mut reserved_name = row(
        "a member name serde_json reserves",
        format!(
            r#"{{"jsonrpc":"2.0","id":"rv","method":"tools/call","params":{{"_meta":{},"name":"echo","arguments":{{"text":"x","y":{{"n":"","$serde_json::private::RawValue":{{}}}}}}}}}}"#,
            meta()
        ),
        "tools/call",
        200,
        -32602,
        json!("rv"),
    );
    reserved_name.headers.insert("mcp-name", HeaderValue::from_static("echo"));

    vec![
        row("invalid JSON", r#"{"jsonrpc":"2.0","id":1,"method":"#, "server/discover", 400, -32700, Value::Null),
        row("empty body", "", "server/discover", 400, -32700, Value::Null),
        row("batch array", format!("[{discover}]"), "server/discover", 400, -32600, Value::Null),
        row("empty batch", "[]", "server/discover", 400, -32600, Value::Null),
        row("JSON scalar", "42", "server/discover", 400, -32600, Value::Null),
        row("response object", r#"{"jsonrpc":"2.0","id":7,"result":{}}"#, "server/discover", 400, -32600, json!(7)),
        row(
            "error response object",
            r#"{"jsonrpc":"2.0","id":"e","error":{"code":1,"message":"x"}}"#,
            "server/discover",
            400,
            -32600,
            json!("e"),
        ),
        row(
            "missing jsonrpc",
            format!(r#"{{"id":8,"method":"server/discover","params":{{"_meta":{}}}}}"#, meta()),
            "server/discover",
            400,
            -32600,
            json!(8),
        ),
        row(
            "wrong jsonrpc version",
            format!(r#"{{"jsonrpc":"1.0","id":81,"method":"server/discover","params":{{"_meta":{}}}}}"#, meta()),
            "server/discover",
            400,
            -32600,
            json!(81),
        ),
        row(
            "missing method",
            r#"{"jsonrpc":"2.0","id":"nm","params":{}}"#,
            "server/discover",
            400,
            -32600,
            json!("nm"),
        ),
        row(
            "method not a string",
            r#"{"jsonrpc":"2.0","id":10,"method":5}"#,
            "server/discover",
            400,
            -32600,
            json!(10),
        ),
        row(
            "id null",
            r#"{"jsonrpc":"2.0","id":null,"method":"server/discover","params":{}}"#,
            "server/discover",
            400,
            -32600,
            Value::Null,
        ),
        row(
            "id an object",
            r#"{"jsonrpc":"2.0","id":{},"method":"server/discover","params":{}}"#,
            "server/discover",
            400,
            -32600,
            Value::Null,
        ),
        row("5 MiB body", huge, "tools/call", 413, -32600, Value::Null),
        text_plain,
        no_content_type,
        row("1000-deep nesting", nested, "server/discover", 400, -32700, Value::Null),
        row("invalid UTF-8", bad_utf8, "server/discover", 400, -32700, Value::Null),
        json_row("unknown method", req("u", "no/such", json!({})), 404, -32601, json!("u")),
        json_row(
            "tools/call name is a number",
            req("n", "tools/call", json!({ "name": 5, "arguments": {} })),
            200,
            -32602,
            json!("n"),
        ),
        json_row(
            "tools/call arguments is an array",
            req("a", "tools/call", json!({ "name": "echo", "arguments": ["x"] })),
            200,
            -32602,
            json!("a"),
        ),
        json_row(
            "tools/call without name",
            req("nn", "tools/call", json!({ "arguments": {} })),
            200,
            -32602,
            json!("nn"),
        ),
        json_row(
            "params is an array",
            json!({ "jsonrpc": "2.0", "id": "pa", "method": "tools/call", "params": [{ "name": "echo" }] }),
            400,
            -32602,
            json!("pa"),
        ),
        json_row(
            "params is a string",
            json!({ "jsonrpc": "2.0", "id": "ps", "method": "server/discover", "params": "x" }),
            400,
            -32600,
            json!("ps"),
        ),
        json_row(
            "_meta is not an object",
            json!({ "jsonrpc": "2.0", "id": "mo", "method": "server/discover", "params": { "_meta": [] } }),
            400,
            -32602,
            json!("mo"),
        ),
        json_row(
            "clientCapabilities is not an object",
            json!({ "jsonrpc": "2.0", "id": "cc", "method": "server/discover", "params": { "_meta": { PV: V, CC: true } } }),
            400,
            -32602,
            json!("cc"),
        ),
        json_row("listen without notifications", req("l", "subscriptions/listen", json!({})), 200, -32602, json!("l")),
        json_row("cursor is a number", req("cu", "tools/list", json!({ "cursor": 3 })), 200, -32602, json!("cu")),
        reserved_name,
        row(
            "integer id beyond 64 bits",
            format!(
                r#"{{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"server/discover","params":{{"_meta":{}}}}}"#,
                meta()
            ),
            "server/discover",
            400,
            -32600,
            Value::Null,
        ),
    ]
}

#[tokio::test]
async fn malformed_requests_are_rejected_and_the_server_keeps_serving() {
    let server = Server::builder("bad-input", "1.0.0").tool(echo_tool()).build().expect("valid server");
    let h = start(server).await;
    h.assert_alive().await;
    for row in rows() {
        let r = h.send_raw(row.body, row.headers).await;
        assert_eq!(r.status.as_u16(), row.status, "{}: status; body {}", row.name, r.text);
        assert_eq!(r.content_type(), "application/json", "{}: content type", row.name);
        assert_eq!(r.body["jsonrpc"], "2.0", "{}: body {}", row.name, r.text);
        assert_eq!(r.code(), Some(row.code), "{}: code; body {}", row.name, r.text);
        assert!(r.body.get("result").is_none(), "{}: no result", row.name);
        match &row.id {
            Value::Null => {
                assert!(r.body.get("id").is_none_or(Value::is_null), "{}: no id to echo; body {}", row.name, r.text)
            }
            id => assert_eq!(&r.body["id"], id, "{}: id echoed; body {}", row.name, r.text),
        }
        h.assert_alive().await;
    }
}

/// One bad legacy (2025-11-25) input: who sends it, how, and what comes back.
struct LegacyRow {
    name: &'static str,
    method: reqwest::Method,
    /// (header, value) pairs beyond Content-Type and Accept.
    headers: Vec<(&'static str, String)>,
    body: Option<Value>,
    status: u16,
    /// The JSON-RPC code of the error body (`None`: no body expected).
    code: Option<i64>,
}

fn lrow(
    name: &'static str,
    method: reqwest::Method,
    headers: Vec<(&'static str, String)>,
    body: Option<Value>,
    status: u16,
    code: Option<i64>,
) -> LegacyRow {
    LegacyRow { name, method, headers, body, status, code }
}

#[tokio::test]
async fn legacy_bad_input_is_rejected_and_the_server_keeps_serving() {
    use conduit_mcp::auth::{BearerTokens, Principal};
    use conduit_mcp::ext::tasks::TasksConfig;
    use conduit_mcp::ext::tasks::legacy_store::LegacyTasks;
    use reqwest::Method;

    let legacy = LegacyTasks::new(TasksConfig::enabled()).expect("valid config");
    let job = Tool::new("job", "A task that finishes at once")
        .task_support(TaskSupport::Optional)
        .handle(|_ctx, _args| async { Ok(TaskSpec::new().spawn(|_t| async { Ok(CallToolResult::text("done")) })) });
    let server =
        Server::builder("bad-input", "1.0.0").tool(echo_tool()).tool(job).extension(legacy).build().expect("valid");
    let tokens = BearerTokens::new().token("alice", Principal::new("alice")).token("bob", Principal::new("bob"));
    let h = start_with(server, HttpConfig::default().auth(tokens)).await;
    let post = |token: &str, sid: Option<&str>, body: &Value| {
        let mut rb = h
            .client
            .post(&h.url)
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .header("authorization", format!("Bearer {token}"))
            .body(body.to_string());
        if let Some(s) = sid {
            rb = rb.header("mcp-session-id", s).header("mcp-protocol-version", "2025-11-25");
        }
        rb
    };
    let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } } });
    let open = |token: &'static str| {
        let rb = post(token, None, &init);
        async move {
            let r = rb.send().await.expect("sent");
            r.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(String::from).expect("a session")
        }
    };
    let alice = guard("alice's session", open("alice")).await;
    let bob = guard("bob's session", open("bob")).await;
    let create = post(
        "alice",
        Some(&alice),
        &json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": "job", "task": {} } }),
    );
    let task =
        guard("the task", async { create.send().await.expect("sent").json::<Value>().await.expect("JSON") }).await;
    let task_id = task["result"]["task"]["taskId"].as_str().expect("a legacy task").to_owned();
    let in_session = |sid: &str, token: &str| {
        vec![
            ("mcp-session-id", sid.to_owned()),
            ("mcp-protocol-version", "2025-11-25".to_owned()),
            ("authorization", format!("Bearer {token}")),
        ]
    };
    let bearer = |token: &str| vec![("authorization", format!("Bearer {token}"))];
    let rpc = |id: &str, method: &str, params: Value| json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
    let rows = vec![
        lrow(
            "initialize twice in a session",
            Method::POST,
            in_session(&alice, "alice"),
            Some(init.clone()),
            400,
            Some(-32600),
        ),
        lrow(
            "a session id of another principal",
            Method::POST,
            in_session(&alice, "bob"),
            Some(rpc("p", "ping", json!({}))),
            404,
            Some(-32001),
        ),
        lrow(
            "an unknown session id",
            Method::POST,
            in_session("nope", "alice"),
            Some(rpc("p", "ping", json!({}))),
            404,
            Some(-32001),
        ),
        lrow("GET without a session", Method::GET, bearer("alice"), None, 405, None),
        lrow(
            "DELETE of another principal's session",
            Method::DELETE,
            in_session(&alice, "bob"),
            None,
            404,
            Some(-32001),
        ),
        lrow(
            "a response nobody waits on",
            Method::POST,
            in_session(&alice, "alice"),
            Some(json!({ "jsonrpc": "2.0", "id": "ghost", "result": {} })),
            400,
            Some(-32600),
        ),
        lrow(
            "tasks/result for a foreign task",
            Method::POST,
            in_session(&bob, "bob"),
            Some(rpc("r", "tasks/result", json!({ "taskId": task_id }))),
            200,
            Some(-32602),
        ),
        lrow(
            "tasks/get for a foreign task",
            Method::POST,
            in_session(&bob, "bob"),
            Some(rpc("g", "tasks/get", json!({ "taskId": task_id }))),
            200,
            Some(-32602),
        ),
        lrow(
            "a tampered tasks/list cursor",
            Method::POST,
            in_session(&alice, "alice"),
            Some(rpc("c", "tasks/list", json!({ "cursor": "eyJ0YW1wZXJlZCI6dHJ1ZX0" }))),
            200,
            Some(-32602),
        ),
        lrow(
            "a 2026 _meta inside a legacy session",
            Method::POST,
            in_session(&alice, "alice"),
            Some(rpc("m", "tools/list", json!({ "_meta": { PV: V, CC: {} } }))),
            400,
            Some(-32600),
        ),
        lrow(
            "a legacy version header on a modern request",
            Method::POST,
            vec![
                ("mcp-protocol-version", "2025-11-25".into()),
                ("mcp-method", "server/discover".into()),
                ("authorization", "Bearer alice".into()),
            ],
            Some(req("h", "server/discover", json!({}))),
            400,
            Some(-32020),
        ),
        lrow(
            "a legacy request without a session",
            Method::POST,
            vec![("mcp-protocol-version", "2025-11-25".into()), ("authorization", "Bearer alice".into())],
            Some(rpc("n", "tools/list", json!({}))),
            400,
            Some(-32600),
        ),
        lrow(
            "an unsupported version header inside a session",
            Method::POST,
            vec![
                ("mcp-session-id", alice.clone()),
                ("mcp-protocol-version", "1999-01-01".into()),
                ("authorization", "Bearer alice".into()),
            ],
            Some(rpc("v", "ping", json!({}))),
            400,
            Some(-32600),
        ),
    ];
    for row in rows {
        let mut rb = h
            .client
            .request(row.method.clone(), &h.url)
            .header("content-type", "application/json")
            .header("accept", "application/json");
        for (k, v) in &row.headers {
            rb = rb.header(*k, v);
        }
        if let Some(b) = &row.body {
            rb = rb.body(b.to_string());
        }
        let r = guard(row.name, rb.send()).await.expect("sent");
        let status = r.status().as_u16();
        let text = r.text().await.unwrap_or_default();
        assert_eq!(status, row.status, "{}: status; body {text}", row.name);
        if let Some(code) = row.code {
            let body: Value =
                serde_json::from_str(&text).unwrap_or_else(|_| panic!("{}: a JSON body: {text}", row.name));
            assert_eq!(body["error"]["code"], code, "{}: code; body {text}", row.name);
            assert!(!text.contains(&task_id) && !text.contains(&alice), "{}: nothing leaks: {text}", row.name);
        }
        // The server keeps serving both eras, and alice's session too.
        let discover = req("alive", "server/discover", json!({}));
        h.send_with(&discover, |hd| set(hd, "authorization", "Bearer alice")).await.assert_ok(&json!("alive"));
        let ping = post("alice", Some(&alice), &json!({ "jsonrpc": "2.0", "id": "alive", "method": "ping" }));
        let pong: Value = ping.send().await.expect("sent").json().await.expect("JSON");
        assert_eq!(pong["result"], json!({}), "after {}: {pong}", row.name);
    }
}

#[tokio::test]
async fn integer_ids_above_i64_max_are_echoed_exactly() {
    let server = Server::builder("bad-input", "1.0.0").tool(echo_tool()).build().expect("valid server");
    let h = start(server).await;
    for id in ["9223372036854775808", "18446744073709551615", "-9223372036854775808"] {
        let body =
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"server/discover","params":{{"_meta":{}}}}}"#, meta());
        let r = h.send_raw(body.into_bytes(), headers("server/discover")).await;
        assert_eq!(r.status.as_u16(), 200, "{id}: {}", r.text);
        assert!(
            r.text.contains(&format!(r#""id":{id},"#)) || r.text.contains(&format!(r#""id":{id}}}"#)),
            "{id}: {}",
            r.text
        );
        assert!(r.body.get("result").is_some(), "{id}: {}", r.text);
    }
}

/// A guard row: name, `Host` lines, other header lines, the status.
type GuardCase = (&'static str, &'static [&'static str], &'static [(&'static str, &'static str)], u16);

/// A raw request whose `Host` lines are exactly `hosts`, with these other header lines.
fn guard_head(hosts: &[&str], extra: &[(&str, &str)], body: &str) -> Vec<u8> {
    let mut head = String::from("POST /mcp HTTP/1.1\r\n");
    for h in hosts {
        head.push_str(&format!("Host: {h}\r\n"));
    }
    for (k, v) in [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", V),
        ("Mcp-Method", "server/discover"),
        ("Connection", "close"),
    ]
    .iter()
    .chain(extra)
    {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    head.into_bytes()
}

#[tokio::test]
async fn the_host_and_origin_guard_refuses_what_it_cannot_trust() {
    let server = Server::builder("bad-input", "1.0.0").tool(echo_tool()).build().expect("valid server");
    let h = start(server).await;
    let body = req("g", "server/discover", json!({})).to_string();
    let cases: &[GuardCase] = &[
        ("two Host headers", &["localhost", "evil.example"], &[], 400),
        ("two Host headers, both local", &["localhost", "127.0.0.1"], &[], 400),
        ("Host with a non-numeric port", &["localhost:evil"], &[], 403),
        ("Host with a port and a suffix", &["localhost:80.evil.example"], &[], 403),
        ("Origin with a port and a suffix", &["localhost"], &[("Origin", "http://localhost:80.evil.example")], 403),
        ("Origin with a non-numeric port", &["localhost"], &[("Origin", "http://localhost:evil")], 403),
        (
            "two Origin headers",
            &["localhost"],
            &[("Origin", "http://localhost"), ("Origin", "http://evil.example")],
            403,
        ),
        ("a local Host and Origin", &["localhost:8080"], &[("Origin", "http://localhost:8080")], 200),
        ("an IPv6 loopback Host", &["[::1]:8080"], &[], 200),
        // HTTP/1.1 requires Host (RFC 9112 §3.2); without one the guard has nothing to check.
        ("no Host header", &[], &[], 400),
        ("a fully qualified localhost", &["localhost."], &[], 200),
        ("a fully qualified localhost with a port", &["localhost.:8080"], &[("Origin", "http://localhost.:8080")], 200),
        ("a name of dots", &["localhost.."], &[], 403),
    ];
    for (name, hosts, extra, status) in cases {
        let r = h.raw_http(&guard_head(hosts, extra, &body), body.as_bytes()).await;
        assert_eq!(r.status, *status, "{name}: {}", r.head);
        if *status == 200 {
            assert_eq!(r.body["id"], "g", "{name}");
        }
        h.assert_alive().await;
    }
}
