//! `conduit-mcp events` against `serve` over a real socket: the event types
//! listed, a push stream printing one JSON line per occurrence (a task's
//! completion, seen by its owner), and bad input refused with exit 2.

use crate::cli_support;
use crate::common;

use cli_support::*;
use common::Node;
use serde_json::Value;
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, BufReader};

async fn guard<F: std::future::Future>(what: &str, fut: F) -> F::Output {
    tokio::time::timeout(std::time::Duration::from_secs(20), fut).await.unwrap_or_else(|_| panic!("timed out: {what}"))
}

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_event_types_and_refuses_unknown_ones() {
    let node = Node::start(&[]).await;
    let o = run(&["events", &node.url]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let line = stdout(&o).lines().find(|l| l.starts_with("task.status_changed")).map(str::to_owned);
    assert!(line.as_deref().is_some_and(|l| l.contains("push")), "{}", stdout(&o));
    let o = run(&["events", &node.url, "--json"]);
    let first: Value = serde_json::from_str(stdout(&o).lines().next().expect("a type")).expect("one JSON per line");
    assert!(first["delivery"].is_array(), "{first}");
    let o = run(&["events", &node.url, "no.such\u{1b}[31m"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no event type") && !err.contains('\u{1b}'), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follows_the_push_stream_printing_one_json_line_per_event() {
    let node = Node::start(&["--token", "tok-a=alice"]).await;
    let mut child = tokio::process::Command::new(BIN)
        .args(["events", &node.url, "task.status_changed", "--json", "--max-events", "1", "--token", "tok-a"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    let mut err = BufReader::new(child.stderr.take().unwrap()).lines();
    let ready = guard("the stream is active", err.next_line()).await.expect("read").expect("a line");
    assert_eq!(ready, "following task.status_changed");
    let o = run(&["call", &node.url, "build", "ref=ev", "steps=1", "--token", "tok-a"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let out = guard("the events command exits", child.wait_with_output()).await.expect("wait");
    assert_eq!(out.status.code(), Some(0));
    let lines: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    let ev: Value = serde_json::from_str(lines[0]).expect("JSON");
    assert_eq!(ev["name"], "task.status_changed");
    assert_eq!(ev["data"]["status"], "completed", "{ev}");
}
