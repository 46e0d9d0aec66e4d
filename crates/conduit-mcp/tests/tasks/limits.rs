//! What a task keeps of what a client sent, and the byte budget next to the
//! row cap (issue 11, finding 3), over a real socket: the whole
//! `clientCapabilities` and a client-sized status message no longer go into
//! the record, answers are bounded, and 10 000 creates of the largest kind a
//! client can make stay under `TasksConfig::byte_budget`.

use crate::common;

use common::*;
use conduit_mcp::ext::tasks::limits::{MAX_ANSWER_BYTES, MAX_CLIENT_BYTES_PER_TASK, MAX_STATUS_MESSAGE_BYTES};
use conduit_mcp::ext::tasks::{TaskRecord, Tasks, TasksConfig};
use conduit_mcp::prelude::*;
use serde_json::{Value, json};

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// A server whose `job` tool puts the client's `name` in its status message
/// (as the reference server's demo `job` did).
fn server(tasks: &Tasks) -> Server {
    Server::builder("limits", "1")
        .extension(tasks.clone())
        .tool(Tool::new("job", "a task named by the client").param("name", Param::string("name")).handle(
            |_c, args| async move {
                let name = args["name"].as_str().unwrap_or_default().to_owned();
                Ok(TaskSpec::new().status_message(format!("Queued: {name}")))
            },
        ))
        .build()
        .unwrap()
}

/// `clientCapabilities` declaring every input kind, padded with `pad` bytes
/// under keys no task needs.
fn padded_caps(pad: usize) -> Value {
    let junk = "x".repeat(pad / 2);
    json!({
        "extensions": { TASKS: {}, "x-other": { "junk": junk } },
        "elicitation": { "form": {}, "url": {} },
        "sampling": { "tools": {} },
        "roots": { "listChanged": true },
        "experimental": { "junk": junk },
    })
}

fn create(id: i64, caps: Value, name: &str) -> Value {
    let mut p = json!({ "name": "job", "arguments": { "name": name } });
    p["_meta"] = meta_with(caps);
    req(id, "tools/call", p)
}

fn stored_bytes(r: &TaskRecord) -> usize {
    serde_json::to_vec(r).map(|v| v.len()).unwrap_or(usize::MAX)
}

#[tokio::test]
async fn a_task_keeps_what_it_needs_not_what_the_client_sent() {
    let tasks = Tasks::new(TasksConfig::enabled()).unwrap();
    let h = start(server(&tasks)).await;
    let mib = 1024 * 1024;
    let c = h.send(&create(1, padded_caps(mib), &"n".repeat(mib))).await.assert_ok(&json!(1));
    let rec = tasks.status(c["taskId"].as_str().unwrap()).await.unwrap();
    assert_eq!(
        Value::Object(rec.client_capabilities.0.clone()),
        json!({ "elicitation": { "form": {}, "url": {} }, "sampling": { "tools": {} }, "roots": {} }),
        "only the declarations input requests are judged by"
    );
    let message = rec.status_message.clone().unwrap_or_default();
    assert!(message.starts_with("Queued: nnn") && message.len() <= MAX_STATUS_MESSAGE_BYTES, "{}", message.len());
    assert!(stored_bytes(&rec) <= MAX_CLIENT_BYTES_PER_TASK, "{} bytes stored", stored_bytes(&rec));
    // The wire shows the bounded message too.
    let g = h.send(&req(2, "tasks/get", json!({ "taskId": rec.task_id, "_meta": meta_with(padded_caps(0)) }))).await;
    assert_eq!(g.assert_ok(&json!(2))["statusMessage"], json!(message));
}

#[tokio::test]
async fn ten_thousand_largest_creates_stay_under_the_byte_budget() {
    let config = TasksConfig::enabled();
    let budget = config.byte_budget().expect("a row cap, so a budget");
    let max_rows = config.max_rows.expect("a row cap");
    assert_eq!(max_rows, 10_000, "the default row cap");
    let tasks = Tasks::new(config).unwrap();
    let h = start(server(&tasks)).await;
    // Past every bound a create has: a status message longer than kept, and
    // capabilities padded past what a task keeps.
    let (caps, name) = (padded_caps(8 * 1024), "n".repeat(2 * MAX_STATUS_MESSAGE_BYTES));
    let body = create(1, caps, &name);
    let mut ids = Vec::with_capacity(max_rows);
    for chunk in 0..max_rows / 50 {
        let sends = (0..50).map(|_| h.send(&body));
        for r in futures_util::future::join_all(sends).await {
            ids.push(r.assert_ok(&json!(1))["taskId"].as_str().unwrap().to_owned());
        }
        assert_eq!(ids.len(), (chunk + 1) * 50);
    }
    let mut total = 0usize;
    for id in &ids {
        total += stored_bytes(&tasks.status(id).await.unwrap());
    }
    assert!(total <= budget, "{} creates hold {total} bytes, over the budget of {budget}", ids.len());
    // The cap then refuses, and the budget still holds.
    h.send(&body).await.assert_error(200, -32603, &json!(1));
}

#[tokio::test]
async fn an_answer_past_its_bound_is_ignored() {
    let tasks = Tasks::new(TasksConfig::enabled()).unwrap();
    let h = start(server(&tasks)).await;
    let c = h.send(&create(1, padded_caps(0), "ask")).await.assert_ok(&json!(1));
    let id = c["taskId"].as_str().unwrap().to_owned();
    let ask =
        conduit_mcp::mrtr::elicit("Text?", json!({ "type": "object", "properties": { "t": { "type": "string" } } }));
    tasks.require_input(&id, [("k".to_owned(), ask)].into_iter().collect(), None).await.unwrap();
    let update = |text: String| {
        let p = json!({ "taskId": id, "inputResponses": { "k": { "action": "accept", "content": { "t": text } } } });
        req(
            3,
            "tasks/update",
            json!({ "taskId": p["taskId"], "inputResponses": p["inputResponses"], "_meta": meta_with(padded_caps(0)) }),
        )
    };
    h.send(&update("x".repeat(MAX_ANSWER_BYTES))).await.assert_ok(&json!(3));
    let rec = tasks.status(&id).await.unwrap();
    assert!(rec.input_requests.contains_key("k") && rec.input_responses.is_empty(), "a too-large answer is ignored");
    h.send(&update("fits".into())).await.assert_ok(&json!(3));
    let rec = tasks.status(&id).await.unwrap();
    assert_eq!(rec.input_responses["k"]["content"]["t"], "fits");
}

/// One principal cannot take every slot: past its own cap it gets
/// `-32603 "Task limit reached"` with `data.cap = "principal"`, while another
/// principal still creates, up to the row cap (`data.cap = "server"`).
#[tokio::test]
async fn the_per_principal_cap_is_named_on_the_wire() {
    use conduit_mcp::auth::{BearerTokens, Principal};
    let tasks = Tasks::new(TasksConfig::enabled().max_rows(Some(4)).max_rows_per_principal(Some(3))).unwrap();
    let auth = BearerTokens::new().token("a-token", Principal::new("alice")).token("b-token", Principal::new("bob"));
    let h = start_with(server(&tasks), HttpConfig::default().auth(auth)).await;
    let send = |token: &'static str| {
        let body = create(1, padded_caps(0), "job");
        let h = &h;
        async move { h.send_with(&body, |hd| set(hd, "authorization", &format!("Bearer {token}"))).await }
    };
    for _ in 0..3 {
        send("a-token").await.assert_ok(&json!(1));
    }
    let refused = send("a-token").await;
    refused.assert_error(200, -32603, &json!(1));
    let e = &refused.response()["error"];
    assert_eq!((e["message"].as_str(), e["data"]["cap"].as_str()), (Some("Task limit reached"), Some("principal")));
    send("b-token").await.assert_ok(&json!(1));
    let full = send("b-token").await;
    full.assert_error(200, -32603, &json!(1));
    assert_eq!(full.response()["error"]["data"]["cap"], "server");
}

#[test]
fn the_default_per_principal_cap_is_a_quarter_of_the_row_cap() {
    let caps = TasksConfig::enabled().create_caps();
    assert_eq!((caps.max_rows, caps.max_rows_per_owner), (Some(10_000), Some(2_500)));
    let unlimited = TasksConfig::enabled().max_rows(None).create_caps();
    assert_eq!((unlimited.max_rows, unlimited.max_rows_per_owner), (None, None));
}

/// A principal that ends its tasks is never locked out by them (issue 34): the
/// per-principal cap counts live tasks, so ten rounds of filling it and then
/// cancelling or completing every task all create. What it keeps of its
/// ended tasks is bounded apart: at most its cap of them (here 3), the
/// newest, each readable as it ended; older ones went before their TTL.
#[tokio::test]
async fn ended_tasks_do_not_hold_a_principals_live_slots() {
    use conduit_mcp::auth::{BearerTokens, Principal};
    let tasks = Tasks::new(TasksConfig::enabled().max_rows(Some(100)).max_rows_per_principal(Some(3))).unwrap();
    let auth = BearerTokens::new().token("a-token", Principal::new("alice"));
    let h = start_with(server(&tasks), HttpConfig::default().auth(auth)).await;
    let bearer = |hd: &mut reqwest::header::HeaderMap| set(hd, "authorization", "Bearer a-token");
    let mut ended = Vec::new();
    for round in 0..10 {
        let mut ids = Vec::new();
        for _ in 0..3 {
            let created = h.send_with(&create(1, padded_caps(0), "job"), bearer).await;
            ids.push(created.assert_ok(&json!(1))["taskId"].as_str().expect("an id").to_owned());
        }
        let refused = h.send_with(&create(1, padded_caps(0), "job"), bearer).await;
        assert_eq!(refused.response()["error"]["data"]["cap"], "principal", "round {round}: at the cap");
        for (i, id) in ids.iter().enumerate() {
            if i == 0 {
                tasks.complete(id, CallToolResult::text("done"), None).await.expect("complete");
            } else {
                let cancel = req(2, "tasks/cancel", json!({ "taskId": id, "_meta": meta_with(padded_caps(0)) }));
                h.send_with(&cancel, bearer).await.assert_ok(&json!(2));
            }
        }
        ended.extend(ids);
    }
    let (gone, kept) = ended.split_at(ended.len() - 3);
    for (id, status) in kept.iter().zip(["completed", "cancelled", "cancelled"]) {
        let get = req(3, "tasks/get", json!({ "taskId": id, "_meta": meta_with(padded_caps(0)) }));
        assert_eq!(h.send_with(&get, bearer).await.assert_ok(&json!(3))["status"], status);
    }
    for id in gone {
        let get = req(4, "tasks/get", json!({ "taskId": id, "_meta": meta_with(padded_caps(0)) }));
        h.send_with(&get, bearer).await.assert_error(200, -32602, &json!(4));
    }
}

/// What a principal's ended tasks hold is bounded in bytes (issue 34): past
/// `max_terminal_bytes_per_principal` (records as JSON), its oldest ended
/// tasks go as the next one ends; the newest stay readable with their results.
#[tokio::test]
async fn a_principals_ended_tasks_are_bounded_in_bytes() {
    use conduit_mcp::auth::{BearerTokens, Principal};
    let config = TasksConfig::enabled().max_rows(Some(100)).max_terminal_bytes_per_principal(Some(8 * 1024));
    let tasks = Tasks::new(config).unwrap();
    let auth = BearerTokens::new().token("a-token", Principal::new("alice")).token("b-token", Principal::new("bob"));
    let h = start_with(server(&tasks), HttpConfig::default().auth(auth)).await;
    let with = |token: &'static str| {
        move |hd: &mut reqwest::header::HeaderMap| set(hd, "authorization", &format!("Bearer {token}"))
    };
    let mut ids = Vec::new();
    for (i, token) in ["b-token", "a-token", "a-token", "a-token", "a-token", "a-token"].into_iter().enumerate() {
        let created = h.send_with(&create(1, padded_caps(0), "job"), with(token)).await;
        let id = created.assert_ok(&json!(1))["taskId"].as_str().expect("an id").to_owned();
        let text = format!("{i}{}", "r".repeat(3_000));
        tasks.complete(&id, CallToolResult::text(text), None).await.expect("complete");
        ids.push((token, id));
    }
    // Each of alice's records is about 3.5 KB: two fit in 8 KiB, three do not.
    let sizes: Vec<usize> = futures_util::future::join_all(ids[4..].iter().map(|(_, id)| tasks.status(id)))
        .await
        .into_iter()
        .map(|r| stored_bytes(&r.expect("kept")))
        .collect();
    assert!(sizes.iter().all(|s| (3_000..4_096).contains(s)), "{sizes:?}");
    for (n, (token, id)) in ids.iter().enumerate() {
        let get = req(n as i64, "tasks/get", json!({ "taskId": id, "_meta": meta_with(padded_caps(0)) }));
        let got = h.send_with(&get, with(token)).await;
        if (1..4).contains(&n) {
            got.assert_error(200, -32602, &json!(n));
        } else {
            assert_eq!(got.assert_ok(&json!(n))["status"], "completed", "task {n}: bob's, or alice's two newest");
        }
    }
}

/// A principal's own ended tasks never stand in its way at the row cap either
/// (issue 34): its create takes the place of its oldest ended task. Nobody
/// else's results go for it: another principal with none of its own is
/// refused, as before, and so is a principal whose tasks are all live.
#[tokio::test]
async fn at_the_row_cap_a_create_takes_its_principals_oldest_ended_task() {
    use conduit_mcp::auth::{BearerTokens, Principal};
    let tasks = Tasks::new(TasksConfig::enabled().max_rows(Some(4)).max_rows_per_principal(Some(5))).unwrap();
    let auth = BearerTokens::new().token("a-token", Principal::new("alice")).token("b-token", Principal::new("bob"));
    let h = start_with(server(&tasks), HttpConfig::default().auth(auth)).await;
    let with = |token: &'static str| {
        move |hd: &mut reqwest::header::HeaderMap| set(hd, "authorization", &format!("Bearer {token}"))
    };
    let mut ids = Vec::new();
    for _ in 0..4 {
        let created = h.send_with(&create(1, padded_caps(0), "job"), with("a-token")).await;
        let id = created.assert_ok(&json!(1))["taskId"].as_str().expect("an id").to_owned();
        tasks.complete(&id, CallToolResult::text("done"), None).await.expect("complete");
        ids.push(id);
    }
    let bob = h.send_with(&create(1, padded_caps(0), "job"), with("b-token")).await;
    bob.assert_error(200, -32603, &json!(1));
    assert_eq!(bob.response()["error"]["data"]["cap"], "server", "alice's results do not go for bob");
    for _ in 0..4 {
        h.send_with(&create(1, padded_caps(0), "job"), with("a-token")).await.assert_ok(&json!(1));
    }
    for (n, id) in ids.iter().enumerate() {
        let get = req(n as i64, "tasks/get", json!({ "taskId": id, "_meta": meta_with(padded_caps(0)) }));
        h.send_with(&get, with("a-token")).await.assert_error(200, -32602, &json!(n));
    }
    let full = h.send_with(&create(1, padded_caps(0), "job"), with("a-token")).await;
    full.assert_error(200, -32603, &json!(1));
    assert_eq!(full.response()["error"]["data"]["cap"], "server", "four live tasks of hers");
}
