//! What the client learns from `tools/list` and how often it asks: both eras keep the
//! listing's table (each tool's `Mcp-Param-*` headers, its 2025-11-25 `taskSupport`) and
//! list again only for a tool the table does not know.

use crate::client_support;
use crate::common;

use client_support::{Reply, mock};
use common::guard;
use conduit_mcp::client::{CallOutcome, ClientBuilder};
use conduit_mcp::protocol::Era;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A 2025-11-25 server whose `slow` tool takes tasks; counts its `tools/list` requests.
async fn legacy_server(lists: Arc<AtomicUsize>, tools: &'static [&'static str]) -> String {
    mock(move |req| match req["method"].as_str().unwrap_or("") {
        "initialize" => Reply::Result(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": { "tools": {}, "tasks": { "requests": { "tools": { "call": {} } } } },
            "serverInfo": { "name": "legacy-mock", "version": "1" } })),
        "tools/list" => {
            let n = lists.fetch_add(1, Ordering::SeqCst);
            // The second listing names a tool the first did not (added in between).
            let listed = &tools[..(n + 1).min(tools.len())];
            let tools: Vec<_> = listed
                .iter()
                .map(|name| {
                    json!({ "name": name, "inputSchema": { "type": "object" },
                                   "execution": { "taskSupport": "optional" } })
                })
                .collect();
            Reply::Result(json!({ "tools": tools }))
        }
        "tools/call" => Reply::Result(json!({ "task": { "taskId": format!("t-{}", req["id"]), "status": "working",
            "createdAt": "2026-08-01T10:30:00Z", "lastUpdatedAt": "2026-08-01T10:30:00Z", "ttl": 60000,
            "pollInterval": 10 } })),
        _ => Reply::Raw(202, "application/json", String::new()),
    })
    .await
}

#[tokio::test]
async fn a_legacy_client_lists_tools_once_for_many_task_calls() {
    let lists = Arc::new(AtomicUsize::new(0));
    let url = legacy_server(lists.clone(), &["slow"]).await;
    let c = guard("connect", ClientBuilder::http(&url).era(Era::Legacy).connect()).await.expect("connects");
    for _ in 0..3 {
        let out = guard("tools/call", c.call_tool("slow", json!({}))).await.expect("the call");
        assert!(matches!(out, CallOutcome::Task(_)), "a task-capable tool's call is task-augmented");
    }
    assert_eq!(lists.load(Ordering::SeqCst), 1, "one listing serves every call");
}

#[tokio::test]
async fn a_tool_added_after_the_listing_is_listed_again_once() {
    let lists = Arc::new(AtomicUsize::new(0));
    let url = legacy_server(lists.clone(), &["slow", "added"]).await;
    let c = guard("connect", ClientBuilder::http(&url).era(Era::Legacy).connect()).await.expect("connects");
    guard("slow", c.call_tool("slow", json!({}))).await.expect("the call");
    let out = guard("added", c.call_tool("added", json!({}))).await.expect("the call");
    assert!(matches!(out, CallOutcome::Task(_)), "the new tool is known after a second listing");
    guard("added again", c.call_tool("added", json!({}))).await.expect("the call");
    assert_eq!(lists.load(Ordering::SeqCst), 2);
}
