//! The client's one `events/stream` of `task.status_changed`, on our server
//! over a real socket: twenty tasks followed at once (listen push off, an
//! hour between polls) each reach their result, and the server sees exactly
//! one `events/stream` request for all of them; once none is followed the
//! stream is closed, and the next followed task opens a new one. A stream
//! the network cuts after its first occurrence is reopened from its cursor,
//! and what happened meanwhile still arrives.

use crate::common;

use axum::body::Body;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use common::guard;
use conduit_mcp::auth::{BearerTokens, Principal};
use conduit_mcp::client::{CallOutcome, Client, ClientBuilder, TaskEvent, TaskHandle, ToolOutcome};
use conduit_mcp::ext::events::{Events, EventsConfig};
use conduit_mcp::ext::tasks::{Tasks, TasksConfig};
use conduit_mcp::prelude::*;
use conduit_mcp::protocol::tasks::TaskStatus;
use conduit_mcp::testing::RequestLog;
use conduit_mcp::transport::http;
use futures_util::StreamExt;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const HOUR: Duration = Duration::from_secs(3600);
const FOLLOWED: usize = 20;

/// What the server saw: requests by method ([`RequestLog`]), the cursor
/// each `events/stream` asked for, and whether to cut the first one's answer
/// after its first occurrence.
#[derive(Clone, Default)]
struct Seen {
    log: RequestLog,
    stream_cursors: Arc<Mutex<Vec<Value>>>,
    cut_first_stream: bool,
}

impl Seen {
    fn count(&self, method: &str) -> usize {
        self.log.seen().count(method)
    }
}

/// For an `events/stream`, notes its cursor and (the first, when asked)
/// ends its answer right after the first occurrence.
async fn record(seen: Seen, req: Request, next: Next) -> Response {
    if req.headers().get("mcp-method").is_none_or(|m| m != "events/stream") {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    let bytes = axum::body::to_bytes(body, 1 << 16).await.expect("a small request");
    let sent: Value = serde_json::from_slice(&bytes).expect("JSON");
    let first = {
        let mut cursors = seen.stream_cursors.lock().unwrap();
        cursors.push(sent["params"]["cursor"].clone());
        cursors.len() == 1
    };
    let resp = next.run(Request::from_parts(parts, Body::from(bytes))).await;
    if !(seen.cut_first_stream && first) {
        return resp;
    }
    let (parts, body) = resp.into_parts();
    let mut passed = false;
    let cut = body.into_data_stream().take_while(move |chunk| {
        let go = !passed;
        passed |= chunk.as_ref().is_ok_and(|c| String::from_utf8_lossy(c).contains("notifications/events/event"));
        std::future::ready(go)
    });
    Response::from_parts(parts, Body::from_stream(cut))
}

/// A server with Tasks (a `job` tool whose task the test moves on) and
/// `task.status_changed`, behind a layer that counts requests by method
/// and one that watches the `events/stream` requests.
async fn server(seen: Seen) -> (String, Tasks, tokio::task::JoinHandle<()>) {
    let tasks = Tasks::new(TasksConfig::enabled()).unwrap();
    let events = Events::new(EventsConfig::new()).unwrap();
    events.task_status(&tasks);
    let server = Server::builder("hub", "1")
        .extension(tasks.clone())
        .extension(events)
        .tool(
            Tool::new("job", "a task the test finishes")
                .handle(|_c, _a| async { Ok(TaskSpec::new().poll_interval(HOUR)) }),
        )
        .build()
        .unwrap();
    let auth = BearerTokens::new().token("alice-token", Principal::new("alice"));
    let log = seen.log.clone();
    let streams = move |req: Request, next: Next| record(seen.clone(), req, next);
    let app = axum::Router::new()
        .nest("/mcp", http::router(server, HttpConfig::default().auth(auth)))
        .layer(axum::middleware::from_fn(streams));
    let app = log.wrap(app);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let task = tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
    (url, tasks, task)
}

async fn job(c: &Client) -> TaskHandle {
    match guard("tools/call", c.call_tool("job", json!({}))).await.expect("call") {
        CallOutcome::Task(t) => t,
        other => panic!("expected a task, got {other:?}"),
    }
}

/// Follows `t` to its end, moving it on (progress, then completion with
/// `done ID`) each time it sees a status; returns the result's text.
async fn drive(tasks: Tasks, t: TaskHandle) -> String {
    let mut follow = t.follow();
    while let Some(ev) = follow.next().await {
        match ev.expect("event") {
            TaskEvent::Status(s) => match (s.status, s.status_message.as_deref()) {
                (TaskStatus::Working, Some("half way")) => {
                    tasks.complete(t.id(), CallToolResult::text(format!("done {}", t.id())), None).await.unwrap()
                }
                (TaskStatus::Working, _) => tasks.progress(t.id(), "half way").await.unwrap(),
                _ => {}
            },
            TaskEvent::Finished(ToolOutcome::Completed(r)) => {
                return serde_json::to_value(&r).unwrap()["content"][0]["text"].as_str().unwrap().to_owned();
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    panic!("the follow ended without an outcome")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_tasks_share_one_events_stream() {
    let seen = Seen::default();
    let (url, tasks, _server) = server(seen.clone()).await;
    let b = ClientBuilder::http(&url).token("alice-token").push(false).max_poll_interval(HOUR);
    let c = guard("connect", b.connect()).await.expect("connect");
    let mut handles = Vec::new();
    for _ in 0..FOLLOWED {
        handles.push(job(&c).await);
    }
    let ids: Vec<String> = handles.iter().map(|t| t.id().to_owned()).collect();
    let gets_before = seen.count("tasks/get");
    let drives: Vec<_> = handles.into_iter().map(|t| tokio::spawn(drive(tasks.clone(), t))).collect();
    for (id, d) in ids.iter().zip(drives) {
        // An hour between polls: only the events can move a follower on in time.
        let text = guard("a followed task's result", d).await.expect("the follower");
        assert_eq!(text, format!("done {id}"));
    }
    assert_eq!(seen.count("events/stream"), 1, "one events/stream for {FOLLOWED} tasks");
    assert_eq!(c.event_streams_opened(), 1);
    // Per task: the first read, the read once the stream is active, and one
    // per change seen (progress, completion); never a poll.
    let gets = seen.count("tasks/get") - gets_before;
    assert!((3 * FOLLOWED..=4 * FOLLOWED).contains(&gets), "{gets} tasks/get for {FOLLOWED} tasks");

    // Nobody follows now: the stream was closed, so the next task opens another.
    let t = job(&c).await;
    let id = t.id().to_owned();
    let text = guard("one more task", drive(tasks.clone(), t)).await;
    assert_eq!(text, format!("done {id}"));
    assert_eq!(seen.count("events/stream"), 2);
    assert_eq!(c.event_streams_opened(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_stream_is_reopened_from_its_cursor() {
    let seen = Seen { cut_first_stream: true, ..Seen::default() };
    let (url, tasks, _server) = server(seen.clone()).await;
    let b = ClientBuilder::http(&url).token("alice-token").push(false).max_poll_interval(HOUR);
    let c = guard("connect", b.connect()).await.expect("connect");
    let mut handles = Vec::new();
    for _ in 0..3 {
        handles.push(job(&c).await);
    }
    let ids: Vec<String> = handles.iter().map(|t| t.id().to_owned()).collect();
    let drives: Vec<_> = handles.into_iter().map(|t| tokio::spawn(drive(tasks.clone(), t))).collect();
    for (id, d) in ids.iter().zip(drives) {
        let text = guard("a followed task's result", d).await.expect("the follower");
        assert_eq!(text, format!("done {id}"));
    }
    let cursors = seen.stream_cursors.lock().unwrap().clone();
    assert_eq!(cursors.len(), 2, "the cut stream was reopened once: {cursors:?}");
    assert!(cursors[0].is_null(), "the first stream starts from now: {cursors:?}");
    assert!(cursors[1].is_string(), "the reopened one continues from the cursor: {cursors:?}");
}
