//! Listen streams naming a task leave nothing behind in the notifier's index
//! once they close, even when the task never changes again (a leak here grew
//! ~4 KB per closed stream, without authentication).

use crate::client_support;
use crate::common;

use client_support::{connect, create_task, listen_tasks, next_notification};
use common::*;
use conduit_mcp::ext::tasks::{JanitorConfig, Tasks, TasksConfig};
use conduit_mcp::prelude::*;
use serde_json::json;
use std::time::Duration;
/// Waits (within the guard) until the index holds `n` entries.
async fn index_settles(tasks: &Tasks, n: usize) {
    guard("the listen index to settle", async {
        // The server drops a closed stream's entries as it notices the close;
        // nothing here waits for time to pass, only for that to happen.
        while tasks.listen_notifier().entries() != n {
            tokio::task::yield_now().await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_listen_streams_leave_no_index_entries() {
    let tasks = Tasks::new(TasksConfig::enabled()).unwrap();
    let server = Server::builder("index", "1")
        .extension(tasks.clone())
        .tool(Tool::new("wait", "a task that waits").handle(|_c, _a| async { Ok(TaskSpec::new()) }))
        .build()
        .unwrap();
    // Fifty streams of one client at once: above the default per-client cap, which is not what this tests.
    let config =
        HttpConfig::default().max_listen_streams_per_client(1_000).max_listen_streams(1_000).max_connections(1_001);
    let h = start_with(server, config).await;
    let c = connect(&h.url).await;
    let id = create_task(&c, "wait").await;

    // Fifty open at once are fifty entries...
    let mut open = Vec::new();
    for _ in 0..50 {
        let (s, acked) = guard("a listen ack", listen_tasks(&c, &[&id])).await;
        assert_eq!(acked, json!([id]));
        open.push(s);
    }
    assert_eq!(tasks.listen_notifier().entries(), 50);
    assert_eq!(tasks.listen_notifier().watchers(&id), 50);
    // ...and none once they close, though the task never changes.
    drop(open);
    index_settles(&tasks, 0).await;

    // Thousands of open/close cycles: still none.
    for _ in 0..2_000 {
        guard("a listen ack", listen_tasks(&c, &[&id])).await;
    }
    index_settles(&tasks, 0).await;
    assert!(tasks.listen_notifier().watched().is_empty());
    // The task itself is untouched, and a new stream still gets its changes.
    let (mut s, _) = guard("a listen ack", listen_tasks(&c, &[&id])).await;
    tasks.complete(&id, CallToolResult::text("done"), None).await.unwrap();
    let n = guard("the notification", next_notification(&mut s)).await;
    assert_eq!(n["status"], "completed", "{n}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swept_task_leaves_the_index_while_its_stream_stays_open() {
    let clock = std::sync::Arc::new(conduit_mcp::clock::ManualClock::new(1_000_000));
    let tasks = Tasks::with_clock(TasksConfig::enabled().janitor(JanitorConfig::Disabled), clock.clone()).unwrap();
    let server = Server::builder("index", "1")
        .extension(tasks.clone())
        .tool(
            Tool::new("brief", "a short-lived task")
                .handle(|_c, _a| async { Ok(TaskSpec::new().ttl(Duration::from_secs(60))) }),
        )
        .build()
        .unwrap();
    let h = start(server).await;
    let c = connect(&h.url).await;
    let id = create_task(&c, "brief").await;
    let (s, _) = guard("a listen ack", listen_tasks(&c, &[&id])).await;
    assert_eq!(tasks.listen_notifier().entries(), 1);
    clock.advance(61_000);
    assert_eq!(conduit_mcp::ext::tasks::sweep(&tasks).await.unwrap(), 1, "the expired task was swept");
    assert_eq!(tasks.listen_notifier().entries(), 0, "and forgotten by the index");
    h.assert_alive().await;
    drop(s);
}
