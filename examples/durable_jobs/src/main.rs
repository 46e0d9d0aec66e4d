//! Durable jobs: a `SqliteStore` for tasks and a `jobs` table in the same file.
//!
//! `build` returns a task that enqueues its job in the transaction that
//! writes the task row (`TaskSpec::start_in_transaction`): both are in the
//! file or neither is. A worker loop runs queued jobs and completes their
//! tasks. Killing the process mid-job and starting it again ends with the
//! same task id completed (see README.md).

use conduit_mcp::clock::SystemClock;
use conduit_mcp::ext::tasks::{Tasks, TasksConfig};
use conduit_mcp::prelude::*;
use conduit_mcp::task::{HookError, StoreTransaction, TransactionHook, WrittenTask};
use conduit_mcp_sql::{SqliteStore, sqlite_connection};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions};
use std::net::SocketAddr;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

struct Args {
    db: String,
    listen: SocketAddr,
    job_ms: u64,
}

fn args() -> Result<Args, String> {
    let mut a =
        Args { db: "jobs.db".into(), listen: "127.0.0.1:8090".parse().map_err(|e| format!("{e}"))?, job_ms: 3_000 };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let v = it.next().ok_or_else(|| format!("{k} needs a value"))?;
        match k.as_str() {
            "--db" => a.db = v,
            "--listen" => a.listen = v.parse().map_err(|e| format!("--listen: {e}"))?,
            "--job-ms" => a.job_ms = v.parse().map_err(|e| format!("--job-ms: {e}"))?,
            _ => return Err(format!("unknown argument {k}")),
        }
    }
    Ok(a)
}

/// The jobs table lives in the tasks' database file.
async fn jobs_pool(path: &str) -> Result<SqlitePool, sqlx::Error> {
    let opts = SqliteConnectOptions::from_str(&format!("sqlite://{path}"))?
        .create_if_missing(true)
        .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
        .busy_timeout(Duration::from_secs(5));
    let pool = SqlitePoolOptions::new().max_connections(2).connect_with(opts).await?;
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS jobs (task_id TEXT PRIMARY KEY, \
         git_ref TEXT NOT NULL CHECK (length(git_ref) BETWEEN 1 AND 200), state TEXT NOT NULL)",
    )
    .execute(&pool)
    .await?;
    // Whatever was running died with the previous process: run it again.
    sqlx::query("UPDATE jobs SET state = 'queued' WHERE state = 'running'").execute(&pool).await?;
    Ok(pool)
}

/// Puts the task's job in the `jobs` table, in the transaction that writes
/// the task: a ref the table refuses (empty, or too long) refuses the call,
/// and no task is left behind.
struct Enqueue {
    git_ref: String,
}

#[async_trait::async_trait]
impl TransactionHook for Enqueue {
    async fn run(&self, tx: &mut dyn StoreTransaction, task: WrittenTask<'_>) -> Result<(), HookError> {
        sqlx::query("INSERT INTO jobs (task_id, git_ref, state) VALUES (?, ?, 'queued')")
            .bind(task.task_id)
            .bind(&self.git_ref)
            .execute(sqlite_connection(tx)?)
            .await?;
        Ok(())
    }
}

/// Claims and runs queued jobs, one at a time, forever.
async fn worker(pool: SqlitePool, tasks: Tasks, job: Duration) {
    loop {
        let next: Option<(String, String)> =
            sqlx::query_as("SELECT task_id, git_ref FROM jobs WHERE state = 'queued' LIMIT 1")
                .fetch_optional(&pool)
                .await
                .unwrap_or(None);
        let Some((id, git_ref)) = next else {
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        };
        let claimed = sqlx::query("UPDATE jobs SET state = 'running' WHERE task_id = ? AND state = 'queued'")
            .bind(&id)
            .execute(&pool)
            .await
            .map(|r| r.rows_affected() == 1)
            .unwrap_or(false);
        if !claimed {
            continue;
        }
        let _ = tasks.progress(&id, format!("Building {git_ref}")).await;
        if !tasks.cancelled(&id).await {
            tokio::time::sleep(job).await;
            let _ = tasks.complete(&id, CallToolResult::text(format!("built {git_ref}")), Some("Built".into())).await;
        }
        let _ = sqlx::query("UPDATE jobs SET state = 'done' WHERE task_id = ?").bind(&id).execute(&pool).await;
    }
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt().with_writer(std::io::stderr).init();
    let a = match args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}\nusage: durable-jobs [--db PATH] [--listen ADDR] [--job-ms N]");
            return std::process::ExitCode::from(2);
        }
    };
    let clock = Arc::new(SystemClock);
    let store = match SqliteStore::open(&a.db, clock.clone()).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let pool = match jobs_pool(&a.db).await {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: jobs table: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let tasks = match Tasks::with_clock(TasksConfig::enabled().store(Arc::new(store)), clock) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let server = Server::builder("durable-jobs", "0.1.0")
        .extension(tasks.clone())
        .tool(
            Tool::new("build", "Build a git ref in the background (survives restarts)")
                .param("ref", Param::string("Git ref").required())
                .task_support(TaskSupport::Required)
                .handle(|_ctx, args| async move {
                    let git_ref = args["ref"].as_str().unwrap_or_default().to_owned();
                    Ok(TaskSpec::new().status_message("Queued").start_in_transaction(Arc::new(Enqueue { git_ref })))
                }),
        )
        .build();
    let server = match server {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    tokio::spawn(worker(pool, tasks.clone(), Duration::from_millis(a.job_ms)));
    let served = match http::bind(a.listen).await {
        Ok(bound) => {
            eprintln!("listening on http://{}/mcp", bound.local_addr());
            bound
                .serve(server, HttpConfig::default(), async {
                    let _ = tokio::signal::ctrl_c().await;
                })
                .await
        }
        Err(e) => Err(e),
    };
    match served {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
