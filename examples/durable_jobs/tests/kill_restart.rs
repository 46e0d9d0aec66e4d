//! Killing the example mid-job and starting it again completes the same task
//! id; a job the queue refuses leaves no task behind.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

struct Proc(std::process::Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn start(db: &str) -> (Proc, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_durable-jobs"))
        .args(["--db", db, "--listen", "127.0.0.1:0", "--job-ms", "1500"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let mut tx = Some(tx);
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("listening on ")
                && let Some(t) = tx.take()
            {
                let _ = t.send(url.to_owned());
            }
        }
    });
    let url = tokio::time::timeout(Duration::from_secs(60), rx).await.expect("started in time").expect("address");
    (Proc(child), url)
}

async fn send(url: &str, body: Value) -> Value {
    let method = body["method"].as_str().unwrap_or_default().to_owned();
    let name = body["params"]["name"].as_str().or(body["params"]["taskId"].as_str()).map(String::from);
    let mut rb = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(n) = name {
        rb = rb.header("mcp-name", n);
    }
    rb.body(body.to_string()).send().await.expect("send").json().await.expect("json")
}

fn req(method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": { "extensions": { "io.modelcontextprotocol/tasks": {} } }
    });
    json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params })
}

async fn status(url: &str, id: &str) -> Value {
    send(url, req("tasks/get", json!({ "taskId": id }))).await["result"].clone()
}

/// Waits for `pred` on the task by re-reading it when the server says it changed (listen stream).
async fn wait_for(url: &str, id: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let body = req("subscriptions/listen", json!({ "notifications": { "taskIds": [id] } }));
    let mut resp = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .body(body.to_string())
        .send()
        .await
        .expect("listen");
    let first = tokio::time::timeout(Duration::from_secs(10), resp.chunk()).await.expect("ack").expect("read");
    assert!(first.is_some(), "the ack arrived");
    loop {
        let s = status(url, id).await;
        if pred(&s) {
            return s;
        }
        tokio::time::timeout(Duration::from_secs(10), resp.chunk()).await.expect("a change in time").expect("read");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_job_completes_the_same_task_after_a_restart() {
    let db = std::env::temp_dir().join(format!("durable-jobs-{:016x}.db", rand::random::<u64>()));
    let db = db.to_str().expect("utf-8").to_owned();
    let (mut first, url) = start(&db).await;
    let created = send(&url, req("tools/call", json!({ "name": "build", "arguments": { "ref": "v1.2.3" } }))).await;
    let id = created["result"]["taskId"].as_str().expect("a task").to_owned();
    // The worker picked the job up ...
    wait_for(&url, &id, |s| s["statusMessage"] == "Building v1.2.3").await;
    // ... and dies mid-job.
    first.0.kill().expect("SIGKILL");
    first.0.wait().expect("reaped");
    let (_second, url) = start(&db).await;
    assert_eq!(status(&url, &id).await["taskId"], id, "the task survived the kill");
    let done = wait_for(&url, &id, |s| s["status"] == "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "built v1.2.3");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{db}{suffix}"));
    }
}

/// The rows the example's file holds for `id`: (tasks, jobs).
async fn rows(db: &str, id: &str) -> (i64, i64) {
    use sqlx::Connection;
    let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{db}")).await.expect("open the file");
    let tasks = sqlx::query_scalar("SELECT count(*) FROM conduit_tasks WHERE task_id = ?1 OR ?1 = ''")
        .bind(id)
        .fetch_one(&mut conn)
        .await
        .expect("count tasks");
    let jobs = sqlx::query_scalar("SELECT count(*) FROM jobs WHERE task_id = ?1 OR ?1 = ''")
        .bind(id)
        .fetch_one(&mut conn)
        .await
        .expect("count jobs");
    (tasks, jobs)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_the_queue_refuses_leaves_no_task_behind() {
    let db = std::env::temp_dir().join(format!("durable-jobs-{:016x}.db", rand::random::<u64>()));
    let db = db.to_str().expect("utf-8").to_owned();
    let (_server, url) = start(&db).await;
    let ok = send(&url, req("tools/call", json!({ "name": "build", "arguments": { "ref": "v1" } }))).await;
    let id = ok["result"]["taskId"].as_str().expect("a task").to_owned();
    assert_eq!(rows(&db, &id).await, (1, 1), "the task and its job, together");
    // The jobs table refuses an empty ref: the call fails, and the task row
    // written in the same transaction is gone with it.
    let refused = send(&url, req("tools/call", json!({ "name": "build", "arguments": { "ref": "" } }))).await;
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    assert_eq!(refused["error"]["message"], "Internal error: the task could not be started");
    assert_eq!(rows(&db, "").await, (1, 1), "nothing but the first task and its job");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{db}{suffix}"));
    }
}
