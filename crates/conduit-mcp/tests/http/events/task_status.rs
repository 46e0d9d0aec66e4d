//! `task.status_changed`: fed by the task store's writes in both eras, only
//! to the task's owner, a minimal payload, one event id in every mode.

use super::*;
use crate::legacy_common::Legacy;

/// Alice starts a `job` task on 2026-07-28; returns its id.
async fn start_job(f: &Fixture, who: &str) -> String {
    let r = f.send_as(Some(who), &ereq(1, "tools/call", json!({ "name": "job" }))).await;
    r.assert_ok(&json!(1))["taskId"].as_str().expect("a task").to_owned()
}

// payload-minimality, occurrence-event-id-from-upstream, authz-subscribe-time
#[tokio::test]
async fn a_task_status_change_reaches_its_owner_only_with_a_minimal_payload() {
    let f = fixture().await;
    let name = json!({ "name": "task.status_changed" });
    let alice0 = f.poll(Some("alice"), name.clone()).await;
    let bob0 = f.poll(Some("bob"), name.clone()).await;
    let anon0 = f.poll(None, name.clone()).await;
    let id = start_job(&f, "alice").await;
    f.tasks.progress(&id, "halfway").await.unwrap();
    f.tasks.complete(&id, CallToolResult::text("secret result"), Some("done".into())).await.unwrap();

    // By default: the statuses a caller must act on (here: completed).
    let got = f.poll(Some("alice"), json!({ "name": "task.status_changed", "cursor": alice0["cursor"] })).await;
    let events = got["events"].as_array().unwrap();
    assert_eq!(events.len(), 1, "{got}");
    let e = &events[0];
    assert_eq!(e["name"], "task.status_changed");
    let data = e["data"].as_object().unwrap();
    let keys: Vec<&String> = data.keys().collect();
    assert_eq!(keys, ["lastUpdatedAt", "status", "statusMessage", "taskId"], "nothing else: {e}");
    assert_eq!(data["taskId"], json!(id));
    assert_eq!(data["status"], "completed");
    assert_eq!(data["statusMessage"], "done");
    assert!(!e.to_string().contains("secret result"), "no result in the payload");
    // The client reads the rest with tasks/get.
    let get = f.send_as(Some("alice"), &ereq(2, "tasks/get", json!({ "taskId": id }))).await.assert_ok(&json!(2));
    assert_eq!(get["status"], "completed");
    assert_eq!(get["lastUpdatedAt"], data["lastUpdatedAt"]);

    // Every status when asked; one task when asked.
    let all = json!({ "name": "task.status_changed", "cursor": alice0["cursor"],
                      "arguments": { "taskId": id, "statuses": ["working", "input_required", "completed"] } });
    let all = f.poll(Some("alice"), all).await;
    let statuses: Vec<&Value> = all["events"].as_array().unwrap().iter().map(|e| &e["data"]["status"]).collect();
    assert_eq!(statuses, [&json!("working"), &json!("working"), &json!("completed")], "created, progress, completed");
    let other =
        json!({ "name": "task.status_changed", "cursor": alice0["cursor"], "arguments": { "taskId": "other" } });
    assert_eq!(f.poll(Some("alice"), other).await["events"], json!([]));

    // Not bob's, and not an anonymous caller's.
    let bob = f
        .poll(
            Some("bob"),
            json!({ "name": "task.status_changed", "cursor": bob0["cursor"],
        "arguments": { "statuses": ["working", "completed"] } }),
        )
        .await;
    assert_eq!(bob["events"], json!([]));
    assert!(!bob.to_string().contains(&id));
    let anon = f.poll(None, json!({ "name": "task.status_changed", "cursor": anon0["cursor"] })).await;
    assert_eq!(anon["events"], json!([]));

    // Bad statuses are bad params.
    let bad = json!({ "name": "task.status_changed", "arguments": { "statuses": ["done"] } });
    error_of(&f.send_as(Some("alice"), &ereq(3, "events/poll", bad)).await, 3, -32602);
}

#[tokio::test]
async fn the_same_change_has_the_same_event_id_on_a_stream_and_in_a_poll() {
    let f = fixture().await;
    let start = f.poll(Some("alice"), json!({ "name": "task.status_changed" })).await;
    let mut s = f.open_as("alice", 8, json!({ "name": "task.status_changed", "cursor": start["cursor"] })).await;
    assert_eq!(next_non_heartbeat(&mut s).await["method"], "notifications/events/active");
    let id = start_job(&f, "alice").await;
    f.tasks.fail(&id, RpcError::internal("boom"), None).await.unwrap();
    let pushed = next_non_heartbeat(&mut s).await;
    assert_eq!(pushed["method"], "notifications/events/event");
    assert_eq!(pushed["params"]["data"]["status"], "failed");
    assert_eq!(pushed["params"]["data"]["taskId"], json!(id));
    let polled = f.poll(Some("alice"), json!({ "name": "task.status_changed", "cursor": start["cursor"] })).await;
    assert_eq!(polled["events"][0]["eventId"], pushed["params"]["eventId"]);
    assert_eq!(polled["events"][0]["data"], pushed["params"]["data"]);
}

#[tokio::test]
async fn a_task_of_the_2025_11_25_era_feeds_the_same_log() {
    let f = fixture().await;
    let start = f.poll(Some("alice"), json!({ "name": "task.status_changed" })).await;
    let mut c = Legacy::new(&f.h.url).with_token("alice-token");
    c.initialize(json!({ "tasks": {} })).await;
    let created = c.result(1, "tools/call", json!({ "name": "job", "task": {} })).await;
    let id = created["task"]["taskId"].as_str().expect("a legacy task").to_owned();
    f.tasks.complete(&id, CallToolResult::text("ok"), None).await.unwrap();
    let got = f.poll(Some("alice"), json!({ "name": "task.status_changed", "cursor": start["cursor"] })).await;
    assert_eq!(got["events"][0]["data"]["taskId"], json!(id), "{got}");
    assert_eq!(got["events"][0]["data"]["status"], "completed");
}

// replay-ceiling-sets-truncated, truncated-returns-fresh-cursor (the task log's own bound)
#[tokio::test]
async fn a_change_log_cursor_behind_what_is_kept_is_truncated_with_a_fresh_cursor() {
    let f = fixture_with(EventsConfig::new().retained(2, 1 << 20), HttpConfig::default()).await;
    let start = f.poll(Some("alice"), json!({ "name": "task.status_changed" })).await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        let id = start_job(&f, "alice").await;
        f.tasks.complete(&id, CallToolResult::text("ok"), None).await.unwrap();
        ids.push(id);
    }
    // Six changes (created, completed) × 3; the log keeps the last two.
    let got = f.poll(Some("alice"), json!({ "name": "task.status_changed", "cursor": start["cursor"] })).await;
    assert_eq!(got["truncated"], true);
    let seen: Vec<&Value> = got["events"].as_array().unwrap().iter().map(|e| &e["data"]["taskId"]).collect();
    assert_eq!(seen, [&json!(ids[2])], "only the last task's completion is still kept: {got}");
    let next = f.poll(Some("alice"), json!({ "name": "task.status_changed", "cursor": got["cursor"] })).await;
    assert_eq!(next["truncated"], false);
    assert_eq!(next["events"], json!([]));
}

// stream-final-result-timing: a stream of one task that ended before it began does not wait
// for what cannot come; from a cursor before the end it carries the terminal status first.
#[tokio::test]
async fn a_stream_of_a_task_that_already_ended_closes_after_its_first_read() {
    let f = fixture().await;
    let before = f.poll(Some("alice"), json!({ "name": "task.status_changed" })).await["cursor"].clone();
    let id = start_job(&f, "alice").await;
    f.tasks.complete(&id, CallToolResult::text("r"), Some("done".into())).await.unwrap();
    let one = json!({ "taskId": id });
    // From now: `active`, then the closing result at once.
    let mut now = f.open_as("alice", 31, json!({ "name": "task.status_changed", "arguments": one })).await;
    assert_eq!(next_non_heartbeat(&mut now).await["method"], "notifications/events/active");
    let result = next_non_heartbeat(&mut now).await;
    assert_eq!(result["id"], 31, "{result}");
    assert_eq!(result["result"]["resultType"], "complete");
    assert!(now.next().await.is_none(), "the stream ends after its result");
    // From a cursor before the end: the terminal status, then the result.
    let from = json!({ "name": "task.status_changed", "arguments": one, "cursor": before });
    let mut replay = f.open_as("alice", 32, from).await;
    assert_eq!(next_non_heartbeat(&mut replay).await["method"], "notifications/events/active");
    let done = next_non_heartbeat(&mut replay).await;
    assert_eq!(done["params"]["data"]["status"], "completed", "{done}");
    assert_eq!(next_non_heartbeat(&mut replay).await["id"], 32);
    // Another principal's task, or none: nothing to wait for either (and nothing shown).
    let mut bob = f.open_as("bob", 33, json!({ "name": "task.status_changed", "arguments": one })).await;
    assert_eq!(next_non_heartbeat(&mut bob).await["method"], "notifications/events/active");
    assert_eq!(next_non_heartbeat(&mut bob).await["id"], 33);
    // A task still running keeps its stream open: its terminal status comes, then the result.
    let live = start_job(&f, "alice").await;
    let mut open =
        f.open_as("alice", 34, json!({ "name": "task.status_changed", "arguments": { "taskId": live } })).await;
    assert_eq!(next_non_heartbeat(&mut open).await["method"], "notifications/events/active");
    f.tasks.complete(&live, CallToolResult::text("r"), None).await.unwrap();
    assert_eq!(next_non_heartbeat(&mut open).await["params"]["data"]["status"], "completed");
    assert_eq!(next_non_heartbeat(&mut open).await["id"], 34);
}

// stream-final-result-shape, stream-final-result-timing (server-initiated close; events.md P9, §5.2)
#[tokio::test]
async fn a_stream_of_one_task_closes_with_its_result_after_the_terminal_status() {
    let f = fixture().await;
    let id = start_job(&f, "alice").await;
    let args = json!({ "taskId": id, "statuses": ["working", "completed"] });
    let mut one = f.open_as("alice", 21, json!({ "name": "task.status_changed", "arguments": args })).await;
    let mut all = f.open_as("alice", 22, json!({ "name": "task.status_changed" })).await;
    for s in [&mut one, &mut all] {
        assert_eq!(next_non_heartbeat(s).await["method"], "notifications/events/active");
    }
    f.tasks.progress(&id, "halfway").await.unwrap();
    f.tasks.complete(&id, CallToolResult::text("r"), Some("done".into())).await.unwrap();
    let working = next_non_heartbeat(&mut one).await;
    assert_eq!(working["params"]["data"]["status"], "working");
    let done = next_non_heartbeat(&mut one).await;
    assert_eq!(done["method"], "notifications/events/event");
    assert_eq!(done["params"]["data"]["status"], "completed");
    // Then the closing result, no `terminated` (no error code means "finished").
    let result = next_non_heartbeat(&mut one).await;
    assert_eq!(result["id"], 21, "{result}");
    assert_eq!(result["result"]["resultType"], "complete");
    assert_eq!(result["result"]["_meta"][SUB_ID], 21);
    assert!(one.next().await.is_none(), "the stream ends after its result");
    // A stream of all of alice's tasks stays open after one of them finished.
    let e = next_non_heartbeat(&mut all).await;
    assert_eq!(e["params"]["data"]["status"], "completed");
    let id2 = start_job(&f, "alice").await;
    f.tasks.complete(&id2, CallToolResult::text("r"), None).await.unwrap();
    assert_eq!(next_non_heartbeat(&mut all).await["params"]["data"]["taskId"], json!(id2));
}
