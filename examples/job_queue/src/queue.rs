//! The queue side of a task: the `graphile_worker` schema, the example's
//! own `render_state` table, and the two transaction hooks that put a job
//! in the queue in the same transaction as the task write.
//!
//! - [`CreateRender`] runs in the transaction that creates the task: it
//!   stores what to render and adds the job (`job_key = 'mcp_task:' ||
//!   task_id`, so a task never has two jobs waiting).
//! - [`ResumeRender`] runs in the transaction that stores an answer to the
//!   task's question: once the task is `working` again, it adds the job
//!   again under the same key, and the job resumes where it stopped.

use conduit_mcp::protocol::tasks::TaskStatus;
use conduit_mcp::task::{HookError, StoreTransaction, TransactionHook, WrittenTask};
use conduit_mcp_sql::postgres_connection;
use graphile_worker::WorkerUtils;
use sqlx::{AssertSqlSafe, PgConnection, PgPool};

/// The job's identifier in the queue (the `TaskHandler`'s `IDENTIFIER`).
pub const RENDER_JOB: &str = "render";

/// Set to `1` to make [`CreateRender`] stop between its two writes (the
/// render row and the job) and print `enqueue paused` on stderr: the crash
/// test kills the server there.
pub const PAUSE_BEFORE_ENQUEUE: &str = "JOB_QUEUE_TEST_PAUSE_BEFORE_ENQUEUE";

/// Where the example's tables live: the task store's schema (`conduit_tasks`
/// beside `render_state`) and the queue's own.
#[derive(Debug, Clone)]
pub struct Schemas {
    /// The task store's schema; `render_state` is created there too.
    pub tasks: String,
    /// The `graphile_worker` schema.
    pub queue: String,
}

impl Schemas {
    /// Whether `name` can be spliced into SQL as an identifier.
    pub fn valid(name: &str) -> bool {
        !name.is_empty()
            && name.len() <= 63
            && name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
            && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    }
}

/// Creates the queue's schema (its migrations) and `render_state`.
pub async fn prepare(pool: &PgPool, schemas: &Schemas) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    WorkerUtils::new(pool.clone(), schemas.queue.clone()).migrate().await?;
    let sql = format!(
        "CREATE TABLE IF NOT EXISTS \"{}\".render_state (\
             task_id TEXT PRIMARY KEY, \
             frames INT NOT NULL CHECK (frames BETWEEN 1 AND 10000), \
             confirm BOOLEAN NOT NULL, \
             fail_attempts INT NOT NULL, \
             done_frames INT NOT NULL DEFAULT 0, \
             finishes INT NOT NULL DEFAULT 0)",
        schemas.tasks
    );
    sqlx::raw_sql(AssertSqlSafe(sql)).execute(pool).await?;
    Ok(())
}

/// What the `render` tool was asked for.
#[derive(Debug, Clone)]
pub struct RenderRequest {
    /// How many frames.
    pub frames: i32,
    /// Whether to ask the person to confirm half way.
    pub confirm: bool,
    /// How many attempts fail on purpose (to show retries).
    pub fail_attempts: i32,
}

/// The create hook: the render row, then the job.
#[derive(Debug)]
pub struct CreateRender {
    /// What to render.
    pub request: RenderRequest,
    /// Where the tables are.
    pub schemas: Schemas,
    /// How many attempts the queue makes.
    pub max_attempts: i16,
}

#[async_trait::async_trait]
impl TransactionHook for CreateRender {
    async fn run(&self, tx: &mut dyn StoreTransaction, task: WrittenTask<'_>) -> Result<(), HookError> {
        let conn = postgres_connection(tx)?;
        let sql = format!(
            "INSERT INTO \"{}\".render_state (task_id, frames, confirm, fail_attempts) VALUES ($1, $2, $3, $4)",
            self.schemas.tasks
        );
        sqlx::query(AssertSqlSafe(sql))
            .bind(task.task_id)
            .bind(self.request.frames)
            .bind(self.request.confirm)
            .bind(self.request.fail_attempts)
            .execute(&mut *conn)
            .await?;
        if std::env::var(PAUSE_BEFORE_ENQUEUE).as_deref() == Ok("1") {
            eprintln!("enqueue paused");
            std::future::pending::<()>().await;
        }
        add_job(conn, &self.schemas.queue, task.task_id, self.max_attempts).await
    }
}

/// The answer hook: once every question is answered, the job again.
#[derive(Debug)]
pub struct ResumeRender {
    /// The queue's schema.
    pub queue: String,
    /// How many attempts the queue makes.
    pub max_attempts: i16,
}

#[async_trait::async_trait]
impl TransactionHook for ResumeRender {
    async fn run(&self, tx: &mut dyn StoreTransaction, task: WrittenTask<'_>) -> Result<(), HookError> {
        // A partial answer leaves the task waiting for the rest: nothing to resume yet.
        if task.status != TaskStatus::Working {
            return Ok(());
        }
        add_job(postgres_connection(tx)?, &self.queue, task.task_id, self.max_attempts).await
    }
}

/// `graphile_worker.add_job` on the transaction's connection. The job key
/// makes a second add for the same task replace the waiting job instead of
/// queueing another.
async fn add_job(conn: &mut PgConnection, queue: &str, task_id: &str, max_attempts: i16) -> Result<(), HookError> {
    let sql = format!(
        "SELECT 1 FROM \"{queue}\".add_job($1, json_build_object('task_id', $2::text), \
             max_attempts => $3, job_key => 'mcp_task:' || $2)"
    );
    sqlx::query(AssertSqlSafe(sql)).bind(RENDER_JOB).bind(task_id).bind(i32::from(max_attempts)).execute(conn).await?;
    Ok(())
}
