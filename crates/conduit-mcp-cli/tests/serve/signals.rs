//! SIGTERM shuts the server down exactly like SIGINT: running tasks are
//! marked failed as interrupted (and their listeners told), open listen
//! streams get their closing result, and the process exits 0.

use crate::common;

use common::*;
use serde_json::json;
use std::time::Duration;

async fn graceful_on(signal: &str) {
    let mut node = Node::start(&[]).await;
    let id = create(&node, None, "sleep", json!({ "seconds": 3600 })).await;
    let mut stream = Events::listen(&node, None, std::slice::from_ref(&id)).await;
    stream.ack(Duration::from_secs(10)).await;
    let pid = node.child.id().to_string();
    let sent = std::process::Command::new("kill").args([signal, &pid]).status().expect("run kill");
    assert!(sent.success());
    let (method, n) = stream.notification(Duration::from_secs(10)).await;
    assert_eq!(method, "notifications/tasks", "{n}");
    assert_eq!(n["status"], "failed", "{n}");
    assert_eq!(n["error"]["message"], "interrupted: the server running this task stopped");
    // The listen request's own response (the library matches it by the request's id).
    let closing = stream.closing(Duration::from_secs(10)).await;
    assert!(closing.is_ok(), "the listen request's closing result: {closing:?}");
    // Its stderr closes when it exits; then reap it.
    node.until_log(&format!("the server to exit after {signal}"), |_, ended| ended).await;
    let status = node.child.wait().expect("wait");
    assert_eq!(status.code(), Some(0), "exit after {signal}: {status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_is_graceful() {
    graceful_on("-TERM").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_is_graceful() {
    graceful_on("-INT").await;
}
