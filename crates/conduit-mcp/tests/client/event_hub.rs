//! The client's one `events/stream` of `task.status_changed`, on our server
//! over a real socket: twenty tasks followed at once (listen push off, an
//! hour between polls) each reach their result, and the server sees exactly
//! one `events/stream` request for all of them; once none is followed the
//! stream is closed, and the next followed task opens a new one.

use crate::common;

use common::guard;
use conduit_mcp::auth::{BearerTokens, Principal};
use conduit_mcp::client::{CallOutcome, Client, ClientBuilder, TaskEvent, TaskHandle, ToolOutcome};
use conduit_mcp::ext::events::{Events, EventsConfig};
use conduit_mcp::ext::tasks::{Tasks, TasksConfig};
use conduit_mcp::prelude::*;
use conduit_mcp::protocol::tasks::TaskStatus;
use conduit_mcp::transport::http;
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const HOUR: Duration = Duration::from_secs(3600);
const FOLLOWED: usize = 20;

/// The requests the server saw, by their `Mcp-Method` header.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<HashMap<String, usize>>>);

impl Seen {
    fn count(&self, method: &str) -> usize {
        self.0.lock().unwrap().get(method).copied().unwrap_or(0)
    }
}

/// A server with Tasks (a `job` tool whose task the test moves on) and
/// `task.status_changed`, behind a layer that counts requests by method.
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
    let count = move |req: axum::extract::Request, next: axum::middleware::Next| {
        let seen = seen.clone();
        async move {
            if let Some(m) = req.headers().get("mcp-method").and_then(|v| v.to_str().ok()) {
                *seen.0.lock().unwrap().entry(m.to_owned()).or_default() += 1;
            }
            next.run(req).await
        }
    };
    let app = axum::Router::new()
        .nest("/mcp", http::router(server, HttpConfig::default().auth(auth)))
        .layer(axum::middleware::from_fn(count));
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
