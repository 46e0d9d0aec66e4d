//! What one client can make a legacy (2025-11-25) task hold, over a real
//! socket: legacy tasks are created and answered on the extension's one path,
//! so they get its bounds (issue 20, findings 3, 6 and 9): the per-principal
//! cap, only the capabilities the server reads, a minimum TTL, and answers
//! relayed by `tasks/result` held to the byte bounds.

use crate::common;
use crate::legacy_common;

use common::start_with;
use conduit_mcp::auth::{BearerTokens, Principal};
use conduit_mcp::clock::ManualClock;
use conduit_mcp::ext::tasks::legacy_store::LegacyTasks;
use conduit_mcp::ext::tasks::limits::{MAX_ANSWER_BYTES, MIN_TTL_MS, json_len};
use conduit_mcp::ext::tasks::{Tasks, TasksConfig};
use conduit_mcp::prelude::*;
use legacy_common::*;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

const T0: u64 = 1_800_000_000_000;

/// A legacy server with a waiting task tool and one that asks for a confirmation;
/// `max_rows` 8 (so each principal may hold 2).
fn server(clock: &ManualClock) -> (Server, LegacyTasks) {
    let clock: Arc<dyn conduit_mcp::clock::Clock> = Arc::new(clock.clone());
    let config = TasksConfig::enabled().max_rows(Some(8));
    let legacy = LegacyTasks::with_clock(config.clone(), clock.clone()).expect("valid config");
    let tasks = Tasks::with_clock(config, clock.clone()).expect("valid config");
    tasks.drive_legacy(&legacy);
    let server = Server::builder("bounds", "1.0.0")
        .clock(clock)
        .extension(tasks)
        .tool(
            Tool::new("wait", "A task that waits")
                .task_support(TaskSupport::Optional)
                .handle(|_c, _a| async { Ok(ToolOutput::Task(TaskSpec::new().spawn(|_t| std::future::pending()))) }),
        )
        .tool(
            Tool::new("now", "Answers at once")
                .task_support(TaskSupport::Optional)
                .handle(|_c, _a| async { Ok(CallToolResult::text("at once")) }),
        )
        .tool(Tool::new("confirm", "Asks for a confirmation").task_support(TaskSupport::Required).handle(
            |_c, _a| async {
                Ok(ToolOutput::Task(TaskSpec::new().spawn(|task| async move {
                    let schema = json!({ "type": "object", "properties": { "note": { "type": "string" } } });
                    let answer = task
                        .input("ok", conduit_mcp::mrtr::elicit("Proceed?", schema))
                        .await
                        .map_err(|e| RpcError::internal(e.to_string()))?;
                    Ok(CallToolResult::text(format!("noted {} bytes", answer.to_string().len())))
                })))
            },
        ))
        .build()
        .expect("valid server");
    (server, legacy)
}

fn tokens() -> BearerTokens {
    BearerTokens::new().token("alice", Principal::new("alice")).token("bob", Principal::new("bob"))
}

fn task_id(created: &Value) -> String {
    created["task"]["taskId"].as_str().expect("a task id").to_owned()
}

#[tokio::test]
async fn one_principal_cannot_fill_the_legacy_row_cap() {
    let clock = ManualClock::new(T0);
    let (server, _legacy) = server(&clock);
    let h = start_with(server, HttpConfig::default().auth(tokens())).await;
    let mut alice = Legacy::new(&h.url).with_token("alice");
    alice.initialize(json!({})).await;
    for i in 0..2 {
        task_id(&alice.result(i, "tools/call", json!({ "name": "wait", "task": {} })).await);
    }
    let refused = alice.error(3, "tools/call", json!({ "name": "wait", "task": {} })).await;
    assert_eq!(refused["code"], -32603, "{refused}");
    assert_eq!(refused["message"], "Task limit reached");
    assert_eq!(refused["data"]["cap"], "principal", "{refused}");
    let mut bob = Legacy::new(&h.url).with_token("bob");
    bob.initialize(json!({})).await;
    let created = bob.result(4, "tools/call", json!({ "name": "wait", "task": {} })).await;
    assert_schema("CreateTaskResult", &created);
}

/// The 2025-11-25 rule the TypeScript SDK 1.x and mcp-remote rely on (issue 34):
/// `tasks/cancel` answers the task `cancelled`, and it stays `cancelled` —
/// read by `tasks/get`, listed by `tasks/list`, answered by `tasks/result` —
/// until its TTL. It no longer holds its principal's live slot, so cancelling
/// still lets a principal at its cap create again at once.
#[tokio::test]
async fn a_cancelled_task_stays_readable_until_its_ttl_and_frees_its_live_slot() {
    let clock = ManualClock::new(T0);
    let (server, _legacy) = server(&clock);
    let h = start_with(server, HttpConfig::default().auth(tokens())).await;
    let mut alice = Legacy::new(&h.url).with_token("alice");
    alice.initialize(json!({})).await;
    let mut ids = Vec::new();
    for i in 0..2 {
        let created = alice.result(i, "tools/call", json!({ "name": "wait", "task": { "ttl": 60_000 } })).await;
        ids.push(task_id(&created));
        clock.advance(1);
    }
    let refused = alice.error(2, "tools/call", json!({ "name": "wait", "task": {} })).await;
    assert_eq!(refused["data"]["cap"], "principal", "alice is at her cap: {refused}");
    let cancelled = alice.result(3, "tasks/cancel", json!({ "taskId": ids[0] })).await;
    assert_schema("CancelTaskResult", &cancelled);
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    clock.advance(1_000);
    let got = alice.result(4, "tasks/get", json!({ "taskId": ids[0] })).await;
    assert_schema("GetTaskResult", &got);
    assert_eq!((got["taskId"].as_str(), got["status"].as_str()), (Some(ids[0].as_str()), Some("cancelled")), "{got}");
    assert_eq!(got["ttl"], 60_000, "{got}");
    let listed = alice.result(5, "tasks/list", json!({})).await;
    let statuses: Vec<(&str, &str)> = listed["tasks"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|t| (t["taskId"].as_str().unwrap_or(""), t["status"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(statuses, vec![(ids[0].as_str(), "cancelled"), (ids[1].as_str(), "working")], "{listed}");
    // What the cancelled call gives: a JSON-RPC error, as a cancelled request would have.
    let outcome = alice.error(6, "tasks/result", json!({ "taskId": ids[0] })).await;
    assert_eq!((outcome["code"].as_i64(), outcome["message"].as_str()), (Some(-32603), Some("Task was cancelled")));
    // A terminal task stays terminal: cancelling it again is -32602, and it still reads cancelled.
    let again = alice.error(7, "tasks/cancel", json!({ "taskId": ids[0] })).await;
    assert_eq!(again["code"], -32602, "{again}");
    // Cancelled, it no longer holds one of alice's live slots: no time needs to pass.
    let next = alice.result(8, "tools/call", json!({ "name": "wait", "task": {} })).await;
    assert_schema("CreateTaskResult", &next);
    // Until its TTL (counted from its creation, 1 002 ms ago), and not a millisecond longer.
    clock.advance(58_998);
    assert_eq!(alice.result(9, "tasks/get", json!({ "taskId": ids[0] })).await["status"], "cancelled");
    clock.advance(1);
    let gone = alice.error(10, "tasks/get", json!({ "taskId": ids[0] })).await;
    assert_eq!(gone["code"], -32602, "past its TTL it is gone: {gone}");
    let listed = alice.result(11, "tasks/list", json!({})).await;
    assert!(!listed.to_string().contains(&ids[0]), "nor listed: {listed}");
}

#[tokio::test]
async fn a_legacy_task_keeps_only_the_capabilities_it_is_judged_by() {
    let clock = ManualClock::new(T0);
    let (server, legacy) = server(&clock);
    let h = start_with(server, HttpConfig::default()).await;
    let mut c = Legacy::new(&h.url);
    let pad = "x".repeat(256 << 10);
    c.initialize(json!({ "elicitation": {}, "experimental": { "pad": pad }, "roots": { "pad": pad } })).await;
    let created = c.result(1, "tools/call", json!({ "name": "wait", "task": {} })).await;
    let rec = legacy.status(&task_id(&created)).await.expect("the task is stored");
    let kept = json_len(&Value::Object(rec.client_capabilities.0.clone()));
    assert!(kept < 100, "a legacy task keeps {kept} bytes of capabilities: {:?}", rec.client_capabilities);
    assert!(rec.client_capabilities.declares_input(conduit_mcp::protocol::mrtr::InputKind::ElicitForm));
}

#[tokio::test]
async fn a_zero_or_one_ms_ttl_is_raised_to_the_minimum_on_both_eras() {
    let clock = ManualClock::new(T0);
    let (server, _legacy) = server(&clock);
    let h = start_with(server, HttpConfig::default()).await;
    let mut c = Legacy::new(&h.url);
    c.initialize(json!({})).await;
    for (i, ttl) in [0u64, 1].into_iter().enumerate() {
        let created = c.result(i, "tools/call", json!({ "name": "wait", "task": { "ttl": ttl } })).await;
        assert_eq!(created["task"]["ttl"], MIN_TTL_MS, "ttl {ttl}: {created}");
        clock.advance(MIN_TTL_MS - 1);
        let got = c.result(10 + i, "tasks/get", json!({ "taskId": task_id(&created) })).await;
        assert_eq!(got["status"], "working", "alive for the minimum: {got}");
    }
}

#[tokio::test]
async fn a_modern_tools_short_ttl_is_raised_to_the_minimum() {
    let clock = ManualClock::new(T0);
    let tasks = Tasks::with_clock(TasksConfig::enabled(), Arc::new(clock.clone())).expect("valid config");
    let server = Server::builder("ttl", "1")
        .extension(tasks)
        .tool(Tool::new("zero", "0 ms ttl").handle(|_c, _a| async { Ok(TaskSpec::new().ttl(Duration::ZERO)) }))
        .build()
        .expect("valid server");
    let h = common::start(server).await;
    let caps = json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } });
    let params = json!({ "name": "zero", "arguments": {}, "_meta": common::meta_with(caps) });
    let body = common::req(1, "tools/call", params);
    let created = h.send(&body).await.assert_ok(&json!(1));
    assert_eq!(created["ttlMs"], MIN_TTL_MS, "{created}");
}

#[tokio::test]
async fn an_answer_past_the_byte_bound_is_refused_and_asked_again() {
    let clock = ManualClock::new(T0);
    let (server, legacy) = server(&clock);
    let h = start_with(server, HttpConfig::default()).await;
    let mut c = Legacy::new(&h.url);
    c.initialize(json!({ "elicitation": {} })).await;
    let id = task_id(&c.result(1, "tools/call", json!({ "name": "confirm", "task": {} })).await);
    let ask = |n: u64| {
        let c = c.clone();
        let id = id.clone();
        async move {
            let mut ev = c.open(n, "tasks/result", json!({ "taskId": id })).await;
            let (_, ask) = ev.next_msg().await.expect("the worker's question");
            assert_eq!(ask["method"], "elicitation/create");
            (ev, ask)
        }
    };
    let (mut ev, question) = ask(2).await;
    let big = "x".repeat(MAX_ANSWER_BYTES + 1);
    let answer = json!({ "jsonrpc": "2.0", "id": question["id"],
        "result": { "action": "accept", "content": { "note": big } } });
    assert_eq!(c.post(&answer).await.status(), StatusCode::ACCEPTED);
    let msgs = ev.until_response(&json!(2)).await;
    let refused = &msgs.last().unwrap()["error"];
    assert_eq!(refused["code"], -32602, "{refused}");
    let rec = legacy.status(&id).await.expect("the task");
    assert!(rec.input_responses.is_empty() && rec.pending_responses.is_empty(), "nothing of it kept");
    assert_eq!(c.result(3, "tasks/get", json!({ "taskId": id })).await["status"], "input_required");
    // Asked again, a small answer goes through.
    let (mut ev, question) = ask(4).await;
    let answer = json!({ "jsonrpc": "2.0", "id": question["id"],
        "result": { "action": "accept", "content": { "note": "ok" } } });
    assert_eq!(c.post(&answer).await.status(), StatusCode::ACCEPTED);
    let msgs = ev.until_response(&json!(4)).await;
    let r = &msgs.last().unwrap()["result"];
    assert!(r["content"][0]["text"].as_str().is_some_and(|t| t.starts_with("noted")), "{r}");
}

#[tokio::test]
async fn a_tool_that_answered_at_once_gets_its_task_stored_completed() {
    let clock = ManualClock::new(T0);
    let (server, legacy) = server(&clock);
    let h = start_with(server, HttpConfig::default()).await;
    let mut c = Legacy::new(&h.url);
    c.initialize(json!({})).await;
    let created = c.result(1, "tools/call", json!({ "name": "now", "task": {} })).await;
    assert_schema("CreateTaskResult", &created);
    assert_eq!(created["task"]["status"], "completed", "stored as it ended, not run again: {created}");
    let rec = legacy.status(&task_id(&created)).await.expect("the task");
    assert!(rec.lease.is_none(), "no work was launched for it");
    let r = c.result(2, "tasks/result", json!({ "taskId": task_id(&created) })).await;
    assert_eq!(r["content"][0]["text"], "at once");
}
