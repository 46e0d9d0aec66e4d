//! `notifications/tasks` on `subscriptions/listen`: one per state change of
//! a named task, with params equal to the `tasks/get` result at that moment,
//! and only to streams whose principal owns the task.

use crate::common;

use common::*;
use conduit_mcp::auth::{BearerTokens, Principal};
use conduit_mcp::ext::tasks::{Tasks, TasksConfig};
use conduit_mcp::prelude::*;
use serde_json::{Map, Value, json};

const TASKS: &str = "io.modelcontextprotocol/tasks";

fn treq(id: impl Into<Value>, method: &str, params: Value) -> Value {
    let mut p = params;
    p["_meta"] = meta_with(json!({ "elicitation": {}, "extensions": { TASKS: {} } }));
    req(id, method, p)
}

fn auth(token: &str) -> impl FnOnce(&mut reqwest::header::HeaderMap) + '_ {
    move |hd| set(hd, "authorization", &format!("Bearer {token}"))
}

/// The notification params without `_meta`, to compare with `tasks/get` minus `resultType` and `_meta`.
fn strip(mut v: Value, drop: &[&str]) -> Map<String, Value> {
    let m = v.as_object_mut().unwrap();
    for k in drop {
        m.remove(*k);
    }
    m.clone()
}

#[tokio::test]
async fn a_named_task_notifies_its_owner_on_every_change() {
    let tasks = Tasks::new(TasksConfig::enabled()).unwrap();
    let server = Server::builder("notify", "1")
        .extension(tasks.clone())
        .tool(Tool::new("job", "a task").handle(|_c, _a| async { Ok(TaskSpec::new()) }))
        .build()
        .unwrap();
    let tokens = BearerTokens::new().token("alice", Principal::new("alice")).token("bob", Principal::new("bob"));
    let h = start_with(server, HttpConfig::default().auth(tokens)).await;

    let c = h.send_with(&treq(1, "tools/call", json!({ "name": "job" })), auth("alice")).await.assert_ok(&json!(1));
    let id = c["taskId"].as_str().unwrap().to_owned();

    let listen = treq("listen-a", "subscriptions/listen", json!({ "notifications": { "taskIds": [id] } }));
    let mut alice = SseStream::new(h.post_with(&listen, auth("alice")).send().await.unwrap());
    let ack = alice.next().await.unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "listen-a");
    assert_eq!(ack["params"]["notifications"]["taskIds"], json!([id]));

    // Bob's stream names the same task: his ack drops it, and he never hears of it.
    let listen_b =
        treq(77, "subscriptions/listen", json!({ "notifications": { "taskIds": [id], "toolsListChanged": true } }));
    let mut bob = SseStream::new(h.post_with(&listen_b, auth("bob")).send().await.unwrap());
    let ack_b = bob.next().await.unwrap();
    assert_eq!(ack_b["params"]["notifications"]["taskIds"], json!([]));

    let get = treq(2, "tasks/get", json!({ "taskId": id }));
    let changes: Vec<Box<dyn Fn() -> futures_util::future::BoxFuture<'static, ()>>> = vec![
        {
            let (t, id) = (tasks.clone(), id.clone());
            Box::new(move || {
                let (t, id) = (t.clone(), id.clone());
                Box::pin(async move { t.progress(&id, "step 1").await.unwrap() })
            })
        },
        {
            let (t, id) = (tasks.clone(), id.clone());
            Box::new(move || {
                let (t, id) = (t.clone(), id.clone());
                Box::pin(async move {
                    let r = [("q".to_owned(), mrtr::elicit("Sure?", json!({"type": "object"})))].into_iter().collect();
                    t.require_input(&id, r, None).await.unwrap()
                })
            })
        },
        {
            let (t, id) = (tasks.clone(), id.clone());
            Box::new(move || {
                let (t, id) = (t.clone(), id.clone());
                Box::pin(async move { t.complete(&id, CallToolResult::text("done"), None).await.unwrap() })
            })
        },
    ];
    let mut statuses = Vec::new();
    for change in changes {
        change().await;
        let n = alice.next().await.expect("a notification per change");
        assert_eq!(n["method"], "notifications/tasks");
        assert_eq!(n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "listen-a");
        let g = h.send_with(&get, auth("alice")).await.assert_ok(&json!(2));
        assert_eq!(
            strip(n["params"].clone(), &["_meta"]),
            strip(g, &["_meta", "resultType"]),
            "params equal tasks/get"
        );
        statuses.push(n["params"]["status"].as_str().unwrap().to_owned());
    }
    assert_eq!(statuses, ["working", "input_required", "completed"]);

    // Bob's stream got nothing about the task: the next thing on it is a tools list change.
    h.server.notify_tools_list_changed();
    let next = bob.next().await.unwrap();
    assert_eq!(next["method"], "notifications/tools/list_changed");
    assert_eq!(next["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 77);
}

#[tokio::test]
async fn listen_task_ids_are_validated() {
    let tasks = Tasks::new(TasksConfig::enabled()).unwrap();
    let server = Server::builder("v", "1")
        .extension(tasks.clone())
        .tool(Tool::new("job", "a task").handle(|_c, _a| async { Ok(TaskSpec::new()) }))
        .build()
        .unwrap();
    let h = start(server).await;
    // Without the extension declared: -32021.
    let body = req(1, "subscriptions/listen", json!({ "notifications": { "taskIds": [] } }));
    h.send(&body).await.assert_error(400, -32021, &json!(1));
    // Wrong type and too many ids: -32602.
    let bad = treq(2, "subscriptions/listen", json!({ "notifications": { "taskIds": "abc" } }));
    h.send(&bad).await.assert_error(200, -32602, &json!(2));
    let many: Vec<String> = (0..1001).map(|i| format!("t{i}")).collect();
    let bad = treq(3, "subscriptions/listen", json!({ "notifications": { "taskIds": many } }));
    h.send(&bad).await.assert_error(200, -32602, &json!(3));
}
