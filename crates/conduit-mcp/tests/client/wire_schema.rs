//! Every request the client sends, validated against the official JSON
//! Schemas (`tests/schema`, copied unchanged: the 2026-07-28 core schema and the Tasks
//! extension's): discover, tools/list, tools/call with MRTR responses and
//! state, subscriptions/listen with taskIds, tasks/get, tasks/update,
//! tasks/cancel. A recording server walks the client through all of them.

use crate::client_support;
use crate::common;

use client_support::*;
use common::guard;
use conduit_mcp::client::{CallOutcome, ToolOutcome};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

fn schema(file: &str) -> Value {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/schema").join(file);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).expect("schema JSON")
}

/// The violations of definition `def` of `doc` by `v`.
fn errors(doc: &Value, def: &str, v: &Value) -> Vec<String> {
    let mut root = doc.clone();
    root["$ref"] = json!(format!("#/$defs/{def}"));
    let validator = jsonschema::validator_for(&root).expect("schema compiles");
    validator.iter_errors(v).map(|e| format!("{} at {}", e, e.instance_path())).collect()
}

/// Validates `v` against definition `def` of `doc`.
fn check(doc: &Value, def: &str, v: &Value) {
    let errors = errors(doc, def, v);
    assert!(errors.is_empty(), "{def} invalid: {errors:?}\n{v:#}");
}

#[tokio::test]
async fn every_request_matches_the_official_schemas() {
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let gets = Arc::new(AtomicUsize::new(0));
    let record = seen.clone();
    let url = mock(move |req| {
        record.lock().unwrap().push(req.clone());
        let mut t = mock_task("working");
        match req["method"].as_str().unwrap_or("") {
            "server/discover" => Reply::Result(discover()),
            "tools/list" => Reply::Result(json!({ "resultType": "complete", "ttlMs": 0, "cacheScope": "private",
                "tools": [{ "name": "go", "inputSchema": { "type": "object",
                    "properties": { "region": { "type": "string", "x-mcp-header": "Region" } } } }] })),
            "tools/call" if req["params"]["inputResponses"].is_null() => Reply::Result(json!({
                "resultType": "input_required", "requestState": "opaque-1",
                "inputRequests": { "q": { "method": "elicitation/create", "params": { "message": "Sure?",
                    "requestedSchema": { "type": "object", "properties": { "ok": { "type": "boolean" } } } } } } })),
            "tools/call" => {
                t["resultType"] = json!("task");
                Reply::Result(t)
            }
            "subscriptions/listen" => Reply::Raw(
                404,
                "application/json",
                json!({ "jsonrpc": "2.0", "id": req["id"], "error": { "code": -32601, "message": "no listen" } })
                    .to_string(),
            ),
            "tasks/get" => {
                t["resultType"] = json!("complete");
                let n = gets.fetch_add(1, Ordering::SeqCst);
                if n == 0 {
                    // working: the follower subscribes (and is refused), then polls
                } else if n == 1 {
                    t["status"] = json!("input_required");
                    t["inputRequests"] = json!({ "k": { "method": "elicitation/create", "params": { "message": "Name?",
                        "requestedSchema": { "type": "object", "properties": { "name": { "type": "string" } } } } } });
                } else {
                    t["status"] = json!("completed");
                    t["result"] = json!({ "resultType": "complete", "content": [{ "type": "text", "text": "ok" }] });
                }
                Reply::Result(t)
            }
            _ => Reply::Result(json!({ "resultType": "complete" })),
        }
    })
    .await;
    let c = client(&url, Recorder::new("ada")).connect().await.unwrap();
    let CallOutcome::Task(t) = guard("call", c.call_tool("go", json!({ "region": "eu" }))).await.unwrap() else {
        panic!("a task")
    };
    assert!(matches!(guard("wait", t.wait()).await.unwrap(), ToolOutcome::Completed(_)));
    guard("cancel", t.cancel()).await.unwrap();

    let core = schema("mcp-2026-07-28.schema.json");
    let tasks = schema("tasks-extension.schema.json");
    let seen = seen.lock().unwrap().clone();
    let mut methods: Vec<&str> = seen.iter().filter_map(|r| r["method"].as_str()).collect();
    methods.dedup();
    for m in [
        "server/discover",
        "tools/list",
        "tools/call",
        "subscriptions/listen",
        "tasks/get",
        "tasks/update",
        "tasks/cancel",
    ] {
        assert!(methods.contains(&m), "{m} never sent: {methods:?}");
    }
    for r in &seen {
        check(&core, "JSONRPCRequest", r);
        match r["method"].as_str().unwrap() {
            "server/discover" => check(&core, "DiscoverRequest", r),
            "tools/list" => check(&core, "ListToolsRequest", r),
            "tools/call" => check(&core, "CallToolRequest", r),
            "subscriptions/listen" => check(&core, "SubscriptionsListenRequest", r),
            "tasks/get" => check(&tasks, "GetTaskRequest", r),
            "tasks/update" => check(&tasks, "UpdateTaskRequest", r),
            "tasks/cancel" => check(&tasks, "CancelTaskRequest", r),
            other => panic!("unexpected {other}"),
        }
    }
    // The validator does reject: a call without its tool name, a get without its task id.
    let mut bad = seen.iter().find(|r| r["method"] == "tools/call").unwrap().clone();
    bad["params"].as_object_mut().unwrap().remove("name");
    assert!(!errors(&core, "CallToolRequest", &bad).is_empty());
    let mut bad = seen.iter().find(|r| r["method"] == "tasks/get").unwrap().clone();
    bad["params"].as_object_mut().unwrap().remove("taskId");
    assert!(!errors(&tasks, "GetTaskRequest", &bad).is_empty());
    let retry = seen.iter().find(|r| r["params"]["inputResponses"].is_object()).expect("an MRTR retry");
    assert_eq!(retry["params"]["requestState"], "opaque-1");
}
