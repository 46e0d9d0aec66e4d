//! The Tasks extension over HTTP: creation, polling, input, cancellation,
//! expiry, the check order of `tasks/*`, and the disabled extension.

use crate::common;

use common::*;
use conduit_mcp::clock::ManualClock;
use conduit_mcp::ext::tasks::{Tasks, TasksConfig};
use conduit_mcp::prelude::*;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

const TASKS: &str = "io.modelcontextprotocol/tasks";

fn tasks_meta() -> Value {
    meta_with(json!({ "elicitation": {}, "extensions": { TASKS: {} } }))
}

fn tcall(id: i64, tool: &str, args: Value) -> Value {
    req(id, "tools/call", json!({ "name": tool, "arguments": args, "_meta": tasks_meta() }))
}

fn treq(id: i64, method: &str, params: Value) -> Value {
    let mut p = params;
    p["_meta"] = tasks_meta();
    req(id, method, p)
}

/// A server with task tools driven by the test through the `Tasks` handle.
fn server(tasks: &Tasks) -> Server {
    let t = tasks.clone();
    Server::builder("tasks-test", "0.0.1")
        .extension(tasks.clone())
        .tool(Tool::new("job", "A task the test drives").handle(|_ctx, _args| async move {
            Ok(TaskSpec::new().status_message("Queued").poll_interval(Duration::from_millis(250)))
        }))
        .tool(
            Tool::new("must_task", "Runs only as a task")
                .task_support(TaskSupport::Required)
                .handle(|_ctx, _args| async move { Ok(TaskSpec::new()) }),
        )
        .tool(
            Tool::new("bad_attrs", "Invalid task attributes")
                .handle(|_ctx, _args| async move { Ok(TaskSpec::new().poll_interval(Duration::ZERO)) }),
        )
        .tool(
            Tool::new("panicky_start", "start panics").handle(|_ctx, _args| async move {
                Ok(TaskSpec::new().start(|_id| panic!("start failed on purpose")))
            }),
        )
        .tool(Tool::new("spawned", "Spawned work asking for input").handle(|_ctx, _args| async move {
            Ok(TaskSpec::new().spawn(|task| async move {
                let answer = task
                    .input(
                        "who",
                        mrtr::elicit("Who?", json!({"type": "object", "properties": {"name": {"type": "string"}}})),
                    )
                    .await
                    .map_err(|e| RpcError::internal(e.to_string()))?;
                Ok(CallToolResult::text(format!("hello {}", answer["content"]["name"].as_str().unwrap_or("?"))))
            }))
        }))
        .tool(Tool::new("spawn_fail", "Spawned work failing").handle(|_ctx, _args| async move {
            Ok(TaskSpec::new().spawn(|_task| async move { Err(RpcError::new(ErrorCode::Other(-1), "boom")) }))
        }))
        .tool(Tool::new("spawn_panic", "Spawned work panicking").handle(|_ctx, _args| async move {
            Ok(TaskSpec::new().spawn(|_task| async move { panic!("work panicked on purpose") }))
        }))
        .tool(Tool::new("sync_or_task", "A task if declared, inline otherwise").handle(move |_ctx, _args| {
            let _t = t.clone();
            async move { Ok(TaskSpec::new().spawn(|_task| async move { Ok(CallToolResult::text("sync")) })) }
        }))
        .build()
        .expect("server")
}

async fn create(h: &Harness, tool: &str) -> String {
    let r = h.send(&tcall(1, tool, json!({}))).await;
    let res = r.assert_ok(&json!(1));
    assert_eq!(res["resultType"], "task", "{res}");
    res["taskId"].as_str().expect("taskId").to_owned()
}

async fn get(h: &Harness, id: &str) -> Value {
    let r = h.send(&treq(2, "tasks/get", json!({ "taskId": id }))).await;
    r.assert_ok(&json!(2))
}

async fn wait_status(h: &Harness, id: &str, status: &str) -> Value {
    let mut sub = h.open(&treq(50, "subscriptions/listen", json!({ "notifications": { "taskIds": [id] } }))).await;
    let ack = sub.next().await.expect("ack");
    assert_eq!(ack["params"]["notifications"]["taskIds"], json!([id]));
    let now = get(h, id).await;
    if now["status"] == status {
        return now;
    }
    loop {
        let n = sub.next().await.expect("a notification");
        if n["params"]["status"] == status {
            return get(h, id).await;
        }
    }
}

#[tokio::test]
async fn create_then_get_then_complete() {
    let tasks = Tasks::new(TasksConfig::enabled()).unwrap();
    let h = start(server(&tasks)).await;
    let r = h.send(&tcall(1, "job", json!({}))).await;
    let c = r.assert_ok(&json!(1));
    assert_eq!(c["resultType"], "task");
    assert_eq!(c["status"], "working");
    assert_eq!(c["statusMessage"], "Queued");
    assert_eq!(c["pollIntervalMs"], 250);
    assert_eq!(c["ttlMs"], 3_600_000);
    assert_eq!(c["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "tasks-test");
    let id = c["taskId"].as_str().unwrap();
    assert_eq!(id.len(), 43);
    assert!(id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
    assert!(c["createdAt"].as_str().unwrap().ends_with('Z'));
    for k in ["task", "result", "error", "inputRequests", "requestState", "ttl", "pollInterval"] {
        assert!(c.get(k).is_none(), "CreateTaskResult must not carry {k}");
    }
    let g = get(&h, id).await;
    assert_eq!(
        (g["resultType"].as_str(), g["status"].as_str(), g["taskId"].as_str()),
        (Some("complete"), Some("working"), Some(id))
    );
    tasks.progress(id, "half way").await.unwrap();
    assert_eq!(get(&h, id).await["statusMessage"], "half way");
    tasks.complete(id, CallToolResult::error("tool-level failure"), Some("done".into())).await.unwrap();
    let g = get(&h, id).await;
    assert_eq!(g["status"], "completed");
    assert_eq!(g["statusMessage"], "done");
    assert_eq!(g["result"]["isError"], true);
    assert_eq!(g["result"]["resultType"], "complete");
    assert!(g.get("error").is_none());
    // Terminal is final.
    assert!(tasks.fail(id, RpcError::internal("late"), None).await.is_err());
    assert_eq!(tasks.progress(id, "late").await, Err(conduit_mcp::task::WorkerError::Terminal));
    let more = [("late".to_owned(), mrtr::elicit("?", json!({"type": "object"})))].into_iter().collect();
    assert_eq!(tasks.require_input(id, more, None).await, Err(conduit_mcp::task::WorkerError::Terminal));
    assert_eq!(
        tasks.complete(id, CallToolResult::text("again"), None).await,
        Err(conduit_mcp::task::WorkerError::Terminal)
    );
    assert_eq!(get(&h, id).await["status"], "completed");
}

#[tokio::test]
async fn a_completed_task_keeps_no_stale_progress_message() {
    let tasks = Tasks::new(TasksConfig::enabled()).unwrap();
    let h = start(server(&tasks)).await;
    let id = create(&h, "job").await;
    tasks.progress(&id, "step 3 of 4").await.unwrap();
    tasks.complete(&id, CallToolResult::text("built"), None).await.unwrap();
    let g = get(&h, &id).await;
    assert_eq!(g["status"], "completed");
    assert!(g.get("statusMessage").is_none(), "the work is done, not at step 3: {g}");
}

#[tokio::test]
async fn failed_task_carries_the_error() {
    let tasks = Tasks::new(TasksConfig::enabled()).unwrap();
    let h = start(server(&tasks)).await;
    let id = create(&h, "job").await;
    tasks.fail(&id, RpcError::internal("upstream down"), Some("Tool execution failed".into())).await.unwrap();
    let g = get(&h, &id).await;
    assert_eq!(g["status"], "failed");
    assert_eq!(g["error"], json!({ "code": -32603, "message": "upstream down" }));
    assert_eq!(g["statusMessage"], "Tool execution failed");
    assert!(g.get("result").is_none());
}

#[tokio::test]
async fn input_round_trip_with_partial_answers() {
    let tasks = Tasks::new(TasksConfig::enabled()).unwrap();
    let h = start(server(&tasks)).await;
    let id = create(&h, "job").await;
    let ask = |m: &str| mrtr::elicit(m, json!({"type": "object", "properties": {"ok": {"type": "boolean"}}}));
    let reqs = [("a".to_owned(), ask("A?")), ("b".to_owned(), ask("B?"))].into_iter().collect();
    tasks.require_input(&id, reqs, Some("Waiting".into())).await.unwrap();
    let g = get(&h, &id).await;
    assert_eq!(g["status"], "input_required");
    assert_eq!(g["inputRequests"]["a"]["method"], "elicitation/create");
    // Unknown keys are ignored, malformed answers leave the key outstanding.
    let up = |resp: Value| treq(3, "tasks/update", json!({ "taskId": id, "inputResponses": resp }));
    let ack = h.send(&up(json!({ "unknown-key": { "ignored": true }, "b": 12 }))).await.assert_ok(&json!(3));
    assert_eq!(ack.as_object().unwrap().keys().filter(|k| *k != "_meta").collect::<Vec<_>>(), vec!["resultType"]);
    let g = get(&h, &id).await;
    assert_eq!(g["inputRequests"].as_object().unwrap().len(), 2);
    h.send(&up(json!({ "a": { "action": "accept", "content": { "ok": true } } }))).await.assert_ok(&json!(3));
    let g = get(&h, &id).await;
    assert_eq!(g["status"], "input_required");
    assert!(g["inputRequests"].get("a").is_none() && g["inputRequests"].get("b").is_some());
    assert!(tasks.status(&id).await.unwrap().input_responses.is_empty(), "answers appear once the round is complete");
    h.send(&up(json!({ "b": { "action": "decline" } }))).await.assert_ok(&json!(3));
    let rec = tasks.status(&id).await.unwrap();
    assert_eq!(rec.status, conduit_mcp::protocol::tasks::TaskStatus::Working);
    assert_eq!(rec.input_responses["a"]["content"]["ok"], true);
    assert_eq!(rec.input_responses["b"]["action"], "decline");
    // Keys are single-use over the task's life.
    let again = [("a".to_owned(), ask("A again?"))].into_iter().collect();
    assert_eq!(
        tasks.require_input(&id, again, None).await,
        Err(conduit_mcp::task::WorkerError::DuplicateKeys(vec!["a".into()]))
    );
    assert_eq!(
        tasks.require_input(&id, Default::default(), None).await,
        Err(conduit_mcp::task::WorkerError::InvalidInputRequests)
    );
    // A hand-rolled request that is not one of the MRTR kinds is refused too.
    let rolled: conduit_mcp::mrtr::Request = serde_json::from_value(json!({ "method": "tools/call" })).unwrap();
    assert_eq!(
        tasks.require_input(&id, [("z".to_owned(), rolled)].into_iter().collect(), None).await,
        Err(conduit_mcp::task::WorkerError::InvalidInputRequests)
    );
    // An update to a working task is acknowledged and changes nothing.
    let before = tasks.status(&id).await.unwrap();
    h.send(&up(json!({ "a": { "action": "accept" } }))).await.assert_ok(&json!(3));
    assert_eq!(tasks.status(&id).await.unwrap().version, before.version);
}

#[tokio::test]
async fn input_requests_are_gated_on_the_creating_requests_capabilities() {
    let tasks = Tasks::new(TasksConfig::enabled()).unwrap();
    let h = start(server(&tasks)).await;
    let body =
        req(1, "tools/call", json!({ "name": "job", "_meta": meta_with(json!({ "extensions": { TASKS: {} } })) }));
    let id = h.send(&body).await.assert_ok(&json!(1))["taskId"].as_str().unwrap().to_owned();
    let reqs = [("x".to_owned(), mrtr::elicit("?", json!({"type": "object"})))].into_iter().collect();
    assert!(matches!(
        tasks.require_input(&id, reqs, None).await,
        Err(conduit_mcp::task::WorkerError::UndeclaredCapability(_))
    ));
}

#[tokio::test]
async fn cancel_moves_a_live_task_and_acks_a_terminal_one() {
    let tasks = Tasks::new(TasksConfig::enabled()).unwrap();
    let h = start(server(&tasks)).await;
    let id = create(&h, "job").await;
    let cancel = treq(4, "tasks/cancel", json!({ "taskId": id }));
    let ack = h.send(&cancel).await.assert_ok(&json!(4));
    assert_eq!(ack["resultType"], "complete");
    assert!(ack.get("status").is_none() && ack.get("taskId").is_none());
    assert!(tasks.cancelled(&id).await);
    let g = get(&h, &id).await;
    assert_eq!(g["status"], "cancelled");
    let again = h.send(&cancel).await.assert_ok(&json!(4));
    assert_eq!(again["resultType"], "complete");
    assert_eq!(get(&h, &id).await["lastUpdatedAt"], g["lastUpdatedAt"], "a terminal task is unchanged");
    assert!(!tasks.cancelled("no-such-task").await);
}

#[tokio::test]
async fn spawned_work_asks_for_input_and_completes() {
    let tasks = Tasks::new(TasksConfig::enabled()).unwrap();
    let h = start(server(&tasks)).await;
    let id = create(&h, "spawned").await;
    let g = wait_status(&h, &id, "input_required").await;
    assert_eq!(g["inputRequests"]["who"]["params"]["message"], "Who?");
    let up = treq(
        5,
        "tasks/update",
        json!({ "taskId": id, "inputResponses": { "who": { "action": "accept", "content": { "name": "Ada" } } } }),
    );
    h.send(&up).await.assert_ok(&json!(5));
    let g = wait_status(&h, &id, "completed").await;
    assert_eq!(first_text(&g["result"]), "hello Ada");
}

#[tokio::test]
async fn spawned_errors_and_panics_end_failed() {
    let tasks = Tasks::new(TasksConfig::enabled()).unwrap();
    let h = start(server(&tasks)).await;
    let id = create(&h, "spawn_fail").await;
    let g = wait_status(&h, &id, "failed").await;
    assert_eq!(g["error"]["message"], "boom");
    let id = create(&h, "spawn_panic").await;
    let g = wait_status(&h, &id, "failed").await;
    assert_eq!(g["error"]["code"], -32603);
}

#[tokio::test]
async fn a_panicking_start_still_answers_and_fails_the_task() {
    let tasks = Tasks::new(TasksConfig::enabled()).unwrap();
    let h = start(server(&tasks)).await;
    let id = create(&h, "panicky_start").await;
    let g = get(&h, &id).await;
    assert_eq!(g["status"], "failed");
    assert_eq!(g["error"]["code"], -32603);
}

#[tokio::test]
async fn invalid_attributes_are_internal_errors_and_create_nothing() {
    let tasks = Tasks::new(TasksConfig::enabled().max_rows(Some(1))).unwrap();
    let h = start(server(&tasks)).await;
    h.send(&tcall(1, "bad_attrs", json!({}))).await.assert_error(200, -32603, &json!(1));
    // The row cap still has room for one: nothing was created by the bad call.
    create(&h, "job").await;
    let r = h.send(&tcall(1, "job", json!({}))).await;
    r.assert_error(200, -32603, &json!(1));
    assert_eq!(r.body["error"]["message"], "Task limit reached");
}

#[tokio::test]
async fn declaration_rules() {
    let tasks = Tasks::new(TasksConfig::enabled()).unwrap();
    let h = start(server(&tasks)).await;
    // A task-required tool without the extension: -32021, HTTP 400.
    let r = h.send(&call(1, "must_task", json!({}))).await;
    r.assert_error(400, -32021, &json!(1));
    assert_eq!(r.body["error"]["data"]["requiredCapabilities"], json!({ "extensions": { TASKS: {} } }));
    // An optional tool falls back to a synchronous answer.
    let res = h.send(&call(2, "sync_or_task", json!({}))).await.assert_ok(&json!(2));
    assert_eq!(res["resultType"], "complete");
    assert_eq!(first_text(&res), "sync", "the spawned work ran inline");
    // A tool that returns a task to a non-declaring request: -32021, HTTP 400.
    let r = h.send(&call(3, "job", json!({}))).await;
    r.assert_error(400, -32021, &json!(3));
    assert_eq!(r.body["error"]["data"]["requiredCapabilities"], json!({ "extensions": { TASKS: {} } }));
    // tasks/* without the extension: -32021 before any lookup.
    for m in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let body = req(4, m, json!({ "taskId": "gate-test", "inputResponses": {} }));
        h.send(&body).await.assert_error(400, -32021, &json!(4));
    }
    // Discover advertises the extension and no legacy tasks capability.
    let d = h.send(&req(5, "server/discover", json!({}))).await.assert_ok(&json!(5));
    assert_eq!(d["capabilities"]["extensions"][TASKS], json!({}));
    assert!(d["capabilities"].get("tasks").is_none());
    // A legacy task param is ignored.
    let body = req(6, "tools/call", json!({ "name": "sync_or_task", "task": { "ttl": 1000 } }));
    assert_eq!(h.send(&body).await.assert_ok(&json!(6))["resultType"], "complete");
}

#[tokio::test]
async fn tasks_route_check_order() {
    let tasks = Tasks::new(TasksConfig::enabled()).unwrap();
    let h = start(server(&tasks)).await;
    let id = create(&h, "job").await;
    let body = treq(7, "tasks/get", json!({ "taskId": id }));
    // Mcp-Name different: -32020 (before the capability gate); missing: served, the body's
    // taskId names the task (the interop rule; `HttpConfig::require_task_name` refuses it).
    h.send_with(&body, |hd| {
        hd.remove("mcp-name");
    })
    .await
    .assert_ok(&json!(7));
    let r = h.send_with(&body, |hd| set(hd, "mcp-name", "someone-else")).await;
    r.assert_error(400, -32020, &json!(7));
    assert!(!r.text.contains(&id), "the task id is never echoed");
    // Sentinel-encoded and padded values are accepted.
    h.send_with(&body, |hd| set(hd, "mcp-name", &b64_sentinel(&id))).await.assert_ok(&json!(7));
    h.send_with(&body, |hd| set(hd, "mcp-name", &format!("  {id}  "))).await.assert_ok(&json!(7));
    // Missing (or non-string) taskId: -32602 "Missing taskId", on every route.
    for m in ["tasks/get", "tasks/update", "tasks/cancel"] {
        for params in [json!({ "inputResponses": {} }), json!({ "taskId": 7, "inputResponses": {} })] {
            let r = h.send(&treq(8, m, params)).await;
            r.assert_error(200, -32602, &json!(8));
            assert_eq!(r.body["error"]["message"], "Missing taskId");
        }
    }
    // inputResponses must be an object.
    let r = h.send(&treq(9, "tasks/update", json!({ "taskId": id, "inputResponses": [1] }))).await;
    r.assert_error(200, -32602, &json!(9));
    // Unknown task.
    let r = h.send(&treq(10, "tasks/get", json!({ "taskId": "tasks-conformance-nonexistent-12345" }))).await;
    r.assert_error(200, -32602, &json!(10));
    assert_eq!(r.body["error"]["message"], "Failed to retrieve task: Task not found");
    // Removed methods.
    for m in ["tasks/list", "tasks/result"] {
        h.send(&treq(11, m, json!({ "taskId": id }))).await.assert_error(404, -32601, &json!(11));
    }
}

#[tokio::test]
async fn expired_tasks_read_as_missing_and_the_janitor_sweeps_them() {
    let clock = ManualClock::new(1_800_000_000_000);
    let tasks = Tasks::with_clock(TasksConfig::enabled(), Arc::new(clock.clone())).unwrap();
    let t = tasks.clone();
    let server = Server::builder("ttl", "1")
        .extension(tasks.clone())
        .tool(Tool::new("short", "1 s ttl").handle(|_c, _a| async { Ok(TaskSpec::new().ttl(Duration::from_secs(1))) }))
        .build()
        .unwrap();
    let h = start(server).await;
    let id = create(&h, "short").await;
    clock.advance(1_000);
    assert_eq!(get(&h, &id).await["status"], "working", "alive for its whole ttl");
    clock.advance(1);
    let missing = h.send(&treq(2, "tasks/get", json!({ "taskId": id }))).await;
    let unknown = h.send(&treq(2, "tasks/get", json!({ "taskId": "x".repeat(43) }))).await;
    assert_eq!(missing.text, unknown.text, "an expired task reads exactly like a missing one");
    assert_eq!(conduit_mcp::ext::tasks::sweep(&t).await.unwrap(), 1);
    assert_eq!(conduit_mcp::ext::tasks::sweep(&t).await.unwrap(), 0);
}

#[tokio::test]
async fn disabled_extension() {
    let server = Server::builder("off", "1")
        .tool(Tool::new("job", "returns a task").handle(|_c, _a| async { Ok(TaskSpec::new()) }))
        .build()
        .unwrap();
    let h = start(server).await;
    let d = h.send(&req(1, "server/discover", json!({}))).await.assert_ok(&json!(1));
    assert!(d["capabilities"].get("extensions").is_none());
    h.send(&treq(2, "tasks/get", json!({ "taskId": "abc" }))).await.assert_error(404, -32601, &json!(2));
    h.send(&tcall(3, "job", json!({}))).await.assert_error(200, -32603, &json!(3));
    // taskIds is an unknown listen field: ignored and left out of the ack.
    let mut s = h
        .open(&treq(
            4,
            "subscriptions/listen",
            json!({ "notifications": { "toolsListChanged": true, "taskIds": ["abc"] } }),
        ))
        .await;
    let ack = s.next().await.unwrap();
    assert_eq!(ack["params"]["notifications"], json!({ "toolsListChanged": true }));
}

#[tokio::test]
async fn start_runs_once_the_task_is_stored() {
    let tasks = Tasks::new(TasksConfig::enabled()).unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let tx = std::sync::Mutex::new(Some(tx));
    let t = tasks.clone();
    let server = Server::builder("start", "1")
        .extension(tasks.clone())
        .tool(Tool::new("queued", "start reads the store").handle(move |_c, _a| {
            let (t, tx) = (t.clone(), tx.lock().unwrap().take());
            async move {
                Ok(TaskSpec::new().start(move |id| {
                    // What a job queue would do: look the task up by the id it was given.
                    tokio::spawn(async move {
                        let seen = t.status(&id).await.map(|r| r.task_id);
                        if let Some(tx) = tx {
                            let _ = tx.send((id, seen));
                        }
                    });
                }))
            }
        }))
        .build()
        .unwrap();
    let h = start(server).await;
    let created = create(&h, "queued").await;
    let (id, seen) = guard("start to run", rx).await.unwrap();
    assert_eq!(id, created);
    assert_eq!(seen.as_deref(), Ok(created.as_str()), "the record exists when start runs");
}

#[tokio::test]
async fn notifier_none_turns_pushes_off() {
    let cfg = TasksConfig::enabled().notifier(conduit_mcp::ext::tasks::NotifierConfig::None);
    let tasks = Tasks::new(cfg).unwrap();
    let h = start(server(&tasks)).await;
    let id = create(&h, "job").await;
    let mut s = h
        .open(&treq(
            5,
            "subscriptions/listen",
            json!({ "notifications": { "taskIds": [id], "toolsListChanged": true } }),
        ))
        .await;
    let ack = s.next().await.unwrap();
    assert_eq!(ack["params"]["notifications"]["taskIds"], json!([]), "nothing is promised when nothing is delivered");
    tasks.complete(&id, CallToolResult::text("done"), None).await.unwrap();
    h.server.notify_tools_list_changed();
    assert_eq!(
        s.next().await.unwrap()["method"],
        "notifications/tools/list_changed",
        "no task notification came first"
    );
}

#[test]
fn defaults() {
    let c = TasksConfig::default();
    assert!(!c.enabled, "off unless enabled");
    assert_eq!(c.max_rows, Some(10_000));
    assert_eq!(
        c.janitor,
        conduit_mcp::ext::tasks::JanitorConfig::Every {
            interval: Duration::from_secs(60),
            ttl: Duration::from_secs(3600)
        }
    );
    assert!(matches!(c.notifier, conduit_mcp::ext::tasks::NotifierConfig::Listen));
}
