//! Rate limits per client (issue 20, "Rate limiting"), over real sockets on
//! `Bound::serve`: a request rate (`HttpConfig::request_rate`) and a
//! task-creation rate (`TasksConfig::create_rate`), each per principal or,
//! without authentication, per address; both eras. Past a rate: `-32000` with
//! `data.retryAfterMs`, and on a response of its own HTTP 429 with `Retry-After`.

use crate::common;
use crate::legacy_common;

use common::*;
use conduit_mcp::auth::{BearerTokens, Principal};
use conduit_mcp::ext::tasks::legacy_store::LegacyTasks;
use conduit_mcp::ext::tasks::{Tasks, TasksConfig};
use conduit_mcp::prelude::*;
use conduit_mcp::quota::RateLimit;
use legacy_common::Legacy;
use serde_json::{Value, json};
use std::net::IpAddr;

const TASKS: &str = "io.modelcontextprotocol/tasks";

fn from(n: u8) -> reqwest::Client {
    reqwest::Client::builder().local_address(IpAddr::from([127, 0, 0, n])).build().expect("client")
}

/// Asserts the answer is the rate refusal for request `id`; returns `data.retryAfterMs`.
fn assert_limited(r: &Resp, id: &Value, at_most_ms: u64) -> u64 {
    assert_eq!(r.status, 429, "{}", r.text);
    assert_eq!(r.body["id"], *id, "{}", r.text);
    assert_eq!(r.code(), Some(-32000), "{}", r.text);
    let wait = r.body["error"]["data"]["retryAfterMs"].as_u64().expect("data.retryAfterMs");
    assert!(wait > 0 && wait <= at_most_ms, "{wait} ms: {}", r.text);
    let secs: u64 = r.headers["retry-after"].to_str().expect("ascii").parse().expect("whole seconds");
    assert_eq!(secs, wait.div_ceil(1000), "Retry-After is data.retryAfterMs rounded up");
    wait
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_past_the_rate_get_429_with_retry_after_in_both_eras() {
    let server = Server::builder("rates", "1.0.0").tool(echo_tool()).build().expect("server");
    let h = serve_with(server, HttpConfig::default().request_rate(RateLimit::per_minute(3))).await;
    let one = h.clone_with(from(1));
    for i in 1..=3 {
        one.send(&call(i, "echo", json!({ "text": "hi" }))).await.assert_ok(&json!(i));
    }
    // One every 20 s: the fourth waits at most that long.
    assert_limited(&one.send(&call(4, "echo", json!({ "text": "hi" }))).await, &json!(4), 20_000);
    assert_limited(&one.send(&req(5, "server/discover", json!({}))).await, &json!(5), 20_000);
    // Another address has its own budget.
    h.clone_with(from(2)).send(&call(6, "echo", json!({ "text": "hi" }))).await.assert_ok(&json!(6));
    // The legacy era counts the same way: initialize, a call, a list, then the refusal
    // (the notification after initialize is not a request and does not count).
    let mut legacy = Legacy::new(&h.url);
    legacy.client = from(3);
    legacy.initialize(json!({})).await;
    legacy.result(1, "tools/call", json!({ "name": "echo", "arguments": { "text": "x" } })).await;
    legacy.result(2, "tools/list", json!({})).await;
    let r = read(
        legacy
            .client
            .post(&h.url)
            .headers(legacy.headers())
            .body(json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {} }).to_string()),
    )
    .await;
    assert_limited(&r, &json!(3), 20_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn principals_have_their_own_rate_whatever_their_address() {
    let server = Server::builder("rates", "1.0.0").tool(echo_tool()).build().expect("server");
    let auth = BearerTokens::new().token("a", Principal::new("alice")).token("b", Principal::new("bob"));
    let h = serve_with(server, HttpConfig::default().auth(auth).request_rate(RateLimit::per_minute(1))).await;
    let as_user = |token: &'static str, id: i64| {
        let body = call(id, "echo", json!({ "text": "hi" }));
        read(h.post_with(&body, move |hd| set(hd, "authorization", &format!("Bearer {token}"))))
    };
    as_user("a", 1).await.assert_ok(&json!(1));
    assert_limited(&as_user("a", 2).await, &json!(2), 60_000);
    as_user("b", 3).await.assert_ok(&json!(3));
}

fn job() -> Tool {
    Tool::new("job", "a task").task_support(TaskSupport::Optional).handle(|_c, _a| async { Ok(TaskSpec::new()) })
}

fn modern_create(id: i64) -> Value {
    req(id, "tools/call", json!({ "name": "job", "_meta": meta_with(json!({ "extensions": { TASKS: {} } })) }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_creates_past_the_rate_are_refused_in_both_eras_from_one_budget() {
    let config = TasksConfig::enabled().create_rate(RateLimit::per_minute(2));
    let tasks = Tasks::new(config.clone()).expect("tasks");
    let legacy_tasks = LegacyTasks::new(config).expect("legacy tasks");
    tasks.drive_legacy(&legacy_tasks);
    let server = Server::builder("rates", "1.0.0").extension(tasks.clone()).tool(job()).build().expect("server");
    let h = serve_with(server, HttpConfig::default()).await;
    let one = h.clone_with(from(1));
    let created = one.send(&modern_create(1)).await.assert_ok(&json!(1));
    assert!(created["taskId"].is_string(), "{created}");
    // The same client's legacy session draws on the same budget.
    let mut legacy = Legacy::new(&h.url);
    legacy.client = from(1);
    legacy.initialize(json!({ "tasks": {} })).await;
    let task =
        legacy.result(2, "tools/call", json!({ "name": "job", "arguments": {}, "task": { "ttl": 60000 } })).await;
    assert!(task["task"]["taskId"].is_string(), "{task}");
    // Both spent: the modern create is refused with 429 and nothing is stored.
    let r = one.send(&modern_create(3)).await;
    assert_limited(&r, &json!(3), 30_000);
    assert!(r.text.contains("Too many tasks created by this client"), "{}", r.text);
    // In the session the refusal is the JSON-RPC error (legacy answers errors with 200).
    let e = legacy.error(4, "tools/call", json!({ "name": "job", "arguments": {}, "task": { "ttl": 60000 } })).await;
    assert_eq!(e["code"], -32000, "{e}");
    assert!(e["data"]["retryAfterMs"].as_u64().is_some_and(|ms| ms > 0 && ms <= 30_000), "{e}");
    // Another address still creates.
    h.clone_with(from(2)).send(&modern_create(5)).await.assert_ok(&json!(5));
}
