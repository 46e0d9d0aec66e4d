//! The example's processes and database, for its tests: a fresh pair of
//! schemas per test (dropped at the end), the server and the worker as
//! child processes (killable with SIGKILL), and clients of both eras.
#![allow(dead_code)]

use async_trait::async_trait;
use conduit_mcp::client::{
    Ask, CallOutcome, Client, ClientBuilder, ClientError, InputHandler, InputSupport, TaskEvent, TaskHandle,
    ToolOutcome, elicit_accept,
};
use conduit_mcp::protocol::tasks::TaskStatus;
use conduit_mcp::protocol::version::Era;
use serde_json::{Value, json};
use sqlx::{AssertSqlSafe, PgPool};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::broadcast;

/// How long any one thing may take before the test fails instead of hanging.
pub const PATIENCE: Duration = Duration::from_secs(90);

/// Fails the test instead of hanging when `what` never happens.
pub async fn within<F: std::future::Future>(what: &str, fut: F) -> F::Output {
    tokio::time::timeout(PATIENCE, fut).await.unwrap_or_else(|_| panic!("timed out: {what}"))
}

/// Waits until `check` holds, looking again every 20 ms: for conditions in
/// the database that no event announces (a job row leaving the queue).
pub async fn until<F, Fut>(what: &str, check: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    within(what, async {
        loop {
            tick.tick().await;
            if check().await {
                return;
            }
        }
    })
    .await
}

/// The database URL; the tests need PostgreSQL (`None`: skipped, unless
/// `CONDUIT_REQUIRE_POSTGRES=1`, as in CI, makes that a failure).
pub fn pg_url(test: &str) -> Option<String> {
    match std::env::var("DATABASE_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var("CONDUIT_REQUIRE_POSTGRES").as_deref() != Ok("1"),
                "{test}: CONDUIT_REQUIRE_POSTGRES=1 but DATABASE_URL is not set"
            );
            eprintln!("skipping {test}: DATABASE_URL is not set");
            None
        }
    }
}

/// A test's database: its own task and queue schemas, dropped afterwards.
pub struct Db {
    pub url: String,
    pub tasks: String,
    pub queue: String,
    pub pool: PgPool,
}

impl Db {
    pub async fn new(url: &str) -> Self {
        let tag = format!("{:012x}", rand::random::<u64>() >> 16);
        let pool = sqlx::postgres::PgPoolOptions::new().max_connections(2).connect(url).await.expect("connect");
        Self { url: url.to_owned(), tasks: format!("jq_tasks_{tag}"), queue: format!("jq_queue_{tag}"), pool }
    }

    /// The arguments every subcommand takes for this database.
    fn args(&self) -> Vec<String> {
        ["--database-url", &self.url, "--schema", &self.tasks, "--queue-schema", &self.queue].map(String::from).to_vec()
    }

    /// One number from SQL on this database (the schemas spliced in).
    pub async fn count(&self, sql: &str, task_id: &str) -> i64 {
        let sql = sql.replace("{tasks}", &self.tasks).replace("{queue}", &self.queue);
        sqlx::query_scalar(AssertSqlSafe(sql)).bind(task_id).fetch_one(&self.pool).await.expect("count")
    }

    /// One number from SQL without parameters (the schemas spliced in).
    pub async fn scalar(&self, sql: &str) -> i64 {
        let sql = sql.replace("{tasks}", &self.tasks).replace("{queue}", &self.queue);
        sqlx::query_scalar(AssertSqlSafe(sql)).fetch_one(&self.pool).await.expect("scalar")
    }

    /// The jobs waiting or running for a task.
    pub async fn jobs(&self, task_id: &str) -> i64 {
        self.count("SELECT count(*) FROM \"{queue}\".jobs WHERE key = 'mcp_task:' || $1", task_id).await
    }

    /// How many runs completed the task.
    pub async fn finishes(&self, task_id: &str) -> i64 {
        self.count(
            "SELECT coalesce(sum(finishes), 0)::bigint FROM \"{tasks}\".render_state WHERE task_id = $1",
            task_id,
        )
        .await
    }

    /// The frames recorded as done.
    pub async fn done_frames(&self, task_id: &str) -> i64 {
        self.count(
            "SELECT coalesce(sum(done_frames), 0)::bigint FROM \"{tasks}\".render_state WHERE task_id = $1",
            task_id,
        )
        .await
    }

    pub async fn drop_schemas(&self) {
        for s in [&self.tasks, &self.queue] {
            let sql = format!("DROP SCHEMA IF EXISTS \"{s}\" CASCADE");
            let _ = sqlx::raw_sql(AssertSqlSafe(sql)).execute(&self.pool).await;
        }
    }
}

/// A child process whose stderr lines are broadcast; killed when dropped.
pub struct Proc {
    child: Child,
    lines: broadcast::Sender<String>,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Proc {
    fn spawn(args: Vec<String>, env: &[(&str, &str)]) -> Self {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_job-queue"));
        cmd.args(args).stdout(Stdio::null()).stderr(Stdio::piped()).env("RUST_LOG", "info");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn job-queue");
        let stderr = child.stderr.take().expect("stderr");
        let (lines, _) = broadcast::channel(4096);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (tx, log) = (lines.clone(), seen.clone());
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                log.lock().unwrap().push(line.clone());
                let _ = tx.send(line);
            }
        });
        Self { child, lines, seen }
    }

    /// Waits for a stderr line containing `needle` (also one already printed); returns it.
    pub async fn line(&self, needle: &str) -> String {
        let mut rx = self.lines.subscribe();
        if let Some(l) = self.seen.lock().unwrap().iter().find(|l| l.contains(needle)) {
            return l.clone();
        }
        within(&format!("a line with {needle:?}"), async {
            loop {
                match rx.recv().await {
                    Ok(l) if l.contains(needle) => return l,
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => {
                        panic!("the process ended before printing {needle:?}: {:?}", self.seen.lock().unwrap())
                    }
                }
            }
        })
        .await
    }

    /// SIGKILL, and reaped.
    pub fn kill(&mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("reaped");
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The server on a free port; returns it with its URL.
pub async fn serve(db: &Db, env: &[(&str, &str)]) -> (Proc, String) {
    let mut args = vec!["serve".to_owned()];
    args.extend(db.args());
    args.extend(["--listen".to_owned(), "127.0.0.1:0".to_owned()]);
    let p = Proc::spawn(args, env);
    let line = p.line("listening on ").await;
    let url = line.split("listening on ").nth(1).expect("url").trim().to_owned();
    (p, url)
}

/// The worker, with short heartbeats so a killed worker's jobs come back quickly.
pub async fn worker(db: &Db, concurrency: usize, frame_ms: u64) -> Proc {
    let mut args = vec!["worker".to_owned()];
    args.extend(db.args());
    for (k, v) in [("--concurrency", concurrency.to_string()), ("--frame-ms", frame_ms.to_string())] {
        args.extend([k.to_owned(), v]);
    }
    args.extend(["--heartbeat-ms".to_owned(), "300".to_owned()]);
    let p = Proc::spawn(args, &[]);
    p.line("worker running").await;
    p
}

/// Answers the confirmation question with `yes` (and records that it was asked).
pub struct Confirm {
    pub yes: bool,
    pub asked: Arc<Mutex<Vec<String>>>,
}

#[async_trait]
impl InputHandler for Confirm {
    fn support(&self) -> InputSupport {
        InputSupport::ALL
    }

    async fn answer(&self, key: &str, ask: Ask<'_>) -> Result<Value, ClientError> {
        self.asked.lock().unwrap().push(key.to_owned());
        match ask {
            Ask::Form { .. } => Ok(elicit_accept(json!({ "confirm": self.yes }))),
            _ => Err(ClientError::Input("only the confirmation is expected".into())),
        }
    }
}

/// A client of `era` that answers the question with `yes`.
pub async fn client(url: &str, era: Era, yes: bool) -> (Client, Arc<Mutex<Vec<String>>>) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let client = ClientBuilder::http(url)
        .era(era)
        .input_handler(Confirm { yes, asked: asked.clone() })
        .poll_interval(Duration::from_millis(100))
        .max_poll_interval(Duration::from_millis(200))
        .connect()
        .await
        .expect("connect");
    (client, asked)
}

/// Calls `render`; it must become a task.
pub async fn render(client: &Client, args: Value) -> TaskHandle {
    match client.call_tool("render", args).await.expect("render") {
        CallOutcome::Task(t) => t,
        other => panic!("render did not become a task: {other:?}"),
    }
}

/// Follows a task to its end, recording every (status, message) it passed through.
pub async fn follow(task: &TaskHandle) -> (ToolOutcome, Vec<(TaskStatus, String)>) {
    let mut seen = Vec::new();
    let mut events = task.follow();
    within("the task's end", async {
        while let Some(event) = events.next().await {
            match event.expect("follow") {
                TaskEvent::Status(t) => seen.push((t.status, t.status_message.unwrap_or_default())),
                TaskEvent::Finished(outcome) => return (outcome, seen),
                _ => {}
            }
        }
        panic!("the follow ended without an outcome: {seen:?}")
    })
    .await
}

/// The text of a completed outcome.
pub fn text(outcome: &ToolOutcome) -> String {
    match outcome {
        ToolOutcome::Completed(r) => r.to_value()["content"][0]["text"].as_str().unwrap_or_default().to_owned(),
        other => panic!("not completed: {other:?}"),
    }
}
