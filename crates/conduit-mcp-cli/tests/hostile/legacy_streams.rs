//! Issue 34, client finding 1: a `2025-11-25` server that ends a response
//! stream without the answer gets one `error:` line at once (after resuming
//! with `Last-Event-ID` where the stream named an event id), never a hang,
//! and `--timeout` holds for the resumption too.

use crate::hostile_support::{Reply, Req, cli_in, hostile_http};
use serde_json::json;
use std::time::Duration;

/// A legacy server: no `server/discover`, an `initialize` handshake, no
/// stand-alone GET stream (405); `tools/call` and every resuming GET (one
/// with `Last-Event-ID`) are answered by `call`.
fn legacy(req: &Req, call: &dyn Fn(&Req) -> Reply) -> Reply {
    if req.method == "GET" {
        return if req.header("last-event-id").is_some() { call(req) } else { Reply::Status(405) };
    }
    match req.json["method"].as_str().unwrap_or_default() {
        "server/discover" => Reply::Body(json!({ "jsonrpc": "2.0", "id": req.json["id"],
            "error": { "code": -32601, "message": "Method not found" } })),
        "initialize" => Reply::Result(json!({ "protocolVersion": "2025-11-25",
            "capabilities": { "tools": {} }, "serverInfo": { "name": "hostile", "version": "1" } })),
        "notifications/initialized" => Reply::Status(202),
        "tools/list" => Reply::Result(json!({ "tools": [{ "name": "t", "inputSchema": { "type": "object" } }] })),
        _ => call(req),
    }
}

/// `conduit-mcp call URL t --timeout 3` against a legacy server whose
/// `tools/call` (and resumption) `call` answers; at most 20 s.
async fn call_legacy(call: impl Fn(&Req) -> Reply + Send + Sync + 'static) -> (std::process::Output, Vec<String>) {
    let h = hostile_http(move |req| legacy(req, &call)).await;
    let dir = crate::hostile_support::config_dir("legacy");
    let o = cli_in(&dir, &["call", &h.url, "t", "--timeout", "3"], &[], Duration::from_secs(20)).await;
    let o = o.expect("conduit-mcp was still running after 20 s: the call hangs");
    let resumed = h
        .requests()
        .into_iter()
        .filter_map(|s| s.head.lines().find_map(|l| l.strip_prefix("last-event-id: ").map(str::to_owned)))
        .collect();
    (o, resumed)
}

fn one_error(o: &std::process::Output) -> String {
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    errors[0].to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_stream_that_ends_without_the_answer_is_one_error() {
    // An event over the 16 MiB cap (two data lines of 9 MiB), the stream then left open.
    let big = "x".repeat(9 << 20);
    let (o, _) = call_legacy(move |_| Reply::Sse { body: format!("data: {big}\ndata: {big}\n\n"), hang: true }).await;
    assert!(one_error(&o).contains("larger than the limit of 16777216 bytes"), "{}", one_error(&o));

    // Closed before the answer, no event id: nothing to resume.
    let (o, resumed) = call_legacy(|_| Reply::Sse { body: ": hello\n\n".into(), hang: false }).await;
    assert!(one_error(&o).contains("closed the stream before answering tools/call"), "{}", one_error(&o));
    assert!(resumed.is_empty(), "{resumed:?}");

    // A garbage event, then closed.
    let (o, _) = call_legacy(|_| Reply::Sse { body: "data: {not json\n\n".into(), hang: false }).await;
    let e = one_error(&o);
    assert!(e.contains("unreadable event") && e.contains("(answering tools/call)"), "{e}");

    // Closed after an event id: resumed once with Last-Event-ID; the resumed stream ends empty.
    let (o, resumed) = call_legacy(|req| match req.method.as_str() {
        "GET" => Reply::Sse { body: String::new(), hang: false },
        _ => Reply::Sse { body: "id: e1\nretry: 0\ndata: \n\n".into(), hang: false },
    })
    .await;
    let e = one_error(&o);
    assert!(e.contains("Last-Event-ID e1") && e.contains("tools/call"), "{e}");
    assert_eq!(resumed, ["e1"]);

    // The resuming GET never answers: --timeout holds.
    let (o, resumed) = call_legacy(|req| match req.method.as_str() {
        "GET" => Reply::Hang,
        _ => Reply::Sse { body: "id: e1\nretry: 0\ndata: \n\n".into(), hang: false },
    })
    .await;
    assert!(one_error(&o).contains("did not answer within 3 s"), "{}", one_error(&o));
    assert_eq!(resumed, ["e1"]);

    // The resumed stream carries the answer: the call completes.
    let pending = std::sync::Arc::new(std::sync::Mutex::new(serde_json::Value::Null));
    let (o, resumed) = call_legacy(move |req| match req.method.as_str() {
        "GET" => {
            let id = pending.lock().unwrap().clone();
            let answer =
                json!({ "jsonrpc": "2.0", "id": id, "result": { "content": [{ "type": "text", "text": "resumed" }] } });
            Reply::Sse { body: format!("id: e2\ndata: \n\nid: e3\ndata: {answer}\n\n"), hang: true }
        }
        _ => {
            *pending.lock().unwrap() = req.json["id"].clone();
            Reply::Sse { body: "id: e1\nretry: 0\ndata: \n\n".into(), hang: false }
        }
    })
    .await;
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "resumed");
    assert_eq!(resumed, ["e1"]);
}
