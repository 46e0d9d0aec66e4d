//! Task or inline, decided by the server: a tool's `TaskSupport` × whether the
//! request declared the Tasks extension. An optional tool called without the
//! declaration runs its `spawn`ed work inline (its progress becomes
//! `notifications/progress`); a required one gets `-32021`; a forbidden one
//! never makes a task; a disabled `TasksConfig` installs nothing.

use crate::common;

use common::*;
use conduit_mcp::ext::tasks::{MemoryStore, Tasks, TasksConfig};
use conduit_mcp::prelude::*;
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::sync::mpsc;

const TASKS: &str = "io.modelcontextprotocol/tasks";

fn declaring() -> Value {
    meta_with(json!({ "extensions": { TASKS: {} } }))
}

fn call_as(id: i64, tool: &str, args: Value, meta: Value) -> Value {
    req(id, "tools/call", json!({ "name": tool, "arguments": args, "_meta": meta }))
}

/// Work reporting `steps` progress messages, then finishing with "did N steps".
fn stepped(steps: u64) -> TaskSpec {
    TaskSpec::new().spawn(move |task| async move {
        for i in 1..=steps {
            task.progress(format!("step {i}/{steps}")).await.map_err(|e| RpcError::internal(e.to_string()))?;
        }
        Ok(CallToolResult::text(format!("did {steps} steps (inline: {})", task.is_inline())))
    })
}

fn tools(b: ServerBuilder, tasks: &Tasks) -> ServerBuilder {
    tasks.resumable(
        "count",
        |_task, args| async move { Ok(CallToolResult::text(format!("counted to {}", args["to"]))) },
    );
    b.tool(Tool::new("optional", "task-optional, spawned work").handle(|_c, _a| async { Ok(stepped(3)) }))
        .tool(
            Tool::new("required", "task-only")
                .task_support(TaskSupport::Required)
                .handle(|_c, _a| async { Ok(stepped(1)) }),
        )
        .tool(
            Tool::new("forbidden", "never a task")
                .task_support(TaskSupport::Forbidden)
                .handle(|_c, _a| async { Ok(stepped(2)) }),
        )
        .tool(
            Tool::new("forbidden_start", "a forbidden tool that returns a start callback")
                .task_support(TaskSupport::Forbidden)
                .handle(|_c, _a| async { Ok(TaskSpec::new().start(|_id| {})) }),
        )
        .tool(Tool::new("queued", "a task finished by a worker").handle(|_c, _a| async { Ok(TaskSpec::new()) }))
        .tool(
            Tool::new("resumable", "registered resumable work")
                .handle(|_c, _a| async { Ok(TaskSpec::new().spawn_resumable("count", json!({ "to": 4 }))) }),
        )
        .tool(Tool::new("asks", "spawned work that asks mid-flight").handle(|_c, _a| async {
            Ok(TaskSpec::new().spawn(|task| async move {
                match task.input("ok", mrtr::elicit("Proceed?", json!({ "type": "object" }))).await {
                    Ok(_) => Ok(CallToolResult::text("answered")),
                    Err(WorkerError::InputUnavailable) => Ok(CallToolResult::error("cannot ask inline")),
                    Err(e) => Err(RpcError::internal(e.to_string())),
                }
            }))
        }))
}

/// The server, its `Tasks` handle, and the store behind it (to count what was stored).
fn server(config: TasksConfig) -> (Server, Tasks, Arc<MemoryStore>) {
    let store = Arc::new(MemoryStore::new());
    let tasks = Tasks::new(config.store(store.clone())).expect("config");
    let server = tools(Server::builder("decision", "1").extension(tasks.clone()), &tasks).build().expect("server");
    (server, tasks, store)
}

#[tokio::test]
async fn an_optional_tool_without_the_declaration_runs_inline() {
    let (server, _tasks, _store) = server(TasksConfig::enabled());
    let h = start(server).await;
    let res = h.send(&call(1, "optional", json!({}))).await.assert_ok(&json!(1));
    assert_eq!(res["resultType"], "complete", "{res}");
    assert_eq!(first_text(&res), "did 3 steps (inline: true)");
    assert!(res.get("taskId").is_none());
    // The same tool becomes a task when the request declares the extension.
    let res = h.send(&call_as(2, "optional", json!({}), declaring())).await.assert_ok(&json!(2));
    assert_eq!(res["resultType"], "task", "{res}");
    // Registered resumable work runs inline too.
    let res = h.send(&call(3, "resumable", json!({}))).await.assert_ok(&json!(3));
    assert_eq!(first_text(&res), "counted to 4");
}

#[tokio::test]
async fn inline_progress_becomes_progress_notifications_when_a_token_is_given() {
    let (server, _tasks, _store) = server(TasksConfig::enabled());
    let h = start(server).await;
    let body = call_as(1, "optional", json!({}), json!({ PV: V, CC: {}, "progressToken": "p-7" }));
    let r = h.send(&body).await;
    assert_eq!(r.content_type(), "text/event-stream", "progress came first, so the answer streams");
    let msgs = r.messages();
    let progress: Vec<&Value> = msgs.iter().filter(|m| m["method"] == "notifications/progress").collect();
    assert_eq!(progress.len(), 3, "{msgs:?}");
    for (i, p) in progress.iter().enumerate() {
        assert_eq!(p["params"]["progressToken"], "p-7");
        assert_eq!(p["params"]["progress"], json!((i + 1) as f64));
        assert_eq!(p["params"]["message"], format!("step {}/3", i + 1));
    }
    let last = msgs.last().expect("the response");
    assert_eq!(last["id"], 1);
    assert_eq!(first_text(&last["result"]), "did 3 steps (inline: true)");
    // Without a token: plain JSON, no notifications.
    let r = h.send(&call(2, "optional", json!({}))).await;
    assert_eq!(r.content_type(), "application/json");
}

#[tokio::test]
async fn a_required_tool_without_the_declaration_is_refused() {
    let (server, tasks, store) = server(TasksConfig::enabled());
    let h = start(server).await;
    let r = h.send(&call(1, "required", json!({}))).await;
    r.assert_error(400, -32021, &json!(1));
    assert_eq!(r.body["error"]["data"]["requiredCapabilities"], json!({ "extensions": { TASKS: {} } }));
    assert!(store.is_empty(), "nothing was stored");
    // Declared: a task, whose work then runs on the server (not inline).
    let res = h.send(&call_as(2, "required", json!({}), declaring())).await.assert_ok(&json!(2));
    assert_eq!(res["resultType"], "task");
    let id = res["taskId"].as_str().expect("taskId");
    let done = guard("the task to finish", async {
        loop {
            let rec = tasks.status(id).await.expect("the task");
            if rec.is_terminal() {
                break rec;
            }
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert_eq!(done.result.expect("a result")["content"][0]["text"], "did 1 steps (inline: false)");
}

#[tokio::test]
async fn a_start_callback_cannot_run_inline() {
    let (server, _tasks, store) = server(TasksConfig::enabled());
    let h = start(server).await;
    // An optional tool returning work the server cannot run itself: the seed's -32021.
    let r = h.send(&call(1, "queued", json!({}))).await;
    r.assert_error(400, -32021, &json!(1));
    assert_eq!(r.body["error"]["data"]["requiredCapabilities"], json!({ "extensions": { TASKS: {} } }));
    assert!(store.is_empty());
}

#[tokio::test]
async fn a_forbidden_tool_never_makes_a_task() {
    let (server, _tasks, store) = server(TasksConfig::enabled());
    let h = start(server).await;
    for (id, meta) in [(1, meta()), (2, declaring())] {
        let res = h.send(&call_as(id, "forbidden", json!({}), meta)).await.assert_ok(&json!(id));
        assert_eq!(res["resultType"], "complete", "{res}");
        assert_eq!(first_text(&res), "did 2 steps (inline: true)");
    }
    // Returning a callback it cannot run inline breaks its own policy: -32603.
    let r = h.send(&call_as(3, "forbidden_start", json!({}), declaring())).await;
    r.assert_error(200, -32603, &json!(3));
    assert!(store.is_empty(), "a forbidden tool stored no task, declared or not");
}

#[tokio::test]
async fn inline_work_cannot_ask_mid_flight() {
    let (server, _tasks, _store) = server(TasksConfig::enabled());
    let h = start(server).await;
    let res = h.send(&call(1, "asks", json!({}))).await.assert_ok(&json!(1));
    assert_eq!(res["isError"], true);
    assert_eq!(first_text(&res), "cannot ask inline");
}

#[tokio::test]
async fn a_disabled_config_installs_nothing() {
    let (server, _tasks, store) = server(TasksConfig::disabled());
    let h = start(server).await;
    let d = h.send(&req(1, "server/discover", json!({}))).await.assert_ok(&json!(1));
    assert!(d["capabilities"].get("extensions").is_none(), "{d}");
    for (n, m) in ["tasks/get", "tasks/update", "tasks/cancel"].into_iter().enumerate() {
        let id = json!(10 + n);
        let body = req(id.clone(), m, json!({ "taskId": "abc", "inputResponses": {}, "_meta": declaring() }));
        h.send(&body).await.assert_error(404, -32601, &id);
    }
    // Spawned work still answers, inline, even for a client that declared the extension.
    let res = h.send(&call_as(2, "optional", json!({}), declaring())).await.assert_ok(&json!(2));
    assert_eq!(first_text(&res), "did 3 steps (inline: true)");
    // A task-only tool cannot run at all.
    h.send(&call_as(3, "required", json!({}), declaring())).await.assert_error(200, -32603, &json!(3));
    assert!(store.is_empty());
}

/// Reports when the work it lives in stops (returns, or is dropped mid-way).
struct OnStop(mpsc::UnboundedSender<&'static str>);

impl Drop for OnStop {
    fn drop(&mut self) {
        let _ = self.0.send("stopped");
    }
}

#[tokio::test]
async fn a_dropped_client_cancels_inline_work() {
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let (done_tx, mut done) = mpsc::unbounded_channel();
    let tasks = Tasks::new(TasksConfig::enabled()).expect("config");
    let server = Server::builder("cancel", "1")
        .extension(tasks.clone())
        .tool(Tool::new("hang", "spawned work waiting for cancellation").handle(move |_c, _a| {
            let (started_tx, done_tx) = (started_tx.clone(), done_tx.clone());
            async move {
                Ok(TaskSpec::new().spawn(move |task| async move {
                    let _stop = OnStop(done_tx.clone());
                    let _ = started_tx.send(());
                    tokio::select! {
                        _ = task.cancelled() => {}
                        // Only a cancellation ends this work.
                        () = std::future::pending::<()>() => { let _ = done_tx.send("ran on"); }
                    }
                    Ok(CallToolResult::text("never seen"))
                }))
            }
        }))
        .build()
        .expect("server");
    let h = start(server).await;
    let pending = tokio::spawn(h.post_with(&call(1, "hang", json!({})), |_| {}).send());
    guard("the work to start", started.recv()).await.expect("started");
    pending.abort();
    assert!(pending.await.expect_err("aborted").is_cancelled());
    let report = guard("the work to stop", done.recv()).await;
    assert_eq!(report, Some("stopped"), "the inline work stopped because its request went away");
    h.assert_alive().await;
}
