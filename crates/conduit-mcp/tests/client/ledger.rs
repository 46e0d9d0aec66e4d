//! The task ledger through the library against our server over a real
//! socket: a task is written down before its handle is returned; a new
//! client (a new connection, as after a restart) resumes it and the ledger
//! follows it to its end; tasks that cannot be followed are reported lost
//! with the reason, never dropped; another principal's are not offered;
//! on 2025-11-25 a task resumes with authentication and, without it, is
//! said to belong to its session; a task the ledger cannot take is named
//! in the error and runs on.

use crate::client_support;
use crate::common;

use client_support::*;
use common::{guard, start_with};
use conduit_mcp::auth::{BearerTokens, Principal};
use conduit_mcp::client::ledger::{
    LedgerEntry, LedgerFilter, MemoryLedger, NOT_KNOWN, TaskLedger, args_digest, principal, server_key,
};
use conduit_mcp::client::{CallOutcome, Client, ClientError, TaskHandle, ToolOutcome, Unfinished};
use conduit_mcp::ext::tasks::Tasks;
use conduit_mcp::protocol::Era;
use conduit_mcp::protocol::tasks::TaskStatus;
use conduit_mcp::protocol::tools::CallToolResult;
use conduit_mcp::transport::http::HttpConfig;
use serde_json::json;
use std::sync::Arc;

/// Our server with bearer tokens `alice` and `bob` (each its own principal).
async fn served(tasks: &Tasks) -> common::Harness {
    let tokens = BearerTokens::new().token("alice", Principal::new("alice")).token("bob", Principal::new("bob"));
    start_with(server(tasks), HttpConfig::default().auth(tokens)).await
}

async fn connect_as(url: &str, token: Option<&str>, era: Era, ledger: &Arc<dyn TaskLedger>) -> Client {
    let mut b = client(url, Recorder::new("ada")).era(era).shared_ledger(ledger.clone());
    if let Some(t) = token {
        b = b.token(t);
    }
    guard("connect", b.connect()).await.expect("connect")
}

async fn job(c: &Client) -> TaskHandle {
    match guard("tools/call", c.call_tool("job", json!({ "n": 1 }))).await.expect("call") {
        CallOutcome::Task(t) => t,
        other => panic!("not a task: {other:?}"),
    }
}

async fn entries(ledger: &Arc<dyn TaskLedger>) -> Vec<LedgerEntry> {
    ledger.list(&LedgerFilter::all()).await.expect("list")
}

fn resumed(found: Vec<Unfinished>) -> Vec<TaskHandle> {
    found
        .into_iter()
        .map(|u| match u {
            Unfinished::Resumed { task, .. } => task,
            other => panic!("not resumed: {other:?}"),
        })
        .collect()
}

fn lost(found: Vec<Unfinished>) -> Vec<String> {
    found
        .into_iter()
        .map(|u| match u {
            Unfinished::Lost { reason, .. } => reason,
            other => panic!("not lost: {other:?}"),
        })
        .collect()
}

#[tokio::test]
async fn a_task_is_recorded_before_its_handle_and_a_new_client_resumes_it_to_the_end() {
    let tasks = tasks();
    let h = served(&tasks).await;
    let ledger: Arc<dyn TaskLedger> = Arc::new(MemoryLedger::new());
    let first = connect_as(&h.url, Some("alice"), Era::Modern, &ledger).await;
    let t = job(&first).await;
    let recorded = entries(&ledger).await;
    assert_eq!(recorded.len(), 1, "written before the handle came back");
    let e = &recorded[0];
    assert_eq!((e.server.as_str(), e.task_id.as_str(), e.tool.as_str()), (server_key(&h.url).as_str(), t.id(), "job"));
    assert_eq!(e.principal, principal::of_token("alice"));
    assert_eq!((e.version.as_str(), e.status, e.resumable), ("2026-07-28", TaskStatus::Working, true));
    assert_eq!(e.args_digest, args_digest(&json!({ "n": 1 })));
    assert!(e.expires_ms.is_some(), "the TTL's end is kept");
    drop(first);

    // Another principal is offered nothing.
    let bob = connect_as(&h.url, Some("bob"), Era::Modern, &ledger).await;
    assert!(bob.unfinished().await.expect("unfinished").is_empty());

    // A new connection as the same principal follows it like a fresh handle.
    let again = connect_as(&h.url, Some("alice"), Era::Modern, &ledger).await;
    let found = resumed(again.unfinished().await.expect("unfinished"));
    assert_eq!(found.iter().map(TaskHandle::id).collect::<Vec<_>>(), [t.id()]);
    tasks.complete(t.id(), CallToolResult::text("done"), None).await.unwrap();
    match guard("wait", found[0].wait()).await.expect("wait") {
        ToolOutcome::Completed(r) => assert_eq!(r.content.len(), 1),
        other => panic!("{other:?}"),
    }
    assert_eq!(entries(&ledger).await[0].status, TaskStatus::Completed);
    assert!(again.unfinished().await.expect("unfinished").is_empty(), "nothing left to resume");
}

#[tokio::test]
async fn tasks_that_cannot_be_followed_are_lost_with_the_reason() {
    let tasks = tasks();
    let h = served(&tasks).await;
    let ledger: Arc<dyn TaskLedger> = Arc::new(MemoryLedger::new());
    let server = server_key(&h.url);
    let who = principal::of_token("alice");
    let entry = |id: &str, version: &str| LedgerEntry::new(&server, &who, id, version, "job", "sha256:00", 1);
    ledger.record(&entry("never-heard-of", "2026-07-28")).await.unwrap();
    let mut expired = entry("long-gone", "2026-07-28");
    expired.expires_ms = Some(2);
    ledger.record(&expired).await.unwrap();
    ledger.record(&entry("from-a-session", "2025-11-25")).await.unwrap();

    let c = connect_as(&h.url, Some("alice"), Era::Modern, &ledger).await;
    let reasons = lost(c.unfinished().await.expect("unfinished"));
    assert_eq!(reasons[0], NOT_KNOWN);
    assert!(reasons[1].starts_with("expired: its TTL ended"), "{reasons:?}");
    assert!(
        reasons[2].contains("recorded on protocol 2025-11-25, but the server now speaks 2026-07-28"),
        "{reasons:?}"
    );
    let kept: Vec<Option<String>> = entries(&ledger).await.into_iter().map(|e| e.lost).collect();
    assert_eq!(kept, reasons.into_iter().map(Some).collect::<Vec<_>>(), "the ledger keeps why");
    assert!(c.unfinished().await.expect("unfinished").is_empty(), "reported once, not retried");

    // A follow that reaches the TTL's end marks the task lost too.
    let ahead =
        || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64 + 86_400_000;
    let late = client(&h.url, Recorder::new("ada")).token("alice").shared_ledger(ledger.clone()).wall_clock(ahead);
    let late = guard("connect", late.connect()).await.unwrap();
    let short = match late.call_tool("short", json!({})).await.unwrap() {
        CallOutcome::Task(t) => t,
        other => panic!("{other:?}"),
    };
    assert!(matches!(guard("wait", short.wait()).await, Err(ClientError::Expired)));
    let e = entries(&ledger).await.into_iter().find(|e| e.task_id == short.id()).unwrap();
    assert_eq!(e.lost.as_deref(), Some("expired: its TTL ended before it finished"));
}

#[tokio::test]
async fn legacy_tasks_resume_with_authentication_and_are_session_bound_without() {
    let tasks = tasks();
    let h = served(&tasks).await;
    let ledger: Arc<dyn TaskLedger> = Arc::new(MemoryLedger::new());
    let alice = connect_as(&h.url, Some("alice"), Era::Legacy, &ledger).await;
    let t = job(&alice).await;
    assert!(entries(&ledger).await[0].resumable);
    drop(alice);
    let again = connect_as(&h.url, Some("alice"), Era::Legacy, &ledger).await;
    let found = resumed(again.unfinished().await.expect("unfinished"));
    tasks.complete(t.id(), CallToolResult::text("done"), None).await.unwrap();
    assert!(matches!(guard("wait", found[0].wait()).await, Ok(ToolOutcome::Completed(_))));

    // Without authentication: the entry says it cannot be read from a new session, and is not tried.
    let open = start_with(server(&tasks), HttpConfig::default()).await;
    let anon = connect_as(&open.url, None, Era::Legacy, &ledger).await;
    let t = job(&anon).await;
    let e = entries(&ledger).await.into_iter().find(|e| e.task_id == t.id()).unwrap();
    assert_eq!((e.principal.as_str(), e.resumable), (principal::ANONYMOUS, false));
    let fresh = connect_as(&open.url, None, Era::Legacy, &ledger).await;
    let sent = fresh.requests_sent();
    let reasons = lost(fresh.unfinished().await.expect("unfinished"));
    assert!(reasons[0].contains("belongs to the session that created it"), "{reasons:?}");
    assert_eq!(fresh.requests_sent(), sent, "nothing was sent for it");
}

#[tokio::test]
async fn a_task_the_ledger_cannot_take_is_named_in_the_error_and_runs_on() {
    let tasks = tasks();
    let h = served(&tasks).await;
    // Room for one unfinished task: the second cannot be recorded, and no unfinished one is dropped.
    let ledger: Arc<dyn TaskLedger> = Arc::new(MemoryLedger::with_cap(1));
    let c = connect_as(&h.url, Some("alice"), Era::Modern, &ledger).await;
    let kept = job(&c).await;
    let id = match guard("tools/call", c.call_tool("job", json!({}))).await {
        Err(ClientError::Ledger { task_id: Some(id), source }) => {
            assert!(!source.to_string().contains(&id), "the message does not carry the id: {source}");
            id
        }
        other => panic!("not a ledger error: {other:?}"),
    };
    assert_eq!(guard("tasks/get", c.task(id.as_str()).get()).await.unwrap().task.status, TaskStatus::Working);
    assert_eq!(entries(&ledger).await.into_iter().map(|e| e.task_id).collect::<Vec<_>>(), [kept.id()]);
}
