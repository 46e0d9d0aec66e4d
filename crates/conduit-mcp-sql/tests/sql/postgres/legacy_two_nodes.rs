//! Two reference servers on one PostgreSQL schema, serving the 2025-11-25 era
//! over real sockets: a session opened on node A serves requests on node B
//! (`PostgresSessionStore`), a legacy task created on A is read and listed on
//! B (`PostgresLegacyStore`), and a `tasks/result` blocked on B answers as
//! soon as A's worker completes the task (`PgNotifier` on the legacy
//! runtime). Each node opens its stores as a user would, with `Stores`.
//! Every result is validated against the official 2025-11-25 schema. Needs
//! `DATABASE_URL`.

use crate::support;

use support::legacy_session;
use support::served::{self, Served};

use support::assert_legacy_schema as assert_schema;

use conduit_mcp::ext::tasks::{LegacyTasks, Owner, TaskRecord, new_task_id};
use conduit_mcp::prelude::*;
use conduit_mcp::session::SessionConfig;
use conduit_mcp_sql::StoresOptions;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::Notify;

const LV: &str = "2025-11-25";

/// One node: its server's endpoint and its legacy runtime.
struct Node {
    served: Served,
    legacy: LegacyTasks,
}

async fn node(url: &str, schema: &str, gate: Arc<Notify>) -> Node {
    // What a user writes: every store (and the notifiers) from one URL.
    let stores = StoresOptions::new(url).schema(schema).open().await.expect("stores");
    let tasks = stores.tasks(TasksConfig::enabled()).expect("config");
    let legacy = tasks.legacy().expect("the stores pair a legacy runtime").clone();
    let server = Server::builder("two-nodes", "1.0.0")
        .sessions(stores.sessions(SessionConfig::default()))
        .extension(tasks)
        .tool(Tool::new("gated_job", "Ends when the test opens the gate").task_support(TaskSupport::Optional).handle(
            move |_ctx, _args| {
                let gate = gate.clone();
                async move {
                    Ok(ToolOutput::Task(TaskSpec::new().status_message("waiting").spawn(move |_task| async move {
                        gate.notified().await;
                        Ok(CallToolResult::text("job done"))
                    })))
                }
            },
        ))
        .build()
        .expect("server");
    Node { served: served::serve(server, HttpConfig::default()).await, legacy }
}

/// POSTs a legacy request inside `session` to `url`; returns the response message.
async fn call(url: &str, session: &str, id: u64, method: &str, params: Value) -> Value {
    let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
    let r = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", LV)
        .body(body.to_string())
        .send()
        .await
        .expect("sent");
    assert_eq!(r.status(), 200, "{method} inside the session");
    let text = r.text().await.expect("body");
    // JSON, or an SSE stream whose last message answers the request.
    let messages: Vec<Value> = if text.trim_start().starts_with('{') {
        vec![serde_json::from_str(&text).expect("JSON")]
    } else {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .collect()
    };
    messages.into_iter().find(|m| m["id"] == id && m.get("method").is_none()).expect("the response")
}

/// Returns once `b` hears a change `a` writes (its notifier listens), well before any backstop.
async fn listening(a: &LegacyTasks, b: &LegacyTasks) {
    let probe = TaskRecord::new(new_task_id(), Some("probe".into()), a.store().now_ms(), Some(60_000));
    let probe = a.create(probe).await.expect("probe");
    for n in 0..50 {
        let reads = Arc::new(AtomicUsize::new(0));
        let ping = format!("ping {n}");
        let waiter = {
            let (b, id, reads, ping) = (b.clone(), probe.task_id.clone(), reads.clone(), ping.clone());
            tokio::spawn(async move {
                b.wait(&id, Owner::Any, move |r| {
                    reads.fetch_add(1, Ordering::SeqCst);
                    r.status_message.as_deref() == Some(ping.as_str())
                })
                .await
            })
        };
        while reads.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        a.progress(&probe.task_id, ping).await.expect("progress");
        if tokio::time::timeout(Duration::from_millis(200), waiter).await.is_ok() {
            return;
        }
    }
    panic!("node b never heard node a");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_and_its_legacy_task_are_served_by_either_node() {
    let Some(url) = support::pg_url("a_session_and_its_legacy_task_are_served_by_either_node") else { return };
    let schemas = support::Schemas::new(&url);
    let schema = schemas.fresh();
    let gate = Arc::new(Notify::new());
    let a = node(&url, &schema, gate.clone()).await;
    let b = node(&url, &schema, Arc::new(Notify::new())).await;
    listening(&a.legacy, &b.legacy).await;

    let session = legacy_session::initialize(&a.served.url, "two-nodes").await;
    let created =
        call(&a.served.url, &session, 1, "tools/call", json!({ "name": "gated_job", "task": { "ttl": 600_000 } }))
            .await;
    assert_schema("CreateTaskResult", &created["result"]);
    let id = created["result"]["task"]["taskId"].as_str().expect("a task id").to_owned();
    // The session opened on a, and the task created there, are served by b.
    let got = call(&b.served.url, &session, 2, "tasks/get", json!({ "taskId": id })).await;
    assert_schema("GetTaskResult", &got["result"]);
    assert_eq!(got["result"]["status"], "working");
    let listed = call(&b.served.url, &session, 3, "tasks/list", json!({})).await;
    assert_schema("ListTasksResult", &listed["result"]);
    assert_eq!(listed["result"]["tasks"][0]["taskId"], id);
    // tasks/result blocks on b until a's worker finishes.
    let result = {
        let (url, session, id) = (b.served.url.clone(), session.clone(), id.clone());
        tokio::spawn(async move { call(&url, &session, 4, "tasks/result", json!({ "taskId": id })).await })
    };
    while !b.legacy.awaited().contains(&id) {
        tokio::task::yield_now().await;
    }
    assert!(!result.is_finished(), "a working task keeps tasks/result waiting");
    gate.notify_one();
    // b's own re-read is 10 s away: only the notifier answers this soon.
    let answer = tokio::time::timeout(Duration::from_secs(5), result).await.expect("woken through PgNotifier");
    let answer = answer.expect("join");
    assert_schema("CallToolResult", &answer["result"]);
    assert_eq!(answer["result"]["content"][0]["text"], "job done");
    assert_eq!(answer["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], id);
    let got = call(&b.served.url, &session, 5, "tasks/get", json!({ "taskId": id })).await;
    assert_eq!(got["result"]["status"], "completed");
}
