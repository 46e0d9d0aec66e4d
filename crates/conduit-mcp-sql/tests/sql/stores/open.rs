//! `Stores`: one URL opens every store a server keeps, wired together. An
//! SQLite file keeps both eras' tasks and the legacy sessions (a second
//! server on the file serves them, over real sockets); the URLs and schemas
//! it cannot serve are refused before anything is opened.

use crate::support;

use support::legacy_session;
use support::served::{self, Served};

use conduit_mcp::prelude::*;
use conduit_mcp::session::SessionConfig;
use conduit_mcp_sql::{Stores, StoresError, StoresOptions};
use serde_json::{Value, json};

const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";
const TASKS: &str = "io.modelcontextprotocol/tasks";

/// A server on `stores` with one tool whose task a worker finishes; stops when dropped.
struct Node {
    served: Served,
    tasks: Tasks,
}

async fn serve(stores: &Stores) -> Node {
    let tasks = stores.tasks(TasksConfig::enabled()).expect("tasks");
    let server = Server::builder("stores", "1.0.0")
        .sessions(stores.sessions(SessionConfig::default()))
        .extension(tasks.clone())
        .tool(
            Tool::new("job", "A task a worker finishes")
                .task_support(TaskSupport::Optional)
                .handle(|_ctx, _args| async { Ok(TaskSpec::new().status_message("queued")) }),
        )
        .build()
        .expect("server");
    Node { served: served::serve(server, HttpConfig::default()).await, tasks }
}

/// POSTs `body` with the headers its era needs; returns the JSON answer (and the session header).
async fn post(url: &str, session: Option<&str>, body: Value) -> (Value, Option<String>) {
    let mut r = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    match session {
        Some(s) => r = r.header("mcp-session-id", s).header("mcp-protocol-version", LEGACY),
        None if body["method"] != "initialize" => {
            let method = body["method"].as_str().expect("a method");
            let name = body["params"]["name"].as_str().or(body["params"]["taskId"].as_str()).expect("a name");
            r = r.header("mcp-protocol-version", MODERN).header("mcp-method", method).header("mcp-name", name);
        }
        None => {}
    }
    let resp = r.body(body.to_string()).send().await.expect("sent");
    let session = resp.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let text = resp.text().await.expect("body");
    // JSON, or an SSE stream whose last message is the answer.
    let json = text.lines().filter_map(|l| l.strip_prefix("data:")).next_back().unwrap_or(&text).trim().to_owned();
    (serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {text}")), session)
}

fn modern(id: u64, method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": { "extensions": { TASKS: {} } },
    });
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

fn legacy(id: u64, method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_sqlite_url_keeps_both_eras_tasks_and_the_sessions_in_the_file() {
    let db = support::TempDb::new("stores");
    let url = format!("sqlite:{}", db.path());
    let stores = Stores::open(&url).await.expect("open");
    assert_eq!(stores.to_string(), format!("sqlite ({})", db.path()));
    let a = serve(&stores).await;

    let session = legacy_session::initialize(&a.served.url, "stores").await;
    let (created, _) =
        post(&a.served.url, Some(&session), legacy(1, "tools/call", json!({ "name": "job", "task": {} }))).await;
    let legacy_id = created["result"]["task"]["taskId"].as_str().expect("a legacy task").to_owned();
    let (created, _) = post(&a.served.url, None, modern(2, "tools/call", json!({ "name": "job" }))).await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let modern_id = created["result"]["taskId"].as_str().expect("a modern task").to_owned();
    // One handle drives both eras' tasks by id.
    a.tasks.complete(&legacy_id, CallToolResult::text("legacy done"), None).await.expect("the legacy task");

    // A second server on the same file: the session, and both tasks, are there.
    let b = serve(&Stores::open(&url).await.expect("open again")).await;
    let (got, _) = post(&b.served.url, Some(&session), legacy(3, "tasks/get", json!({ "taskId": legacy_id }))).await;
    assert_eq!(got["result"]["status"], "completed", "{got}");
    let (got, _) = post(&b.served.url, None, modern(4, "tasks/get", json!({ "taskId": modern_id }))).await;
    assert_eq!(got["result"]["status"], "working", "{got}");
    assert_eq!(got["result"]["statusMessage"], "queued", "{got}");
}

#[tokio::test]
async fn what_it_cannot_serve_is_refused_before_anything_is_opened() {
    let refused = Stores::open("mysql://db/app").await.expect_err("no such store");
    assert!(matches!(refused, StoresError::UnknownStore), "{refused:?}");
    assert_eq!(refused.to_string(), "expected memory, sqlite:PATH or postgres:URL");
    for url in ["memory", "sqlite::memory:"] {
        let refused = StoresOptions::new(url).schema("mcp").open().await.expect_err("a schema needs PostgreSQL");
        assert!(matches!(refused, StoresError::SchemaWithoutPostgres), "{url}: {refused:?}");
    }
    // Nothing listens on port 1: a refusal that tried to connect would say so.
    let unreachable = "postgres://conduit@127.0.0.1:1/none";
    for bad in ["with-dash", "a;b", &"s".repeat(50)] {
        let refused = StoresOptions::new(unreachable).schema(bad).open().await.expect_err("a bad schema");
        assert!(matches!(&refused, StoresError::Schema(s) if s == bad), "{bad}: {refused:?}");
    }
}

#[tokio::test]
async fn the_tasks_of_one_stores_are_made_once() {
    let stores = Stores::open("memory").await.expect("memory");
    assert_eq!(stores.to_string(), "memory");
    assert!(stores.session_store().is_none(), "sessions stay the config's default");
    let tasks = stores.tasks(TasksConfig::enabled()).expect("tasks");
    assert!(tasks.legacy().is_some(), "a legacy runtime is paired");
    let again = stores.clone().tasks(TasksConfig::enabled()).expect_err("made already");
    assert!(matches!(again, StoresError::TasksMade), "{again:?}");
}

#[tokio::test]
async fn a_postgres_url_is_never_repeated() {
    let Some(url) = support::pg_url("a_postgres_url_is_never_repeated") else { return };
    let schemas = support::Schemas::new(&url);
    let stores = StoresOptions::new(&url).schema(schemas.fresh()).open().await.expect("postgres");
    assert_eq!(stores.to_string(), "postgres");
    let (tasks, legacy) = stores.notifiers().expect("a notifier per era");
    assert!(tasks.channel().starts_with("conduit_tasks_") && legacy.channel().starts_with("conduit_lgcy_"));
    assert!(stores.session_store().is_some(), "sessions in the database");
    stores.stop();
}
