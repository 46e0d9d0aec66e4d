//! Issue 34, client finding 5: no refresh storm. A server that refuses every
//! other request makes the client refresh at most once: a 401 on a token it
//! obtained moments ago is a refusal. `pollInterval: 0` and an event stream
//! reconnecting at `retry: 0` are held to the client's floors.

use crate::hostile_support::oauth::{bearer, challenge, discovery, form, json_reply};
use crate::hostile_support::{Reply, Req, cli_in, config_dir, discover, hostile_http, tools};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// What the hostile authorization server counted.
#[derive(Default)]
struct Counts {
    /// `grant_type=refresh_token` requests.
    refreshes: AtomicUsize,
    /// Every token request (the login's grant included).
    grants: AtomicUsize,
    /// Metadata documents fetched.
    discoveries: AtomicUsize,
}

/// The discovery documents, and a token endpoint that issues `at-N` and
/// `rt-N` (rotated), valid for an hour.
fn authorization_server(req: &Req, counts: &Counts) -> Option<Reply> {
    issuing(req, counts, 3600)
}

/// [`authorization_server`] with tokens valid for `expires_in` seconds.
fn issuing(req: &Req, counts: &Counts, expires_in: u64) -> Option<Reply> {
    if let Some(r) = discovery(req) {
        if req.method == "GET" {
            counts.discoveries.fetch_add(1, Ordering::SeqCst);
        }
        return Some(r);
    }
    if req.path() != "/token" {
        return None;
    }
    if form(req).get("grant_type").map(String::as_str) == Some("refresh_token") {
        counts.refreshes.fetch_add(1, Ordering::SeqCst);
    }
    let n = counts.grants.fetch_add(1, Ordering::SeqCst) + 1;
    Some(json_reply(json!({ "access_token": format!("at-{n}"), "refresh_token": format!("rt-{n}"),
                            "token_type": "Bearer", "expires_in": expires_in })))
}

fn authorized(req: &Req) -> bool {
    bearer(req).is_some_and(|t| t.starts_with("at-"))
}

/// A 401 as a server gives a token it will not take.
fn refused(req: &Req) -> Reply {
    challenge(&req.origin, ", error=\"invalid_token\"")
}

/// Logs in with client credentials (tokens `at-1`/`rt-1` stored) in a fresh directory.
async fn logged_in(url: &str) -> std::path::PathBuf {
    let dir = config_dir("storm");
    let args = ["login", url, "--client-credentials", "--client-id", "svc", "--client-secret", "s"];
    let o = cli_in(&dir, &args, &[], Duration::from_secs(30)).await.expect("login exits");
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    dir
}

/// A modern task polled at `pollIntervalMs: 0` (its status message new
/// each time, so no back-off), every other `tasks/get` refused; the task
/// would complete after 200 polls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn polling_a_server_that_refuses_every_other_request_refreshes_at_most_once() {
    let counts = Arc::new(Counts::default());
    let polls = Arc::new(AtomicUsize::new(0));
    let (c, p) = (counts.clone(), polls.clone());
    let h = hostile_http(move |req| {
        if let Some(r) = authorization_server(req, &c) {
            return r;
        }
        if !authorized(req) {
            return refused(req);
        }
        let task = |status: &str, result_type: &str, n: usize| {
            let mut t = json!({ "taskId": "t-1", "status": status, "statusMessage": format!("poll {n}"),
                    "createdAt": "2026-08-01T10:30:00Z",
                    "lastUpdatedAt": "2026-08-01T10:30:00Z", "ttlMs": null, "pollIntervalMs": 0,
                    "resultType": result_type });
            if status == "completed" {
                t["result"] = json!({ "content": [{ "type": "text", "text": "done" }] });
            }
            t
        };
        match req.json["method"].as_str().unwrap_or_default() {
            "server/discover" => Reply::Result(discover()),
            "tools/list" => Reply::Result(tools(json!([{ "name": "t", "inputSchema": { "type": "object" } }]))),
            "tools/call" => Reply::Result(task("working", "task", 0)),
            "tasks/get" => match p.fetch_add(1, Ordering::SeqCst) + 1 {
                n if n % 2 == 1 => refused(req),
                n if n >= 200 => Reply::Result(task("completed", "complete", n)),
                n => Reply::Result(task("working", "complete", n)),
            },
            _ => Reply::Result(json!({ "resultType": "complete" })),
        }
    })
    .await;
    let dir = logged_in(&h.url).await;
    let o = cli_in(&dir, &["call", &h.url, "t"], &[], Duration::from_secs(60)).await.expect("call exits");
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    let refreshes = counts.refreshes.load(Ordering::SeqCst);
    assert!(refreshes <= 1, "{refreshes} refreshes over {} polls: {stderr}", polls.load(Ordering::SeqCst));
    assert!(
        counts.discoveries.load(Ordering::SeqCst) <= 6,
        "{} metadata fetches",
        counts.discoveries.load(Ordering::SeqCst)
    );
    eprintln!(
        "measured: {refreshes} refresh(es), {} metadata fetches, {} polls",
        counts.discoveries.load(Ordering::SeqCst),
        polls.load(Ordering::SeqCst)
    );
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("not authorized (HTTP 401)"), "{stderr}");
    std::fs::remove_dir_all(&dir).ok();
}

/// A legacy session whose event stream (GET) closes at once with
/// `retry: 0` and is refused every other time, while a task is polled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_event_stream_reconnecting_at_retry_0_refreshes_at_most_once() {
    let counts = Arc::new(Counts::default());
    let (gets, polls) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let polled_at = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (c, g, p, at) = (counts.clone(), gets.clone(), polls.clone(), polled_at.clone());
    let h = hostile_http(move |req| {
        if let Some(r) = authorization_server(req, &c) {
            return r;
        }
        if !authorized(req) {
            return refused(req);
        }
        if req.method == "GET" {
            return match g.fetch_add(1, Ordering::SeqCst) + 1 {
                n if n % 2 == 0 => refused(req),
                n => Reply::Sse { body: format!("id: g{n}\nretry: 0\ndata: \n\n"), hang: false },
            };
        }
        let task = |status: &str, n: usize| {
            json!({ "taskId": "t-1", "status": status, "statusMessage": format!("poll {n}"),
                    "createdAt": "2026-08-01T10:30:00Z", "lastUpdatedAt": "2026-08-01T10:30:00Z",
                    "ttl": null, "pollInterval": 0 })
        };
        match req.json["method"].as_str().unwrap_or_default() {
            "server/discover" => Reply::Body(json!({ "jsonrpc": "2.0", "id": req.json["id"],
                "error": { "code": -32601, "message": "Method not found" } })),
            "initialize" => Reply::Result(json!({ "protocolVersion": "2025-11-25",
                "capabilities": { "tools": {}, "tasks": { "requests": { "tools": { "call": {} } } } },
                "serverInfo": { "name": "hostile", "version": "1" } })),
            "notifications/initialized" => Reply::Status(202),
            "tools/list" => Reply::Result(json!({ "tools": [{ "name": "t", "inputSchema": { "type": "object" },
                "execution": { "taskSupport": "optional" } }] })),
            "tools/call" => Reply::Result(json!({ "task": task("working", 0) })),
            "tasks/get" => {
                at.lock().unwrap().push(std::time::Instant::now());
                let n = p.fetch_add(1, Ordering::SeqCst) + 1;
                let done = n >= 30 || g.load(Ordering::SeqCst) >= 40;
                Reply::Result(task(if done { "completed" } else { "working" }, n))
            }
            "tasks/result" => Reply::Result(json!({ "content": [{ "type": "text", "text": "done" }] })),
            _ => Reply::Result(json!({})),
        }
    })
    .await;
    let dir = logged_in(&h.url).await;
    let o = cli_in(&dir, &["call", &h.url, "t"], &[], Duration::from_secs(60)).await.expect("call exits");
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    let refreshes = counts.refreshes.load(Ordering::SeqCst);
    let (gets, polls) = (gets.load(Ordering::SeqCst), polls.load(Ordering::SeqCst));
    assert!(refreshes <= 1, "{refreshes} refreshes, {gets} GETs, {polls} polls: {stderr}");
    assert!(gets <= 6, "{gets} GETs in {polls} polls: the stream reconnected at retry 0");
    // `pollInterval: 0` is held to the client's floor (100 ms; the status message changes every
    // time, so there is no back-off on top).
    let at = polled_at.lock().unwrap().clone();
    let fastest = at.windows(2).map(|w| w[1] - w[0]).min().unwrap();
    assert!(fastest >= Duration::from_millis(80), "polled {fastest:?} apart");
    eprintln!("measured: {refreshes} refresh(es), {gets} GETs, {polls} polls, fastest {fastest:?} apart");
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "done");
    std::fs::remove_dir_all(&dir).ok();
}

/// Tokens that expire five seconds after they are issued (inside the 30 s
/// margin at once): renewed before use at most once per 10 s, not before
/// every request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_that_expire_at_once_are_not_refreshed_before_every_request() {
    let counts = Arc::new(Counts::default());
    let polls = Arc::new(AtomicUsize::new(0));
    let (c, p) = (counts.clone(), polls.clone());
    let h = hostile_http(move |req| {
        if let Some(r) = issuing(req, &c, 5) {
            return r;
        }
        if !authorized(req) {
            return refused(req);
        }
        let task = |status: &str, n: usize| {
            let mut t = json!({ "taskId": "t-1", "status": status, "statusMessage": format!("poll {n}"),
                    "createdAt": "2026-08-01T10:30:00Z", "lastUpdatedAt": "2026-08-01T10:30:00Z",
                    "ttlMs": null, "pollIntervalMs": 0, "resultType": if n == 0 { "task" } else { "complete" } });
            if status == "completed" {
                t["result"] = json!({ "content": [{ "type": "text", "text": "done" }] });
            }
            t
        };
        match req.json["method"].as_str().unwrap_or_default() {
            "server/discover" => Reply::Result(discover()),
            "tools/list" => Reply::Result(tools(json!([{ "name": "t", "inputSchema": { "type": "object" } }]))),
            "tools/call" => Reply::Result(task("working", 0)),
            "tasks/get" => match p.fetch_add(1, Ordering::SeqCst) + 1 {
                n if n >= 20 => Reply::Result(task("completed", n)),
                n => Reply::Result(task("working", n)),
            },
            _ => Reply::Result(json!({ "resultType": "complete" })),
        }
    })
    .await;
    let dir = logged_in(&h.url).await;
    let o = cli_in(&dir, &["call", &h.url, "t"], &[], Duration::from_secs(60)).await.expect("call exits");
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    let refreshes = counts.refreshes.load(Ordering::SeqCst);
    eprintln!("measured: {refreshes} refresh(es) over {} polls", polls.load(Ordering::SeqCst));
    assert!(refreshes <= 1, "{refreshes} refreshes over {} polls", polls.load(Ordering::SeqCst));
    std::fs::remove_dir_all(&dir).ok();
}
