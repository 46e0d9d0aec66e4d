//! The 2025-11-25 era over a real socket, on the same endpoint as the modern
//! era: the handshake, sessions, the SSE lane, server→client requests and
//! legacy tasks. Every message the server sends is validated against the
//! official 2025-11-25 JSON Schema (`legacy_common`).

use crate::common;
use crate::legacy_common;

use common::{V, req, start, start_with};
use conduit_mcp::auth::{BearerTokens, Principal};
use conduit_mcp::clock::ManualClock;
use conduit_mcp::ext::tasks::legacy_store::LegacyTasks;
use conduit_mcp::ext::tasks::{Tasks, TasksConfig};
use conduit_mcp::prelude::*;
use conduit_mcp::session::SessionConfig;
use legacy_common::*;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

const T0: u64 = 1_800_000_000_000;

/// Shared signals between a test and its server's tools.
#[derive(Default)]
struct Signals {
    /// Lets `gate` (and the `gated` task) finish.
    open: Notify,
    /// Fired when `gate` finished its work.
    finished: Notify,
    /// Fired when `cancellable` was stopped.
    cancelled: Notify,
}

/// Tells the test when a tool's future is dropped (its request was stopped).
struct OnDrop(Arc<Signals>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        self.0.cancelled.notify_one();
    }
}

fn tools(b: ServerBuilder, sig: &Arc<Signals>) -> ServerBuilder {
    let (s1, s2, s3) = (sig.clone(), sig.clone(), sig.clone());
    b.tool(common::echo_tool())
        .tool(Tool::new("progress", "Reports progress twice").task_support(TaskSupport::Forbidden).handle(
            |ctx, _args| async move {
                ctx.progress(1.0, Some(2.0), None);
                ctx.progress(2.0, Some(2.0), None);
                ctx.log("info", json!("half way"));
                ctx.log("debug", json!("details"));
                Ok(CallToolResult::text("done"))
            },
        ))
        .tool(Tool::new("ask", "Asks the user's name").handle(|ctx, _args| async move {
            if let Some(a) = ctx.input_response("name") {
                return Ok(
                    CallToolResult::text(format!("Hello, {}!", a["content"]["name"].as_str().unwrap_or("?"))).into()
                );
            }
            let schema =
                json!({ "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"] });
            Ok(ToolOutput::from(InputRequired::new().request("name", mrtr::elicit("Your name?", schema))))
        }))
        .tool(Tool::new("sample", "Asks the client to sample").handle(|ctx, _args| async move {
            if let Some(a) = ctx.input_response("s") {
                return Ok(
                    CallToolResult::text(format!("sampled: {}", a["content"]["text"].as_str().unwrap_or("?"))).into()
                );
            }
            Ok(ToolOutput::from(InputRequired::new().request("s", mrtr::sample_text("hi", 10))))
        }))
        .tool(Tool::new("gate", "Finishes when the test opens the gate").handle(move |_ctx, _args| {
            let s = s1.clone();
            async move {
                s.open.notified().await;
                s.finished.notify_one();
                Ok(CallToolResult::text("through"))
            }
        }))
        .tool(Tool::new("cancellable", "Runs until it is stopped").handle(move |_ctx, _args| {
            let s = s2.clone();
            async move {
                let _stopped = OnDrop(s);
                std::future::pending::<()>().await;
                Ok(CallToolResult::text("never"))
            }
        }))
        .tool(Tool::new("reconnect", "Closes its stream, then answers").handle(|ctx, _args| async move {
            assert!(ctx.close_stream(), "a legacy HTTP request can close its stream");
            Ok(CallToolResult::text("after the reconnection"))
        }))
        .tool(
            Tool::new("gated_job", "A task that ends when the test opens the gate")
                .task_support(TaskSupport::Optional)
                .handle(move |_ctx, _args| {
                    let s = s3.clone();
                    async move {
                        Ok(ToolOutput::Task(TaskSpec::new().status_message("waiting").spawn(move |_task| async move {
                            s.open.notified().await;
                            Ok(CallToolResult::text("job done"))
                        })))
                    }
                }),
        )
        .tool(Tool::new("only_task", "Runs only as a task").task_support(TaskSupport::Required).handle(
            |_ctx, _args| async move {
                Ok(ToolOutput::Task(TaskSpec::new().spawn(|_t| async move { Ok(CallToolResult::error("it broke")) })))
            },
        ))
        .tool(
            Tool::new("confirm_job", "A task that asks for a confirmation mid-flight")
                .task_support(TaskSupport::Required)
                .handle(|_ctx, _args| async move {
                    Ok(ToolOutput::Task(TaskSpec::new().spawn(|task| async move {
                        let schema = json!({ "type": "object", "properties": { "ok": { "type": "boolean" } } });
                        let answer = task
                            .input("ok", mrtr::elicit("Proceed?", schema))
                            .await
                            .map_err(|e| RpcError::internal(e.to_string()))?;
                        Ok(CallToolResult::text(format!("confirmed: {}", answer["content"]["ok"])))
                    })))
                }),
        )
        .tool(Tool::new("open_url", "Needs the user to visit a URL").handle(|ctx, _args| async move {
            if ctx.input_response("visit").is_some() {
                return Ok(CallToolResult::text("visited").into());
            }
            let ask = mrtr::elicit_url("Please sign in", "https://example.com/login", "el-1");
            Ok(ToolOutput::from(InputRequired::new().request("visit", ask)))
        }))
        .resource(
            Resource::new("test://watched", "Watched")
                .mime_type("text/plain")
                .read(|_ctx, uri| async move { Ok(ResourceContents::text(uri, "text/plain", "hello")) }),
        )
}

fn server_with(sig: &Arc<Signals>, clock: ManualClock, sessions: SessionConfig) -> Server {
    let clock: Arc<dyn conduit_mcp::clock::Clock> = Arc::new(clock);
    let legacy = LegacyTasks::with_clock(TasksConfig::enabled(), clock.clone()).expect("valid config");
    let tasks = Tasks::with_clock(TasksConfig::enabled(), clock.clone()).expect("valid config");
    tasks.drive_legacy(&legacy);
    tools(Server::builder("legacy", "1.0.0").clock(clock), sig)
        .sessions(sessions)
        .extension(tasks)
        .build()
        .expect("valid server")
}

fn server(sig: &Arc<Signals>) -> Server {
    server_with(sig, ManualClock::new(T0), SessionConfig::default())
}

#[tokio::test]
async fn handshake_negotiates_down_and_legacy_results_carry_no_modern_stamps() {
    let sig = Arc::new(Signals::default());
    let h = start(server(&sig)).await;
    for (asked, answered) in [("2025-11-25", "2025-11-25"), ("2025-06-18", "2025-06-18"), ("2031-01-01", "2025-11-25")]
    {
        let mut c = Legacy::new(&h.url);
        let r = c.initialize_as(asked, json!({})).await;
        assert_eq!(r["protocolVersion"], answered, "asked {asked}");
        let sid = c.session.clone().expect("a session");
        assert_eq!(sid.len(), 64);
        assert!(sid.bytes().all(|b| (0x21..=0x7e).contains(&b)), "visible ASCII");
        assert!(r["capabilities"].get("extensions").is_none(), "no extensions key on 2025-11-25");
        assert_eq!(r["capabilities"]["tasks"]["requests"]["tools"]["call"], json!({}));
        assert!(r["capabilities"].get("logging").is_some());
        assert_eq!(r["serverInfo"]["name"], "legacy");
    }
    let mut c = Legacy::new(&h.url);
    c.initialize(json!({})).await;
    assert_eq!(c.result(1, "ping", json!({})).await, json!({}), "ping is exactly {{}}");
    assert_eq!(c.result(2, "logging/setLevel", json!({ "level": "info" })).await, json!({}));
    assert_eq!(c.error(3, "logging/setLevel", json!({ "level": "loud" })).await["code"], -32602);
    let tools = c.result(4, "tools/list", json!({})).await;
    assert_schema("ListToolsResult", &tools);
    for k in ["resultType", "ttlMs", "cacheScope", "_meta"] {
        assert!(tools.get(k).is_none(), "no {k} on a legacy result: {tools}");
    }
    let by_name = |n: &str| tools["tools"].as_array().unwrap().iter().find(|t| t["name"] == n).cloned().unwrap();
    assert_eq!(by_name("gated_job")["execution"]["taskSupport"], "optional");
    assert_eq!(by_name("only_task")["execution"]["taskSupport"], "required");
    assert_eq!(by_name("progress")["execution"]["taskSupport"], "forbidden");
    let r = c.result(5, "tools/call", json!({ "name": "echo", "arguments": { "text": "hi" } })).await;
    assert_schema("CallToolResult", &r);
    assert!(r.get("resultType").is_none() && r.get("_meta").is_none(), "{r}");
    let e = c.error(6, "resources/read", json!({ "uri": "test://nope" })).await;
    assert_eq!(e["code"], -32002, "resource not found is -32002 on this era");
    assert_eq!(c.result(7, "resources/read", json!({ "uri": "test://watched" })).await["contents"][0]["text"], "hello");
    assert_eq!(c.error(8, "server/discover", json!({})).await["code"], -32601, "no discover inside a session");
    assert_eq!(c.error(9, "subscriptions/listen", json!({})).await["code"], -32601);
    // initialize twice in one session: an invalid request, answered at once as a JSON 400.
    let again = rpc(
        10,
        "initialize",
        json!({ "protocolVersion": LV, "capabilities": {}, "clientInfo": { "name": "x", "version": "1" } }),
    );
    let r = c.post(&again).await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST, "initialize inside a session is a 400");
    let e: Value = serde_json::from_str(&r.text().await.expect("body")).expect("JSON");
    assert_message(&e);
    assert_eq!(e["error"]["code"], -32600);
    assert_eq!(c.result(11, "ping", json!({})).await, json!({}), "the session still serves");
}

#[tokio::test]
async fn sessions_are_bound_to_their_principal_expire_when_idle_and_end_on_delete() {
    let sig = Arc::new(Signals::default());
    let clock = ManualClock::new(T0);
    let sessions = SessionConfig::default().idle_timeout(Duration::from_secs(60));
    let tokens = BearerTokens::new().token("alice", Principal::new("alice")).token("bob", Principal::new("bob"));
    let h = start_with(server_with(&sig, clock.clone(), sessions), HttpConfig::default().auth(tokens)).await;
    let mut alice = Legacy::new(&h.url).with_token("alice");
    alice.initialize(json!({})).await;
    let mut bob = alice.clone();
    bob.token = Some("bob".into());
    let r = bob.post(&rpc(1, "ping", json!({}))).await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND, "another principal's session is unknown to it");
    assert_eq!(alice.result(2, "ping", json!({})).await, json!({}), "and the owner keeps it");
    // Idle expiry, on the injected clock.
    clock.advance(59_000);
    assert_eq!(alice.result(3, "ping", json!({})).await, json!({}), "touched: idle counts from here");
    clock.advance(61_000);
    assert_eq!(alice.post(&rpc(4, "ping", json!({}))).await.status(), StatusCode::NOT_FOUND, "expired");
    // DELETE ends a session; then it is gone.
    let mut a2 = Legacy::new(&h.url).with_token("alice");
    a2.initialize(json!({})).await;
    let mut b2 = a2.clone();
    b2.token = Some("bob".into());
    assert_eq!(b2.delete().await.status(), StatusCode::NOT_FOUND, "bob cannot end alice's session");
    assert_eq!(a2.delete().await.status(), StatusCode::NO_CONTENT);
    assert_eq!(a2.post(&rpc(5, "ping", json!({}))).await.status(), StatusCode::NOT_FOUND);
    assert_eq!(a2.delete().await.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_cap_refuses_clearly_then_evicts_the_oldest_idle_session() {
    let sig = Arc::new(Signals::default());
    let clock = ManualClock::new(T0);
    let sessions = SessionConfig::default().max_sessions(2).evict_idle_after(Duration::from_secs(60));
    // Three principals: each holds its one session (a quarter of two, at least one).
    let mut tokens = BearerTokens::new();
    for p in ["first", "second", "third"] {
        tokens = tokens.token(p, Principal::new(p));
    }
    let h = start_with(server_with(&sig, clock.clone(), sessions), HttpConfig::default().auth(tokens)).await;
    let mut first = Legacy::new(&h.url).with_token("first");
    first.initialize(json!({})).await;
    clock.advance(1_000);
    let mut second = Legacy::new(&h.url).with_token("second");
    second.initialize(json!({})).await;
    let body = rpc(
        0,
        "initialize",
        json!({ "protocolVersion": LV, "capabilities": {},
        "clientInfo": { "name": "third", "version": "1" } }),
    );
    let r = Legacy::new(&h.url).with_token("third").post(&body).await;
    assert!(r.headers().get("mcp-session-id").is_none(), "no session over the cap");
    let m: Value = r.json().await.expect("JSON");
    assert_message(&m);
    assert!(m["error"]["message"].as_str().unwrap_or_default().contains("Too many live sessions"), "{m}");
    clock.advance(120_000);
    assert_eq!(second.result(1, "ping", json!({})).await, json!({}));
    clock.advance(61_000);
    let mut third = Legacy::new(&h.url).with_token("third");
    third.initialize(json!({})).await;
    assert_eq!(first.post(&rpc(2, "ping", json!({}))).await.status(), StatusCode::NOT_FOUND, "oldest idle evicted");
    assert_eq!(second.result(3, "ping", json!({})).await, json!({}), "the recently used one is kept");
}

#[tokio::test]
async fn post_streams_have_ids_a_priming_event_and_request_scoped_messages() {
    let sig = Arc::new(Signals::default());
    let h = start(server(&sig)).await;
    let mut c = Legacy::new(&h.url);
    c.initialize(json!({})).await;
    // A request answered at once, with nothing sent before its answer, is plain JSON:
    // no stream, so nothing to resume.
    let quick = c.open(1, "logging/setLevel", json!({ "level": "info" })).await;
    assert!(quick.json, "an immediate answer is application/json: {:?}", quick.headers);
    assert!(quick.headers.get("mcp-session-id").is_none());
    let mut ev = c.open(2, "tools/call", json!({ "name": "progress", "_meta": { "progressToken": "p" } })).await;
    assert!(!ev.json, "a request that sends before its answer streams");
    let first = ev.next().await.expect("the priming event");
    assert!(first.id.is_some() && first.msg.is_none(), "priming: an id and empty data");
    assert!(first.retry.is_some(), "with a retry field");
    let msgs = ev.until_response(&json!(2)).await;
    let progress: Vec<&Value> = msgs.iter().filter(|m| m["method"] == "notifications/progress").collect();
    assert_eq!(progress.len(), 2);
    let logs: Vec<&Value> = msgs.iter().filter(|m| m["method"] == "notifications/message").collect();
    assert_eq!(logs.len(), 1, "debug is below the session's level: {logs:?}");
    assert_eq!(logs[0]["params"]["data"], "half way");
    assert_eq!(msgs.last().unwrap()["result"]["content"][0]["text"], "done");
    assert!(ev.next().await.is_none(), "the stream ends after the response");
}

#[tokio::test]
async fn the_get_stream_carries_list_changes_and_resource_updates() {
    let sig = Arc::new(Signals::default());
    let h = start(server(&sig)).await;
    let mut c = Legacy::new(&h.url);
    c.initialize(json!({})).await;
    let mut get = c.get_stream().await;
    assert_eq!(c.result(1, "resources/subscribe", json!({ "uri": "test://watched" })).await, json!({}));
    h.server.notify_tools_list_changed();
    let (_, m) = get.next_msg().await.expect("list_changed");
    assert_eq!(m["method"], "notifications/tools/list_changed");
    assert!(m["params"].get("_meta").is_none(), "no modern subscription id: {m}");
    h.server.notify_resource_updated("test://watched");
    let (_, m) = get.next_msg().await.expect("updated");
    assert_eq!(m["method"], "notifications/resources/updated");
    assert_eq!(m["params"]["uri"], "test://watched");
    assert_eq!(c.result(2, "resources/unsubscribe", json!({ "uri": "test://watched" })).await, json!({}));
}

#[tokio::test]
async fn a_closed_stream_resumes_with_last_event_id() {
    let sig = Arc::new(Signals::default());
    let h = start(server(&sig)).await;
    let mut c = Legacy::new(&h.url);
    c.initialize(json!({})).await;
    let mut ev = c.open(1, "tools/call", json!({ "name": "reconnect" })).await;
    let mut last = None;
    while let Some(e) = ev.next().await {
        assert!(e.msg.as_ref().is_none_or(|m| m.get("result").is_none()), "no answer before the close");
        last = e.id;
    }
    let last = last.expect("an event id before the close");
    let mut resumed = Events::new(c.get(Some(&last)).await);
    let msgs = resumed.until_response(&json!(1)).await;
    assert_eq!(msgs.last().unwrap()["result"]["content"][0]["text"], "after the reconnection");
}

#[tokio::test]
async fn a_disconnect_is_not_a_cancel_but_notifications_cancelled_is() {
    let sig = Arc::new(Signals::default());
    let h = start(server(&sig)).await;
    let mut c = Legacy::new(&h.url);
    c.initialize(json!({})).await;
    let mut ev = c.open(1, "tools/call", json!({ "name": "gate" })).await;
    ev.next().await.expect("priming");
    drop(ev); // the client goes away
    let finished = sig.finished.notified();
    sig.open.notify_one();
    guard("the tool to finish after the disconnect", finished).await;

    let mut ev = c.open(2, "tools/call", json!({ "name": "cancellable" })).await;
    ev.next().await.expect("priming");
    let cancelled = sig.cancelled.notified();
    let r = c.post(&note("notifications/cancelled", json!({ "requestId": 2, "reason": "test" }))).await;
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    guard("the tool to see its cancellation", cancelled).await;
}

#[tokio::test]
async fn input_required_becomes_real_requests_to_the_client() {
    let sig = Arc::new(Signals::default());
    let h = start(server(&sig)).await;
    let mut c = Legacy::new(&h.url);
    c.initialize(json!({ "elicitation": {}, "sampling": {} })).await;
    let mut ev = c.open(1, "tools/call", json!({ "name": "ask" })).await;
    let (_, ask) = ev.next_msg().await.expect("the server's request");
    assert_eq!(ask["method"], "elicitation/create");
    assert_schema("ElicitRequest", &ask);
    // A response for an id nobody waits on.
    let stray = json!({ "jsonrpc": "2.0", "id": "nobody", "result": { "action": "cancel" } });
    assert_eq!(c.post(&stray).await.status(), StatusCode::BAD_REQUEST);
    let answer =
        json!({ "jsonrpc": "2.0", "id": ask["id"], "result": { "action": "accept", "content": { "name": "Ada" } } });
    assert_eq!(c.post(&answer).await.status(), StatusCode::ACCEPTED);
    let msgs = ev.until_response(&json!(1)).await;
    assert_eq!(msgs.last().unwrap()["result"]["content"][0]["text"], "Hello, Ada!");

    let mut ev = c.open(2, "tools/call", json!({ "name": "sample" })).await;
    let (_, ask) = ev.next_msg().await.expect("sampling request");
    assert_eq!(ask["method"], "sampling/createMessage");
    assert_schema("CreateMessageRequest", &ask);
    let answer = json!({ "jsonrpc": "2.0", "id": ask["id"], "result": { "role": "assistant",
        "content": { "type": "text", "text": "ok" }, "model": "m", "stopReason": "endTurn" } });
    assert_eq!(c.post(&answer).await.status(), StatusCode::ACCEPTED);
    let msgs = ev.until_response(&json!(2)).await;
    assert_eq!(msgs.last().unwrap()["result"]["content"][0]["text"], "sampled: ok");

    // A session that declared nothing: the tool's question becomes a tool error, no request is sent.
    let mut bare = Legacy::new(&h.url);
    bare.initialize(json!({})).await;
    let (before, r) = bare.request(3, "tools/call", json!({ "name": "ask" })).await;
    assert!(before.iter().all(|m| m.get("method").is_none_or(|x| x != "elicitation/create")), "{before:?}");
    assert_eq!(r["result"]["isError"], true, "{r}");
}

#[tokio::test]
async fn legacy_tasks_on_the_wire() {
    let sig = Arc::new(Signals::default());
    let tokens = BearerTokens::new().token("alice", Principal::new("alice")).token("bob", Principal::new("bob"));
    let h = start_with(server(&sig), HttpConfig::default().auth(tokens)).await;
    let mut c = Legacy::new(&h.url).with_token("alice");
    c.initialize(json!({})).await;
    let created = c.result(1, "tools/call", json!({ "name": "gated_job", "task": { "ttl": 60_000 } })).await;
    assert_schema("CreateTaskResult", &created);
    let id = created["task"]["taskId"].as_str().expect("a task id").to_owned();
    assert_eq!(created["task"]["status"], "working");
    assert_eq!(created["task"]["ttl"], 60_000);
    let got = c.result(2, "tasks/get", json!({ "taskId": id })).await;
    assert_schema("GetTaskResult", &got);
    assert_eq!(got["statusMessage"], "waiting");
    let listed = c.result(3, "tasks/list", json!({})).await;
    assert_schema("ListTasksResult", &listed);
    assert!(listed["tasks"].as_array().unwrap().iter().any(|t| t["taskId"] == id));
    assert_eq!(c.error(4, "tasks/list", json!({ "cursor": "tampered" })).await["code"], -32602);
    // Another principal sees nothing of it.
    let mut bob = Legacy::new(&h.url).with_token("bob");
    bob.initialize(json!({})).await;
    assert_eq!(bob.error(5, "tasks/get", json!({ "taskId": id })).await["code"], -32602);
    assert_eq!(bob.error(6, "tasks/result", json!({ "taskId": id })).await["code"], -32602);
    assert_eq!(bob.result(7, "tasks/list", json!({})).await["tasks"], json!([]));
    // tasks/result blocks until the task is terminal, then answers what the call would have.
    let mut waiting = c.open(8, "tools/list", json!({})).await; // (keeps a second stream busy meanwhile)
    waiting.until_response(&json!(8)).await;
    let mut result = c.open(9, "tasks/result", json!({ "taskId": id })).await;
    result.next().await.expect("priming");
    sig.open.notify_one();
    let msgs = result.until_response(&json!(9)).await;
    let r = &msgs.last().unwrap()["result"];
    assert_schema("CallToolResult", r);
    assert_eq!(r["content"][0]["text"], "job done");
    assert_eq!(r["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], id);
    // Cancel: a terminal task is -32602.
    assert_eq!(c.error(10, "tasks/cancel", json!({ "taskId": id })).await["code"], -32602);
    // A task-only tool without params.task is -32601; with it, a tool error is a failed task.
    assert_eq!(c.error(11, "tools/call", json!({ "name": "only_task" })).await["code"], -32601);
    let t = c.result(12, "tools/call", json!({ "name": "only_task", "task": {} })).await;
    let id2 = t["task"]["taskId"].as_str().unwrap().to_owned();
    let r = c.result(13, "tasks/result", json!({ "taskId": id2 })).await;
    assert_eq!(r["isError"], true);
    let got = c.result(14, "tasks/get", json!({ "taskId": id2 })).await;
    assert_eq!(got["status"], "failed");
    assert_eq!(got["statusMessage"], "Tool error: it broke");
    // Cancelling a working task answers the task, cancelled.
    let t = c.result(15, "tools/call", json!({ "name": "gated_job", "task": {} })).await;
    let id3 = t["task"]["taskId"].as_str().unwrap().to_owned();
    let cancelled = c.result(16, "tasks/cancel", json!({ "taskId": id3 })).await;
    assert_schema("CancelTaskResult", &cancelled);
    assert_eq!(cancelled["status"], "cancelled");
    // A tool that may run as a task but answers at once still gives the client its task.
    let t = c.result(17, "tools/call", json!({ "name": "echo", "arguments": { "text": "now" }, "task": {} })).await;
    assert_schema("CreateTaskResult", &t);
    let id4 = t["task"]["taskId"].as_str().unwrap().to_owned();
    assert_eq!(c.result(18, "tasks/result", json!({ "taskId": id4 })).await["content"][0]["text"], "now");
    // A forbidden one ignores params.task and answers.
    let r = c.result(19, "tools/call", json!({ "name": "progress", "task": {} })).await;
    assert_schema("CallToolResult", &r);
}

#[tokio::test]
async fn the_owning_session_hears_its_tasks_status_changes() {
    let sig = Arc::new(Signals::default());
    let h = start(server(&sig)).await;
    let mut c = Legacy::new(&h.url);
    c.initialize(json!({})).await;
    let mut get = c.get_stream().await;
    let created = c.result(1, "tools/call", json!({ "name": "gated_job", "task": { "ttl": 60_000 } })).await;
    let id = created["task"]["taskId"].as_str().expect("a task id").to_owned();
    sig.open.notify_one();
    // The creation itself is not announced (the client has it); the change to completed is.
    let (_, m) = get.next_msg().await.expect("a status notification");
    assert_schema("TaskStatusNotification", &m);
    assert_eq!(m["method"], "notifications/tasks/status");
    assert_eq!(m["params"]["taskId"], id);
    assert_eq!(m["params"]["status"], "completed");
    assert_eq!(c.result(2, "tasks/get", json!({ "taskId": id })).await["status"], "completed");
}

#[tokio::test]
async fn legacy_tasks_are_routed_whatever_enabled_says() {
    // The seed's `ConduitMcp.Tasks` is always routed: a config with `enabled = false` (the
    // default) still serves the legacy tasks methods, where the extension would install nothing.
    let sig = Arc::new(Signals::default());
    let legacy = LegacyTasks::new(TasksConfig::default()).expect("valid config");
    let server = tools(Server::builder("legacy", "1.0.0"), &sig).extension(legacy).build().expect("valid server");
    let h = start(server).await;
    let mut c = Legacy::new(&h.url);
    let init = c.initialize(json!({})).await;
    assert!(init["capabilities"]["tasks"]["list"].is_object(), "capabilities.tasks is declared: {init}");
    let listed = c.result(1, "tasks/list", json!({})).await;
    assert_schema("ListTasksResult", &listed);
    let created = c.result(2, "tools/call", json!({ "name": "only_task", "task": {} })).await;
    assert_schema("CreateTaskResult", &created);
}

#[tokio::test]
async fn the_modern_lane_is_unchanged_beside_sessions() {
    let sig = Arc::new(Signals::default());
    let h = start(server(&sig)).await;
    let c = h.client.clone();
    assert_eq!(c.get(&h.url).send().await.unwrap().status(), StatusCode::METHOD_NOT_ALLOWED, "GET without a session");
    assert_eq!(c.delete(&h.url).send().await.unwrap().status(), StatusCode::METHOD_NOT_ALLOWED);
    let discover = h.send(&req(1, "server/discover", json!({}))).await;
    assert_eq!(discover.assert_ok(&json!(1))["supportedVersions"][0], V);
    // A modern request inside a legacy session is refused.
    let mut l = Legacy::new(&h.url);
    l.initialize(json!({})).await;
    let sid = l.session.clone().unwrap();
    let r = h.send_with(&req(2, "server/discover", json!({})), |hd| common::set(hd, "mcp-session-id", &sid)).await;
    r.assert_error(400, -32600, &json!(2));
    // A legacy version header on a modern request is a header mismatch.
    let r = h.send_with(&req(3, "server/discover", json!({})), |hd| common::set(hd, "mcp-protocol-version", LV)).await;
    r.assert_error(400, -32020, &json!(3));
    // An unknown session id is 404 on every method.
    let mut ghost = Legacy::new(&h.url);
    ghost.session = Some("no-such-session".into());
    assert_eq!(ghost.post(&rpc(4, "ping", json!({}))).await.status(), StatusCode::NOT_FOUND);
    assert_eq!(ghost.get(None).await.status(), StatusCode::NOT_FOUND);
    // A legacy request without a session.
    let r = h
        .client
        .post(&h.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", LV)
        .body(rpc(5, "tools/list", json!({})).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    h.assert_alive().await;
}

#[tokio::test]
async fn url_elicitation_follows_2025_11_25_and_json_only_posts_cannot_be_asked() {
    let sig = Arc::new(Signals::default());
    let h = start(server(&sig)).await;
    // Form-only elicitation: the URL request is the -32042 error naming the elicitation.
    let mut form = Legacy::new(&h.url);
    form.initialize(json!({ "elicitation": {} })).await;
    let e = form.error(1, "tools/call", json!({ "name": "open_url" })).await;
    assert_eq!(e["code"], -32042, "{e}");
    assert_eq!(e["data"]["elicitations"][0]["url"], "https://example.com/login");
    assert_eq!(e["data"]["elicitations"][0]["elicitationId"], "el-1");
    // A client that declared URL mode gets the real request.
    let mut url = Legacy::new(&h.url);
    url.initialize(json!({ "elicitation": { "url": {} } })).await;
    let mut ev = url.open(2, "tools/call", json!({ "name": "open_url" })).await;
    let (_, ask) = ev.next_msg().await.expect("the server's request");
    assert_eq!(ask["params"]["mode"], "url");
    assert_schema("ElicitRequest", &ask);
    let answer = json!({ "jsonrpc": "2.0", "id": ask["id"], "result": { "action": "accept" } });
    assert_eq!(url.post(&answer).await.status(), StatusCode::ACCEPTED);
    assert_eq!(ev.until_response(&json!(2)).await.last().unwrap()["result"]["content"][0]["text"], "visited");
    // A POST that accepts only JSON has no stream for the server's question: it fails at once.
    let mut headers = form.headers();
    headers.insert("accept", reqwest::header::HeaderValue::from_static("application/json"));
    let body = rpc(3, "tools/call", json!({ "name": "ask" }));
    let r = guard("a JSON answer", form.client.post(&form.url).headers(headers).body(body.to_string()).send())
        .await
        .expect("sent");
    assert_eq!(r.headers().get("content-type").and_then(|v| v.to_str().ok()), Some("application/json"));
    let m: Value = r.json().await.expect("JSON");
    assert_message(&m);
    assert!(m["error"]["message"].as_str().is_some_and(|t| t.contains("cannot send requests")), "{m}");
}

#[tokio::test]
async fn tasks_result_carries_the_workers_questions_and_the_answers_reach_it() {
    let sig = Arc::new(Signals::default());
    let h = start(server(&sig)).await;
    let mut c = Legacy::new(&h.url);
    c.initialize(json!({ "elicitation": {} })).await;
    let created = c.result(1, "tools/call", json!({ "name": "confirm_job", "task": { "ttl": 60000 } })).await;
    let id = created["task"]["taskId"].as_str().expect("a task").to_owned();
    let mut ev = c.open(2, "tasks/result", json!({ "taskId": id })).await;
    let (_, ask) = ev.next_msg().await.expect("the worker's question");
    assert_eq!(ask["method"], "elicitation/create");
    assert_schema("ElicitRequest", &ask);
    assert_eq!(ask["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], id);
    let got = c.result(3, "tasks/get", json!({ "taskId": id })).await;
    assert_eq!(got["status"], "input_required");
    let answer =
        json!({ "jsonrpc": "2.0", "id": ask["id"], "result": { "action": "accept", "content": { "ok": true } } });
    assert_eq!(c.post(&answer).await.status(), StatusCode::ACCEPTED);
    let msgs = ev.until_response(&json!(2)).await;
    let r = &msgs.last().unwrap()["result"];
    assert_eq!(r["content"][0]["text"], "confirmed: true");
    assert_eq!(r["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], id);
}
