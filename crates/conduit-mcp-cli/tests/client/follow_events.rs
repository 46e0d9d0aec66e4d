//! `conduit-mcp task wait` and `call` (without `--detach`) follow a task by
//! the Events extension's `task.status_changed` on a server that offers it
//! and whose tasks push nothing on `subscriptions/listen`: an in-process
//! server over a real socket counts the requests it sees, and a task polled
//! only once an hour finishes with one `events/stream` and no `tasks/get`
//! beyond the reads the events asked for.

use crate::cli_support;

use cli_support::{BIN, test_ledger};
use conduit_mcp::auth::{BearerTokens, Principal};
use conduit_mcp::ext::events::{Events, EventsConfig};
use conduit_mcp::ext::tasks::{NotifierConfig, Tasks, TasksConfig};
use conduit_mcp::prelude::*;
use conduit_mcp::testing::{RequestLog, SeenRequests};
use conduit_mcp::transport::http;
use std::process::{Output, Stdio};
use std::time::Duration;
use tokio::sync::watch;

const HOUR: Duration = Duration::from_secs(3600);

async fn guard<F: std::future::Future>(what: &str, fut: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(30), fut).await.unwrap_or_else(|_| panic!("timed out: {what}"))
}

/// A server with Tasks that push nothing on listen (a `job` tool whose task
/// the test finishes, polled hourly) and `task.status_changed`, behind a
/// layer that logs each request.
async fn server() -> (String, Tasks, watch::Receiver<SeenRequests>, tokio::task::JoinHandle<()>) {
    let tasks = Tasks::new(TasksConfig::enabled().notifier(NotifierConfig::None)).unwrap();
    let events = Events::new(EventsConfig::new()).unwrap();
    events.task_status(&tasks);
    let server = Server::builder("follow-events", "1")
        .extension(tasks.clone())
        .extension(events)
        .tool(
            Tool::new("job", "a task the test finishes")
                .handle(|_c, _a| async { Ok(TaskSpec::new().poll_interval(HOUR)) }),
        )
        .build()
        .unwrap();
    let auth = BearerTokens::new().token("tok-a", Principal::new("alice"));
    let log = RequestLog::new();
    let app = log.wrap(axum::Router::new().nest("/mcp", http::router(server, HttpConfig::default().auth(auth))));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let task = tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
    (url, tasks, log.watch(), task)
}

/// Runs `conduit-mcp ARGS` in the background; once the server has seen an
/// `events/stream`, completes the task it last read, and returns the output
/// and what the server saw meanwhile (`before`: what it had seen already).
async fn finish_once_streaming(
    args: &[&str],
    tasks: &Tasks,
    log: &mut watch::Receiver<SeenRequests>,
    before: &SeenRequests,
) -> (Output, SeenRequests) {
    let child = tokio::process::Command::new(BIN)
        .args(args)
        .env("CONDUIT_MCP_LEDGER", test_ledger())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    let seen = guard("the events/stream request", log.wait_for(|l| l.since(before, "events/stream") > 0)).await;
    let id =
        seen.expect("the server runs").last_name("tasks/get").expect("the task was read before the stream").to_owned();
    tasks.complete(&id, CallToolResult::text("all done"), None).await.expect("complete");
    let out = guard("the command exits", child.wait_with_output()).await.expect("wait");
    (out, log.borrow().clone())
}

/// One events/stream, no listen push taken, and no polling: the first
/// read, the read once the stream is active, and the read its event asked for.
fn assert_followed_by_events(out: &Output, log: &SeenRequests, before: &SeenRequests) {
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "all done");
    assert_eq!(log.since(before, "events/stream"), 1, "{log:?}");
    assert!(log.since(before, "subscriptions/listen") <= 1, "{log:?}");
    assert!((2..=3).contains(&log.since(before, "tasks/get")), "no polling: {log:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_wait_follows_a_task_by_its_status_events() {
    let (url, tasks, mut log, _server) = server().await;
    let created = guard(
        "call --detach",
        tokio::task::spawn_blocking({
            let url = url.clone();
            move || cli_support::run(&["call", &url, "job", "--detach", "--token", "tok-a"])
        }),
    )
    .await
    .expect("run");
    assert_eq!(created.status.code(), Some(0), "{}", String::from_utf8_lossy(&created.stderr));
    let id = String::from_utf8_lossy(&created.stdout).trim().to_owned();
    let before = log.borrow().clone();
    let args = ["task", "wait", &url, &id, "--token", "tok-a"];
    let (out, seen) = finish_once_streaming(&args, &tasks, &mut log, &before).await;
    assert_eq!(seen.last_name("tasks/get"), Some(id.as_str()));
    assert_followed_by_events(&out, &seen, &before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_follows_its_task_by_status_events() {
    let (url, tasks, mut log, _server) = server().await;
    let before = SeenRequests::default();
    let (out, seen) =
        finish_once_streaming(&["call", &url, "job", "--token", "tok-a"], &tasks, &mut log, &before).await;
    assert_eq!(seen.count("tools/call"), 1);
    assert_followed_by_events(&out, &seen, &before);
}
