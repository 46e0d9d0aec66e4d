//! The task follower on the Events extension's `task.status_changed`, on our
//! server over a real socket: with the listen push off, a task whose server
//! asks for an hour between polls is followed to its end by its events, one
//! `tasks/get` per event (so no polling happened); where the server refuses
//! the stream, the follower polls and still finishes.

use crate::common;

use common::{guard, start_with};
use conduit_mcp::auth::{BearerTokens, Principal};
use conduit_mcp::client::{CallOutcome, Client, ClientBuilder, TaskEvent, TaskHandle, ToolOutcome};
use conduit_mcp::ext::events::{Events, EventsConfig};
use conduit_mcp::ext::tasks::{Tasks, TasksConfig};
use conduit_mcp::prelude::*;
use conduit_mcp::protocol::tasks::TaskStatus;
use serde_json::json;
use std::time::Duration;

const HOUR: Duration = Duration::from_secs(3600);

/// A server with Tasks (a `job` tool whose task the test finishes, polled
/// every `poll`) and, when `status_events`, `task.status_changed`.
async fn server(status_events: bool, poll: Duration) -> (common::Harness, Tasks) {
    let tasks = Tasks::new(TasksConfig::enabled()).unwrap();
    let events = Events::new(EventsConfig::new()).unwrap();
    if status_events {
        events.task_status(&tasks);
    }
    let server = Server::builder("follow", "1")
        .extension(tasks.clone())
        .extension(events)
        .tool(
            Tool::new("job", "a task the test finishes")
                .handle(move |_c, _a| async move { Ok(TaskSpec::new().poll_interval(poll)) }),
        )
        .build()
        .unwrap();
    let auth = BearerTokens::new().token("alice-token", Principal::new("alice"));
    (start_with(server, HttpConfig::default().auth(auth)).await, tasks)
}

async fn client(url: &str) -> Client {
    let b = ClientBuilder::http(url).token("alice-token").push(false).max_poll_interval(HOUR);
    guard("connect", b.connect()).await.expect("connect")
}

async fn job(c: &Client) -> TaskHandle {
    match guard("tools/call", c.call_tool("job", json!({}))).await.expect("call") {
        CallOutcome::Task(t) => t,
        other => panic!("expected a task, got {other:?}"),
    }
}

/// Follows `t` to its end, moving it on (progress, then completion) each time a status is seen.
async fn drive(tasks: &Tasks, t: &TaskHandle) -> Vec<Option<String>> {
    let mut follow = t.follow();
    let mut seen = Vec::new();
    while let Some(ev) = guard("a task event", follow.next()).await {
        match ev.expect("event") {
            TaskEvent::Status(s) => {
                match (s.status, s.status_message.as_deref()) {
                    (TaskStatus::Working, Some("half way")) => {
                        tasks.complete(t.id(), CallToolResult::text("done"), None).await.unwrap()
                    }
                    (TaskStatus::Working, _) => tasks.progress(t.id(), "half way").await.unwrap(),
                    _ => {}
                }
                seen.push(s.status_message);
            }
            TaskEvent::Finished(ToolOutcome::Completed(_)) => return seen,
            other => panic!("unexpected {other:?}"),
        }
    }
    panic!("the follow ended without an outcome")
}

#[tokio::test]
async fn a_task_is_followed_by_its_status_events_without_polling() {
    let (h, tasks) = server(true, HOUR).await;
    let c = client(&h.url).await;
    let t = job(&c).await;
    let before = c.requests_sent();
    let seen = drive(&tasks, &t).await;
    assert!(seen.contains(&Some("half way".into())), "{seen:?}");
    // An hour between polls: only the events could have shown the changes in
    // time. The follow costs at most: the first tasks/get, events/stream,
    // the read after the stream is active, and one tasks/get per event (two).
    let used = c.requests_sent() - before;
    assert!((4..=5).contains(&used), "{used} requests: one tasks/get per event, no polling");
}

#[tokio::test]
async fn a_resumed_task_is_followed_by_its_events_too() {
    let (h, tasks) = server(true, HOUR).await;
    let c = client(&h.url).await;
    let id = job(&c).await.id().to_owned();
    let resumed = c.task(id);
    let seen = drive(&tasks, &resumed).await;
    assert!(seen.contains(&Some("half way".into())), "{seen:?}");
}

#[tokio::test]
async fn without_task_status_events_the_follower_polls() {
    let (h, tasks) = server(false, Duration::from_millis(100)).await;
    let c = client(&h.url).await;
    let t = job(&c).await;
    let before = c.requests_sent();
    let seen = drive(&tasks, &t).await;
    assert!(seen.contains(&Some("half way".into())), "{seen:?}");
    let polled = c.requests_sent() - before;
    // The refused events/stream is asked once; the rest are polls.
    assert!(polled >= 3, "{polled}");
    let t2 = job(&c).await;
    let before = c.requests_sent();
    drive(&tasks, &t2).await;
    assert!(c.requests_sent() - before >= 2);
}
