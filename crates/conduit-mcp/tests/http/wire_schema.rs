//! What the server sends on the modern era, validated against the official
//! JSON Schemas (`tests/schema`, copied unchanged): the 2026-07-28 core schema
//! for discover, lists, calls, errors and notifications, and the Tasks
//! extension's for task creation, `tasks/get`, `tasks/update`, `tasks/cancel`
//! and `notifications/tasks`. Every message comes over a real socket.

use crate::common;

use common::*;
use conduit_mcp::ext::tasks::{Tasks, TasksConfig};
use conduit_mcp::prelude::*;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

const TASKS: &str = "io.modelcontextprotocol/tasks";

fn load(file: &str) -> Value {
    let p = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/schema").join(file);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).expect("schema JSON")
}

/// The two schemas: the core one and the extension's.
fn schemas() -> &'static (Value, Value) {
    static S: OnceLock<(Value, Value)> = OnceLock::new();
    S.get_or_init(|| (load("mcp-2026-07-28.schema.json"), load("tasks-extension.schema.json")))
}

/// Asserts that `v` is a valid `def` of the core schema (`ext`: of the extension's).
#[track_caller]
fn assert_def(ext: bool, def: &str, v: &Value) {
    type Cache = Mutex<HashMap<(bool, String), Arc<jsonschema::Validator>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let validator = {
        let mut c = CACHE.get_or_init(Mutex::default).lock().expect("cache");
        c.entry((ext, def.to_owned()))
            .or_insert_with(|| {
                let (core, tasks) = schemas();
                let mut root = if ext { tasks.clone() } else { core.clone() };
                root["$ref"] = json!(format!("#/$defs/{def}"));
                Arc::new(jsonschema::validator_for(&root).expect("the schema compiles"))
            })
            .clone()
    };
    let errors: Vec<String> = validator.iter_errors(v).map(|e| format!("{e} at {}", e.instance_path())).collect();
    assert!(errors.is_empty(), "not a valid {def}: {errors:?}\n{v:#}");
}

fn treq(id: i64, method: &str, mut params: Value) -> Value {
    params["_meta"] = meta_with(json!({ "elicitation": {}, "extensions": { TASKS: {} } }));
    req(id, method, params)
}

fn server() -> (Server, Tasks) {
    let tasks = Tasks::new(TasksConfig::enabled()).expect("config");
    let server = Server::builder("schema", "1.0.0")
        .extension(tasks.clone())
        .tool(echo_tool())
        .tool(Tool::new("job", "a task a worker finishes").handle(|_c, _a| async { Ok(TaskSpec::new()) }))
        .build()
        .expect("server");
    (server, tasks)
}

#[tokio::test]
async fn discover_lists_calls_and_errors_match_the_core_schema() {
    let (server, _tasks) = server();
    let h = start(server).await;
    let r = h.send(&req(1, "server/discover", json!({}))).await.assert_ok(&json!(1));
    assert_def(false, "DiscoverResult", &r);
    let r = h.send(&req(2, "tools/list", json!({}))).await.assert_ok(&json!(2));
    assert_def(false, "ListToolsResult", &r);
    let r = h.send(&call(3, "echo", json!({ "text": "hi" }))).await.assert_ok(&json!(3));
    assert_def(false, "CallToolResult", &r);
    // Errors: an unknown method, bad params, a missing capability.
    for (body, code) in [
        (req(4, "no/such", json!({})), -32601),
        (req(5, "tools/call", json!({ "name": "echo", "arguments": "not an object" })), -32602),
    ] {
        let r = h.send(&body).await;
        assert_eq!(r.code(), Some(code), "{:?}", r.body);
        assert_def(false, "JSONRPCErrorResponse", &r.body);
    }
}

#[tokio::test]
async fn task_messages_match_the_extension_schema() {
    let (server, tasks) = server();
    let h = start(server).await;
    let created = h.send(&treq(1, "tools/call", json!({ "name": "job" }))).await.assert_ok(&json!(1));
    assert_def(true, "CreateTaskResult", &created);
    let id = created["taskId"].as_str().expect("taskId").to_owned();

    let get = h.send(&treq(2, "tasks/get", json!({ "taskId": id }))).await.assert_ok(&json!(2));
    assert_def(true, "GetTaskResult", &get);

    // A listen stream: its acknowledgment, then one notification per change.
    let listen = treq(3, "subscriptions/listen", json!({ "notifications": { "taskIds": [id] } }));
    let mut stream = h.open(&listen).await;
    let ack = guard("the ack", stream.next()).await.expect("ack");
    assert_def(false, "SubscriptionsAcknowledgedNotification", &ack);

    let questions = [(
        "name".to_owned(),
        mrtr::elicit(
            "Your name?",
            json!({ "type": "object", "properties": { "n": { "type": "string" } }, "required": ["n"] }),
        ),
    )];
    tasks.require_input(&id, questions.into_iter().collect(), Some("asking".into())).await.expect("ask");
    let n = guard("input_required", stream.next()).await.expect("notification");
    assert_def(true, "TaskStatusNotification", &n);
    assert_eq!(n["params"]["status"], "input_required", "{n}");
    let get = h.send(&treq(4, "tasks/get", json!({ "taskId": id }))).await.assert_ok(&json!(4));
    assert_def(true, "GetTaskResult", &get);

    let answer =
        json!({ "taskId": id, "inputResponses": { "name": { "action": "accept", "content": { "n": "ada" } } } });
    let upd = h.send(&treq(5, "tasks/update", answer)).await.assert_ok(&json!(5));
    assert_def(true, "UpdateTaskResult", &upd);

    let cancelled = h.send(&treq(6, "tasks/cancel", json!({ "taskId": id }))).await.assert_ok(&json!(6));
    assert_def(true, "CancelTaskResult", &cancelled);
    // The notifications that followed (the answer, the cancel) match too, the last one terminal.
    let last = loop {
        let n = guard("a later notification", stream.next()).await.expect("notification");
        if n.get("method").is_some() {
            assert_def(true, "TaskStatusNotification", &n);
            if n["params"]["status"] == "cancelled" {
                break n;
            }
        }
    };
    assert_eq!(last["params"]["taskId"], id.as_str());
    // A foreign or missing task: the same error, valid as an error response.
    let missing = h.send(&treq(7, "tasks/get", json!({ "taskId": "x".repeat(43) }))).await;
    assert_def(false, "JSONRPCErrorResponse", &missing.body);
}
