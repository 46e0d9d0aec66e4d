//! The client following tasks on our server over a real socket: push over one
//! listen stream, polling when push is off, input answered once, failed and
//! cancelled as values, resume from a bare id, dropping does not cancel,
//! many tasks on one stream (1 000 in one request, no polls), the cap of ids
//! per stream, a listen stream of the caller's own, the TTL deadline, the
//! stuck-input detector.

use crate::client_support;
use crate::common;

use client_support::*;
use common::{guard, start};
use conduit_mcp::client::{CallOutcome, Client, ClientError, ListenEvent, TaskEvent, TaskHandle, ToolOutcome};
use conduit_mcp::protocol::content::Content;
use conduit_mcp::protocol::tasks::TaskStatus;
use conduit_mcp::protocol::tools::CallToolResult;
use serde_json::json;

async fn task(c: &Client, tool: &str) -> TaskHandle {
    match guard("tools/call", c.call_tool(tool, json!({}))).await.expect("call") {
        CallOutcome::Task(t) => t,
        other => panic!("expected a task, got {other:?}"),
    }
}

fn text(o: &ToolOutcome) -> String {
    match o {
        ToolOutcome::Completed(r) => match r.content.first() {
            Some(Content::Text { text, .. }) => text.clone(),
            other => panic!("{other:?}"),
        },
        other => panic!("not completed: {other:?}"),
    }
}

/// Follows `t`, driving the external task through `steps` as each status is observed.
async fn follow_job(c: &Client, tasks: &conduit_mcp::ext::tasks::Tasks, t: &TaskHandle) -> Vec<TaskEvent> {
    let mut events = t.follow();
    let mut seen = Vec::new();
    while let Some(ev) = guard("an event", events.next()).await {
        let ev = ev.expect("event");
        if let TaskEvent::Status(s) = &ev {
            match s.status_message.as_deref().filter(|_| s.status == TaskStatus::Working) {
                Some("Queued") => tasks.progress(t.id(), "half way").await.unwrap(),
                Some("half way") => tasks.complete(t.id(), CallToolResult::text("done"), None).await.unwrap(),
                _ => {}
            }
        }
        seen.push(ev);
    }
    let _ = c;
    seen
}

fn messages(events: &[TaskEvent]) -> Vec<Option<String>> {
    events
        .iter()
        .filter_map(|e| if let TaskEvent::Status(t) = e { Some(t.status_message.clone()) } else { None })
        .collect()
}

#[tokio::test]
async fn push_follows_status_messages_to_the_result() {
    let tasks = tasks();
    let h = start(server(&tasks)).await;
    let c = client(&h.url, Recorder::new("ada")).connect().await.unwrap();
    let t = task(&c, "job").await;
    let events = follow_job(&c, &tasks, &t).await;
    assert_eq!(messages(&events)[..2], [Some("Queued".to_owned()), Some("half way".to_owned())]);
    assert_eq!(
        text(match events.last() {
            Some(TaskEvent::Finished(o)) => o,
            e => panic!("{e:?}"),
        }),
        "done"
    );
    assert_eq!(c.listen_streams_opened(), 1, "followed by push on one listen stream");
}

#[tokio::test]
async fn polling_follows_when_push_is_off() {
    let tasks = tasks();
    let h = start(server(&tasks)).await;
    let c = client(&h.url, Recorder::new("ada")).push(false).connect().await.unwrap();
    let t = task(&c, "job").await;
    let events = follow_job(&c, &tasks, &t).await;
    assert!(messages(&events).contains(&Some("half way".to_owned())));
    assert!(matches!(events.last(), Some(TaskEvent::Finished(ToolOutcome::Completed(_)))));
    assert_eq!(c.listen_streams_opened(), 0);
}

#[tokio::test]
async fn task_input_is_answered_once_and_the_task_ends() {
    let tasks = tasks();
    let h = start(server(&tasks)).await;
    let rec = Recorder::new("grace");
    let c = client(&h.url, rec.clone()).connect().await.unwrap();
    let t = task(&c, "ask").await;
    let mut events = t.follow();
    let mut all = Vec::new();
    while let Some(ev) = guard("event", events.next()).await {
        all.push(ev.unwrap());
    }
    assert!(all.contains(&TaskEvent::InputRequested(vec!["who".into()])));
    assert!(all.contains(&TaskEvent::InputAnswered(vec!["who".into()])));
    assert_eq!(
        text(match all.last() {
            Some(TaskEvent::Finished(o)) => o,
            e => panic!("{e:?}"),
        }),
        "hello grace"
    );
    assert_eq!(rec.asked(), vec!["who"]);
}

#[tokio::test]
async fn failed_and_cancelled_tasks_are_values() {
    let tasks = tasks();
    let h = start(server(&tasks)).await;
    let c = client(&h.url, Recorder::new("ada")).connect().await.unwrap();
    match guard("boom", c.call_tool_to_end("boom", json!({}))).await.unwrap() {
        ToolOutcome::Failed(e) => assert_eq!((e.code, e.message.as_str()), (-1, "boom")),
        other => panic!("{other:?}"),
    }
    let t = task(&c, "forever").await;
    let mut events = t.follow();
    let first = guard("first status", events.next()).await.unwrap().unwrap();
    assert!(matches!(first, TaskEvent::Status(ref s) if s.status == TaskStatus::Working), "{first:?}");
    guard("cancel", t.cancel()).await.unwrap();
    let mut last = None;
    while let Some(ev) = guard("event", events.next()).await {
        last = Some(ev.unwrap());
    }
    assert!(matches!(last, Some(TaskEvent::Finished(ToolOutcome::Cancelled(_)))), "{last:?}");
    assert_eq!(guard("get", t.get()).await.unwrap().task.status, TaskStatus::Cancelled);
}

#[tokio::test]
async fn a_new_client_resumes_from_the_bare_id_and_dropping_does_not_cancel() {
    let tasks = tasks();
    let h = start(server(&tasks)).await;
    let id = {
        let c = client(&h.url, Recorder::new("ada")).connect().await.unwrap();
        let t = task(&c, "job").await;
        let mut events = t.follow();
        let _ = guard("first event", events.next()).await;
        t.id().to_owned()
        // the client, the handle and the follow stream are dropped here
    };
    assert_eq!(tasks.status(&id).await.unwrap().status, TaskStatus::Working, "dropping did not cancel");
    let c2 = client(&h.url, Recorder::new("ada")).connect().await.unwrap();
    let t = c2.task(id.clone());
    let waiter = tokio::spawn(async move { t.wait().await });
    tasks.complete(&id, CallToolResult::text("resumed"), None).await.unwrap();
    let out = guard("wait", waiter).await.unwrap().unwrap();
    assert_eq!(text(&out), "resumed");
}

#[tokio::test]
async fn many_tasks_share_one_listen_stream() {
    let tasks = tasks();
    let h = start(server(&tasks)).await;
    let c = client(&h.url, Recorder::new("ada")).connect().await.unwrap();
    let mut handles = Vec::new();
    for _ in 0..50 {
        handles.push(task(&c, "job").await);
    }
    let mut waiters = Vec::new();
    for t in &handles {
        let t = t.clone();
        let mut events = t.follow();
        // Wait until each follower has subscribed (its first status is out).
        let _ = guard("first", events.next()).await;
        waiters.push(tokio::spawn(async move {
            let mut last = None;
            while let Some(ev) = events.next().await {
                last = Some(ev);
            }
            last
        }));
    }
    for t in &handles {
        tasks.complete(t.id(), CallToolResult::text("ok"), None).await.unwrap();
    }
    for w in waiters {
        let last = guard("finished", w).await.unwrap();
        assert!(matches!(last, Some(Ok(TaskEvent::Finished(ToolOutcome::Completed(_))))), "{last:?}");
    }
    let opened = c.listen_streams_opened();
    assert!((1..=50).contains(&opened), "{opened}");
}

/// Follows every handle at once (each to its first status), completes them all, and
/// waits for every follower's `Finished`.
async fn follow_all_at_once(tasks: &conduit_mcp::ext::tasks::Tasks, handles: &[TaskHandle]) {
    let mut followers: Vec<_> = handles.iter().map(TaskHandle::follow).collect();
    for f in &mut followers {
        assert!(matches!(guard("first", f.next()).await, Some(Ok(TaskEvent::Status(_)))));
    }
    for t in handles {
        tasks.complete(t.id(), CallToolResult::text("ok"), None).await.unwrap();
    }
    for f in &mut followers {
        let mut last = None;
        while let Some(ev) = guard("an event", f.next()).await {
            last = Some(ev.unwrap());
        }
        assert!(matches!(last, Some(TaskEvent::Finished(ToolOutcome::Completed(_)))), "{last:?}");
    }
}

#[tokio::test]
async fn a_thousand_tasks_followed_at_once_take_one_listen_request_and_no_polls() {
    let tasks = tasks();
    let h = start(server(&tasks)).await;
    let c = client(&h.url, Recorder::new("ada")).connect().await.unwrap();
    let mut handles = Vec::new();
    for _ in 0..1000 {
        handles.push(task(&c, "job").await);
    }
    let before = c.requests_sent();
    follow_all_at_once(&tasks, &handles).await;
    assert_eq!(c.listen_streams_opened(), 1);
    // Each follower reads its task, and once more when acknowledged; then only pushes.
    assert_eq!(c.requests_sent() - before, 2 * 1000 + 1);
}

#[tokio::test]
async fn followers_past_the_cap_of_ids_per_stream_poll() {
    let tasks = tasks();
    let h = start(server(&tasks)).await;
    let c = client(&h.url, Recorder::new("ada")).connect().await.unwrap();
    let mut handles = Vec::new();
    for _ in 0..1003 {
        handles.push(task(&c, "job").await);
    }
    let before = c.requests_sent();
    follow_all_at_once(&tasks, &handles).await;
    assert_eq!(c.listen_streams_opened(), 1, "the three past the cap poll instead of reopening");
    assert!(c.requests_sent() - before > 2 * 1000 + 1 + 3);
}

#[tokio::test]
async fn a_listen_stream_of_ones_own_hands_over_the_ack_and_each_notification() {
    let tasks = tasks();
    let h = start(server(&tasks)).await;
    let c = client(&h.url, Recorder::new("ada")).connect().await.unwrap();
    let t = task(&c, "job").await;
    let missing = "x".repeat(43);
    let mut stream = guard("listen", c.listen(json!({ "taskIds": [t.id(), missing] }))).await.unwrap();
    let Some(ListenEvent::Notification { method, params }) = guard("the ack", stream.next()).await else {
        panic!("no acknowledgment")
    };
    assert_eq!(method, "notifications/subscriptions/acknowledged");
    assert_eq!(params["notifications"]["taskIds"], json!([t.id()]), "the unknown id is not acknowledged");
    tasks.complete(t.id(), CallToolResult::text("done"), None).await.unwrap();
    let Some(ListenEvent::Notification { method, params }) = guard("a notification", stream.next()).await else {
        panic!("no notification")
    };
    assert_eq!(method, "notifications/tasks");
    assert_eq!((params["taskId"].as_str(), params["status"].as_str()), (Some(t.id()), Some("completed")));
    assert_eq!(params["_meta"]["io.modelcontextprotocol/subscriptionId"], stream.subscription_id().to_value());
    assert_eq!(c.listen_streams_opened(), 0, "the caller's own stream is not the follow hub's");
}

#[tokio::test]
async fn a_task_past_its_ttl_ends_the_follow_with_expired() {
    let tasks = tasks();
    let h = start(server(&tasks)).await;
    // The client's wall clock is a day ahead: the 1 s TTL has long passed.
    let ahead =
        || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64 + 86_400_000;
    let c = client(&h.url, Recorder::new("ada")).wall_clock(ahead).connect().await.unwrap();
    let t = task(&c, "short").await;
    assert!(matches!(guard("wait", t.wait()).await, Err(ClientError::Expired)));
}

#[tokio::test]
async fn input_required_with_nothing_new_is_detected_as_stuck() {
    // A server that keeps asking under the same key after it was answered.
    let url = mock(|req| match req["method"].as_str().unwrap_or("") {
        "server/discover" => Reply::Result(discover()),
        "tools/call" => Reply::Result({
            let mut t = mock_task("working");
            t["resultType"] = json!("task");
            t
        }),
        "tasks/get" => Reply::Result({
            let mut t = mock_task("input_required");
            t["resultType"] = json!("complete");
            t["inputRequests"] = json!({ "k": { "method": "elicitation/create",
                "params": { "message": "Name?", "requestedSchema": { "type": "object", "properties": {} } } } });
            t
        }),
        _ => Reply::Result(json!({ "resultType": "complete" })),
    })
    .await;
    let rec = Recorder::new("ada");
    let c = client(&url, rec.clone()).stuck_after(3).push(false).connect().await.unwrap();
    let t = task(&c, "anything").await;
    assert!(matches!(guard("wait", t.wait()).await, Err(ClientError::Stuck)));
    assert_eq!(rec.asked(), vec!["k"], "answered once, never again");
}

#[tokio::test]
async fn an_unknown_task_id_is_task_not_found() {
    let tasks = tasks();
    let h = start(server(&tasks)).await;
    let c = client(&h.url, Recorder::new("ada")).connect().await.unwrap();
    assert!(matches!(guard("get", c.task("no-such-task").get()).await, Err(ClientError::TaskNotFound(_))));
    assert!(matches!(guard("wait", c.task("no-such-task").wait()).await, Err(ClientError::TaskNotFound(_))));
}
