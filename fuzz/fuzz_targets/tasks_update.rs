//! `tasks/update` answers against outstanding requests: whatever a client
//! sends as `inputResponses`, the server answers with a result or a
//! client error (never `-32603`), the task is never failed by it, and an
//! answer is kept only under a key that was asked.
#![no_main]

use conduit_mcp::clock::ManualClock;
use conduit_mcp::ext::tasks::sweep;
use conduit_mcp::ext::tasks::{Tasks, TasksConfig};
use conduit_mcp::mrtr;
use conduit_mcp::prelude::*;
use conduit_mcp::protocol::jsonrpc::message::Request;
use conduit_mcp::server::RequestEnv;
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use tokio_util::sync::CancellationToken;

struct World {
    rt: tokio::runtime::Runtime,
    server: Server,
    tasks: Tasks,
    clock: Arc<ManualClock>,
}

fn world() -> &'static World {
    static W: OnceLock<World> = OnceLock::new();
    W.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let clock = Arc::new(ManualClock::new(1_000_000));
        let tasks = Tasks::with_clock(TasksConfig::enabled().max_rows(None), clock.clone()).expect("tasks");
        let server = Server::builder("fuzz", "1")
            .extension(tasks.clone())
            .tool(Tool::new("wait", "waits for a worker").handle(|_c, _a| async { Ok(TaskSpec::new()) }))
            .build()
            .expect("server");
        World { rt, server, tasks, clock }
    })
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": { "elicitation": {}, "extensions": { "io.modelcontextprotocol/tasks": {} } }
    })
}

async fn call(server: &Server, id: i64, method: &str, params: Value) -> Value {
    let r = Request::new(id, method, Some(params));
    server.handle_request(r, RequestEnv::new(None, CancellationToken::new(), None)).await.to_value()
}

fuzz_target!(|data: &[u8]| {
    let w = world();
    let responses: Value = serde_json::from_slice(data).unwrap_or_else(|_| json!(String::from_utf8_lossy(data)));
    w.rt.block_on(async {
        let c = call(&w.server, 1, "tools/call", json!({ "name": "wait", "_meta": meta() })).await;
        let id = c["result"]["taskId"].as_str().expect("a task").to_owned();
        let schema = json!({ "type": "object", "properties": { "ok": { "type": "boolean" } } });
        let asked: BTreeMap<String, _> =
            [("a".to_owned(), mrtr::elicit("a?", schema.clone())), ("b".to_owned(), mrtr::elicit("b?", schema))].into();
        w.tasks.require_input(&id, asked, None).await.expect("ask");
        let params = json!({ "taskId": id, "inputResponses": responses, "_meta": meta() });
        let u = call(&w.server, 2, "tasks/update", params).await;
        if let Some(code) = u["error"]["code"].as_i64() {
            assert_ne!(code, -32603, "an update must not be an internal error: {u}");
        }
        let rec = w.tasks.status(&id).await.expect("still there");
        assert!(!rec.is_terminal(), "an update ended the task: {u}");
        for k in rec.input_responses.keys() {
            assert!(k == "a" || k == "b", "an answer under a key never asked: {k}");
        }
        let _ = w.tasks.complete(&id, CallToolResult::text("done"), None).await;
        // Every task expires before the next run, and is swept: memory stays flat.
        w.clock.advance(2 * 3_600_000);
        let _ = sweep(&w.tasks).await;
    });
});
