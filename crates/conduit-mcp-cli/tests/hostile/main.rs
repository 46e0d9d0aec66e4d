//! The CLI against a hostile server (a real socket; the terminal through a
//! pseudo-terminal): one regression test per finding of the attack on the
//! client (issue 22).
//!
//! 1. escape sequences in server text never reach the terminal;
//! 2. an endless body, SSE line or stdio line stops at the size limit;
//! 3. a server that never answers is a timeout, one `error:` line;
//! 4. no roots are offered unless `--root` says so;
//! 5. a redirect to another origin is not followed (headers stay home);
//! 6. a task id that starts with `-` is taken back by `task` and `watch`.
//!
//! The client and CLI findings of issue 34 are in the modules below: legacy
//! response streams that end without the answer, suggested command lines
//! and the insecure-HTTP warning, and the login and token handling against
//! a hostile authorization server.

#[path = "../support/cli_support/mod.rs"]
pub mod cli_support;
#[path = "../support/hostile_support/mod.rs"]
pub mod hostile_support;

mod legacy_streams;
mod login;
mod refresh;
mod suggestions;

use cli_support::{BIN, run, test_ledger};
use hostile_support::{Reply, discover, hostile, tools};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Runs the CLI off the test's runtime threads.
async fn cli(args: &[&str]) -> std::process::Output {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    tokio::task::spawn_blocking(move || run(&args.iter().map(String::as_str).collect::<Vec<_>>())).await.unwrap()
}

const EVIL: &str = "\x1b]0;pwned-title\x07\x1b]52;c;ZWNobyBvd25lZA==\x07\x1b[2K\x1b[8mhidden\x1b[0m\u{202e}";

fn method(req: &Value) -> &str {
    req["method"].as_str().unwrap_or_default()
}

/// Finding 1: tool names, descriptions, results, errors and elicitation
/// forms are shown with their escape sequences escaped, terminal or not,
/// and a form shows the real names of the fields it sends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_text_cannot_drive_the_terminal() {
    let evil_tools = tools(json!([{ "name": format!("t{EVIL}"), "description": format!("desc {EVIL}"),
        "inputSchema": { "type": "object", "properties": { "p": { "type": "string", "description": EVIL } } } }]));
    let h = hostile(move |req, _| match method(req) {
        "server/discover" => Reply::Result(discover()),
        "tools/list" => Reply::Result(evil_tools.clone()),
        "tools/call" if req.pointer("/params/inputResponses").is_some() => {
            Reply::Result(json!({ "content": [{ "type": "text", "text": format!("result {EVIL}") }] }))
        }
        "tools/call" if req.pointer("/params/name") == Some(&json!("form")) => Reply::Result(json!({
            "resultType": "input_required",
            "inputRequests": { "k": { "method": "elicitation/create", "params": {
                "message": format!("Approve?\n✔ confirm * · yes{EVIL}"),
                "requestedSchema": { "type": "object", "properties": {
                    "wire_money": { "type": "boolean", "title": "Cancel" } } } } } } })),
        _ => Reply::Body(json!({ "jsonrpc": "2.0", "id": req["id"], "error": { "code": -32000, "message": format!("boom {EVIL}") } })),
    })
    .await;
    // Piped: nothing raw in stdout or stderr.
    for args in
        [vec!["tools", h.url.as_str()], vec!["call", h.url.as_str(), "other"], vec!["tools", h.url.as_str(), "--json"]]
    {
        let o = cli(&args).await;
        for b in o.stdout.iter().chain(o.stderr.iter()) {
            assert!(*b == b'\n' || *b >= 0x20, "control byte {b:#x} from {args:?}: {}{}", stdout(&o), stderr(&o));
        }
        assert!(!stdout(&o).contains('\u{202e}') && !stderr(&o).contains('\u{202e}'));
    }
    assert!(stdout(&cli(&["tools", &h.url]).await).contains("\\x1b]0;pwned-title\\x07"));
    // In a terminal: the form, the result; no OSC (title, clipboard), no hidden text.
    let url = h.url.clone();
    let raw = tokio::task::spawn_blocking(move || {
        let mut cmd = std::process::Command::new(BIN);
        cmd.args(["call", &url, "form"]).env("TERM", "xterm").env("CONDUIT_MCP_LEDGER", test_ledger());
        let opts = rexpect::reader::Options { timeout_ms: Some(20_000), strip_ansi_escape_codes: false };
        let mut p = rexpect::session::spawn_with_options(cmd, opts).expect("pty");
        let (before, _) = p.exp_regex("fill in the form").unwrap();
        p.send("\r").unwrap();
        p.flush().unwrap();
        let (label, _) = p.exp_regex(r"wire_money").unwrap();
        p.send("n").unwrap();
        p.flush().unwrap();
        let rest = p.exp_eof().unwrap();
        // The pty reader hands bytes over one char each: put the UTF-8 back together.
        let bytes: Vec<u8> = format!("{before}{label}wire_money{rest}").chars().map(|c| c as u8).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    })
    .await
    .unwrap();
    for bad in ["\x1b]", "\x1b[8m", "\x1b[2K\x1b[8m", "\u{202e}", "pwned-title\x07"] {
        assert!(!raw.contains(bad), "{bad:?} reached the terminal: {raw:?}");
    }
    assert!(raw.contains("\\x1b]52;c;"), "the clipboard write is shown escaped: {raw:?}");
    assert!(raw.contains("│ ✔ confirm * · yes"), "server text is quoted, not a prompt of ours: {raw:?}");
    assert!(raw.contains("Cancel [wire_money]"), "the field's real name is shown: {raw:?}");
    assert!(raw.contains("result \\x1b]0;pwned-title"), "{raw:?}");
}

/// Finding 2: an endless body, or an SSE line that never ends, stops at the
/// limit (16 MiB) instead of being read whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endless_answers_stop_at_the_size_limit() {
    let body =
        hostile(|_, _| Reply::Endless { content_type: "application/json", prefix: b"{\"a\":\"", fill: b'a' }).await;
    let o = cli(&["tools", &body.url]).await;
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("larger than the limit of 16777216 bytes"), "{}", stderr(&o));
    assert!(body.bytes_sent() < 64 << 20, "the client read on: {} bytes", body.bytes_sent());

    let sse = hostile(|req, _| match method(req) {
        "server/discover" => Reply::Result(discover()),
        _ => Reply::Endless { content_type: "text/event-stream", prefix: b"data: {\"x\":\"", fill: b'x' },
    })
    .await;
    let o = cli(&["tools", &sse.url]).await;
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("longer than the limit of 16777216 bytes"), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().filter(|l| l.starts_with("error:")).count(), 1, "{}", stderr(&o));
    assert!(sse.bytes_sent() < 64 << 20, "the client read on: {} bytes", sse.bytes_sent());
}

/// Finding 2 over stdio: a child that writes one line without end is
/// stopped at the limit (16 MiB) instead of being read whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_stdio_line_stops_at_the_size_limit() {
    let start = Instant::now();
    let o = cli(&["tools", "--stdio", "--", "sh", "-c", "yes | tr -d '\\n'"]).await;
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("a line longer than the limit of 16777216 bytes"), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().filter(|l| l.starts_with("error:")).count(), 1, "{}", stderr(&o));
    assert!(start.elapsed() < Duration::from_secs(30), "took {:?}", start.elapsed());
}

/// Finding 3: a server that accepts and never answers gets `--timeout`, and one error line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_server_times_out() {
    let h = hostile(|_, _| Reply::Hang).await;
    let start = Instant::now();
    let o = cli(&["tools", &h.url, "--timeout", "1"]).await;
    assert!(start.elapsed() < Duration::from_secs(15), "took {:?}", start.elapsed());
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stderr(&o).trim(), "error: connection: the server did not answer within 1 s", "{}", stderr(&o));
}

/// Finding 4: `roots/list` gets no directory unless the person offers one with `--root`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roots_are_offered_only_with_root() {
    let h = hostile(|req, _| match method(req) {
        "server/discover" => Reply::Result(discover()),
        "tools/list" => Reply::Result(tools(json!([{ "name": "t", "inputSchema": { "type": "object" } }]))),
        "tools/call" => match req.pointer("/params/inputResponses/r") {
            Some(answer) => Reply::Result(json!({ "content": [{ "type": "text", "text": answer.to_string() }] })),
            None => Reply::Result(json!({ "resultType": "input_required",
                "inputRequests": { "r": { "method": "roots/list", "params": {} } } })),
        },
        _ => Reply::Result(json!({})),
    })
    .await;
    // Without --root: roots are not declared, and a server asking anyway gets nothing.
    let o = cli(&["call", &h.url, "t"]).await;
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("roots/list that this client did not declare"), "{}", stderr(&o));
    let calls: Vec<Value> = h.requests().into_iter().map(|s| s.body).filter(|b| method(b) == "tools/call").collect();
    assert_eq!(calls.len(), 1, "no answer was sent: {calls:?}");
    let caps = &calls[0]["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"];
    assert!(caps.get("roots").is_none(), "roots declared without --root: {caps}");

    let dir = std::env::temp_dir().canonicalize().unwrap();
    let o = cli(&["call", &h.url, "t", "--no-input", "--root", dir.to_str().unwrap()]).await;
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let roots: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(roots["roots"], json!([{ "uri": format!("file://{}", dir.display()) }]));
}

/// Finding 5: a 307 to another origin is not followed, so the POST, its
/// headers, token and session never reach it; one on the same origin is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirects_never_leave_the_origin() {
    let elsewhere = hostile(|_, _| Reply::Result(discover())).await;
    let to = elsewhere.url.clone();
    let h = hostile(move |req, head| {
        if head.starts_with("post /moved") {
            return match method(req) {
                "server/discover" => Reply::Result(discover()),
                _ => Reply::Result(tools(json!([{ "name": "moved_ok", "inputSchema": { "type": "object" } }]))),
            };
        }
        if head.contains("x-where: here") { Reply::Redirect("/moved".into()) } else { Reply::Redirect(to.clone()) }
    })
    .await;
    let o = cli(&["tools", &h.url, "--header", "X-Secret: s3cret", "--token", "tok"]).await;
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("redirected the request (HTTP 307) to another origin (127.0.0.1); not followed"),
        "{}",
        stderr(&o)
    );
    assert!(elsewhere.requests().is_empty(), "the other origin got {:?}", elsewhere.requests());

    let o = cli(&["tools", &h.url, "--header", "X-Where: here"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("moved_ok"));
}

/// A token is never sent over plain http:// to a host that is not this
/// machine, unless `--allow-insecure-http` says so, which the CLI repeats.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_need_https_off_loopback() {
    let o = cli(&["tools", "http://example.invalid/mcp", "--token", "tok"]).await;
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("refusing to send a token over plain http:// to example.invalid"), "{}", stderr(&o));
    // Allowed only by name, and said out loud; the request is then made (and fails: no such host).
    let o = cli(&["tools", "http://example.invalid/mcp", "--token", "tok", "--allow-insecure-http"]).await;
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).starts_with("warning: --allow-insecure-http: credentials for http://example.invalid/mcp"));
    assert!(!stderr(&o).contains("refusing"), "{}", stderr(&o));
    assert!(!stderr(&cli(&["tools", "http://127.0.0.1:9/mcp", "--allow-insecure-http"]).await).contains("warning"));
}

/// Finding 6: an id the CLI printed is taken back, even one that starts with `-`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_ids_starting_with_a_dash_work() {
    let task = |status: &str| {
        json!({ "taskId": "-x8f_Q-dash", "status": status, "createdAt": "2026-08-01T10:30:00Z",
                "lastUpdatedAt": "2026-08-01T10:30:00Z", "ttlMs": null, "pollIntervalMs": 20 })
    };
    let h = hostile(move |req, _| match method(req) {
        "server/discover" => Reply::Result(json!({ "resultType": "complete", "supportedVersions": ["2026-07-28"],
            "ttlMs": 0, "cacheScope": "private", "capabilities": { "tools": {} } })),
        "tools/list" => Reply::Result(tools(json!([{ "name": "t", "inputSchema": { "type": "object" } }]))),
        "tools/call" => {
            let mut t = task("working");
            t["resultType"] = json!("task");
            Reply::Result(t)
        }
        "tasks/get" => {
            let mut t = task("completed");
            t["resultType"] = json!("complete");
            t["result"] = json!({ "content": [{ "type": "text", "text": "done" }] });
            Reply::Result(t)
        }
        _ => Reply::Result(json!({ "resultType": "complete" })),
    })
    .await;
    let o = cli(&["call", &h.url, "t", "--detach"]).await;
    assert_eq!(stdout(&o).trim(), "-x8f_Q-dash", "{}", stderr(&o));
    let id = stdout(&o).trim().to_owned();
    for args in [
        vec!["task", "get", &h.url, &id, "--timeout", "5"],
        vec!["task", "wait", &h.url, &id],
        vec!["task", "cancel", &h.url, &id],
        vec!["watch", &h.url, &id, "--json"],
    ] {
        let o = cli(&args).await;
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    }
    let ids: Vec<Value> = h.requests().into_iter().filter_map(|s| s.body.pointer("/params/taskId").cloned()).collect();
    assert!(ids.len() >= 4 && ids.iter().all(|i| i == "-x8f_Q-dash"), "{ids:?}");
}
