//! `create_with` and `update_with` on both engines and both task tables, with a hook that writes
//! a row of the application's own (a job) on the store's connection: the
//! task and the job commit together or not at all, the hook sees its task
//! row inside the transaction, and nobody outside sees either before the
//! commit. The contract suite checks the store-agnostic rules; this file
//! checks what only a real connection can show. PostgreSQL needs
//! `DATABASE_URL`.

use crate::support;

use conduit_mcp::clock::{Clock, SystemClock};
use conduit_mcp::ext::tasks::{CreateCaps, Owner, TaskRecord, TaskStore, new_task_id};
use conduit_mcp::task::{HookError, StoreError, StoreTransaction, TransactionHook, WrittenTask};
use conduit_mcp_sql::{PostgresStore, SqliteStore, postgres_connection, sqlite_connection};
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

fn record() -> TaskRecord {
    TaskRecord::new(new_task_id(), Some("alice".into()), SystemClock.now_ms(), Some(3_600_000))
}

/// What the hook does after writing its job row.
#[derive(Default)]
enum Then {
    #[default]
    Commit,
    Fail,
    /// Tells the test it is inside the transaction, then waits for its go.
    Pause(Mutex<Option<(oneshot::Sender<()>, oneshot::Receiver<()>)>>),
}

/// Inserts a job for the task (`kind` says why), counting the task rows its
/// transaction sees, then does `then`.
struct Job {
    kind: &'static str,
    then: Then,
    rows_seen: Mutex<Vec<i64>>,
}

impl Job {
    fn new(kind: &'static str, then: Then) -> Self {
        Self { kind, then, rows_seen: Mutex::new(Vec::new()) }
    }

    async fn finish(&self) -> Result<(), HookError> {
        match &self.then {
            Then::Commit => Ok(()),
            Then::Fail => Err("the enqueue failed".into()),
            Then::Pause(p) => {
                let (inside, go) = p.lock().unwrap().take().expect("paused once");
                inside.send(()).expect("the test waits");
                go.await.map_err(|e| e.into())
            }
        }
    }
}

#[async_trait::async_trait]
impl TransactionHook for Job {
    async fn run(&self, tx: &mut dyn StoreTransaction, task: WrittenTask<'_>) -> Result<(), HookError> {
        let seen: i64 = if tx.store() == "postgres" {
            let conn = postgres_connection(tx)?;
            sqlx::query("INSERT INTO app_jobs (task_id, kind) VALUES ($1, $2)")
                .bind(task.task_id)
                .bind(self.kind)
                .execute(&mut *conn)
                .await?;
            sqlx::query_scalar(
                "SELECT (SELECT count(*) FROM conduit_tasks WHERE task_id = $1 AND version = $2) \
                 + (SELECT count(*) FROM conduit_legacy_tasks WHERE task_id = $1 AND version = $2)",
            )
            .bind(task.task_id)
            .bind(task.version as i64)
            .fetch_one(conn)
            .await?
        } else {
            let conn = sqlite_connection(tx)?;
            sqlx::query("INSERT INTO app_jobs (task_id, kind) VALUES (?1, ?2)")
                .bind(task.task_id)
                .bind(self.kind)
                .execute(&mut *conn)
                .await?;
            sqlx::query_scalar(
                "SELECT (SELECT count(*) FROM conduit_tasks WHERE task_id = ?1 AND version = ?2) \
                 + (SELECT count(*) FROM conduit_legacy_tasks WHERE task_id = ?1 AND version = ?2)",
            )
            .bind(task.task_id)
            .bind(task.version as i64)
            .fetch_one(conn)
            .await?
        };
        self.rows_seen.lock().unwrap().push(seen);
        self.finish().await
    }
}

/// The application's side of the database: its job rows.
trait Jobs {
    async fn jobs(&self, task_id: &str) -> Vec<String>;
}

/// The checks, the same on both engines.
async fn task_and_job_commit_together(store: Arc<dyn TaskStore>, jobs: &impl Jobs) {
    // Committed together.
    let a = record();
    let hook = Job::new("run", Then::Commit);
    store.create_with(a.clone(), CreateCaps::default(), &hook).await.expect("hooked create");
    assert_eq!(*hook.rows_seen.lock().unwrap(), [1], "the hook sees its task row");
    assert!(store.get(&a.task_id, Owner::Any).await.is_ok());
    assert_eq!(jobs.jobs(&a.task_id).await, ["run"]);

    // The hook wrote its job, then failed: neither the task nor the job.
    let b = record();
    let done = store.create_with(b.clone(), CreateCaps::default(), &Job::new("run", Then::Fail)).await;
    assert!(matches!(done, Err(StoreError::Hook { .. })), "{done:?}");
    assert_eq!(store.get(&b.task_id, Owner::Any).await, Err(StoreError::NotFound));
    assert_eq!(jobs.jobs(&b.task_id).await, Vec::<String>::new());

    // Nobody outside sees the task (or its job) before the commit.
    let c = record();
    let (inside_tx, inside) = oneshot::channel();
    let (go, go_rx) = oneshot::channel();
    let paused = Job::new("run", Then::Pause(Mutex::new(Some((inside_tx, go_rx)))));
    let creating = {
        let (store, c) = (store.clone(), c.clone());
        tokio::spawn(async move { store.create_with(c, CreateCaps::default(), &paused).await })
    };
    inside.await.expect("the hook runs");
    assert_eq!(store.get(&c.task_id, Owner::Any).await, Err(StoreError::NotFound), "not before the commit");
    go.send(()).expect("the hook waits");
    creating.await.expect("joined").expect("committed");
    assert!(store.get(&c.task_id, Owner::Any).await.is_ok());
    assert_eq!(jobs.jobs(&c.task_id).await, ["run"]);

    // An answer and its job (the queue resuming the work) commit together.
    let answer = |r: &TaskRecord| {
        let mut n = r.clone();
        n.status_message = Some("answered".into());
        Ok(n)
    };
    let hook = Job::new("resume", Then::Commit);
    let written = store.update_with(&a.task_id, Owner::Any, &answer, &hook).await.expect("hooked update");
    assert_eq!(*hook.rows_seen.lock().unwrap(), [1], "the hook sees the row as written (version {})", written.version);
    assert_eq!(jobs.jobs(&a.task_id).await, ["run", "resume"]);
    let done = store.update_with(&c.task_id, Owner::Any, &answer, &Job::new("resume", Then::Fail)).await;
    assert!(matches!(done, Err(StoreError::Hook { .. })), "{done:?}");
    assert_eq!(store.get(&c.task_id, Owner::Any).await.expect("c").status_message, None, "the answer rolled back");
    assert_eq!(jobs.jobs(&c.task_id).await, ["run"], "and so did its job");
}

struct PgJobs(sqlx::PgPool);

impl Jobs for PgJobs {
    async fn jobs(&self, task_id: &str) -> Vec<String> {
        sqlx::query_scalar("SELECT kind FROM app_jobs WHERE task_id = $1 ORDER BY id")
            .bind(task_id)
            .fetch_all(&self.0)
            .await
            .expect("read jobs")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_task_and_job_commit_together() {
    let Some(url) = support::pg_url("postgres_task_and_job_commit_together") else { return };
    let schemas = support::Schemas::new(&url);
    let schema = schemas.fresh();
    let store = PostgresStore::with_schema(&url, &schema, Arc::new(SystemClock)).await.expect("open");
    let app = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .after_connect({
            let schema = schema.clone();
            move |conn, _| {
                let sql = format!("SET search_path TO \"{schema}\"");
                Box::pin(async move { sqlx::raw_sql(sqlx::AssertSqlSafe(sql)).execute(conn).await.map(|_| ()) })
            }
        })
        .connect(&url)
        .await
        .expect("the application's pool");
    sqlx::raw_sql("CREATE TABLE app_jobs (id BIGSERIAL PRIMARY KEY, task_id TEXT NOT NULL, kind TEXT NOT NULL)")
        .execute(&app)
        .await
        .expect("jobs table");
    let legacy = store.legacy().await.expect("legacy store");
    let jobs = PgJobs(app);
    task_and_job_commit_together(Arc::new(store), &jobs).await;
    task_and_job_commit_together(Arc::new(legacy), &jobs).await;
}

struct SqliteJobs(sqlx::SqlitePool);

impl Jobs for SqliteJobs {
    async fn jobs(&self, task_id: &str) -> Vec<String> {
        sqlx::query_scalar("SELECT kind FROM app_jobs WHERE task_id = ?1 ORDER BY id")
            .bind(task_id)
            .fetch_all(&self.0)
            .await
            .expect("read jobs")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_task_and_job_commit_together() {
    let db = support::TempDb::new("hooks");
    let store = SqliteStore::open(db.path(), Arc::new(SystemClock)).await.expect("open");
    let app = sqlx::sqlite::SqlitePoolOptions::new()
        .max_connections(1)
        .connect(&format!("sqlite://{}", db.path()))
        .await
        .expect("the application's pool");
    sqlx::raw_sql("CREATE TABLE app_jobs (id INTEGER PRIMARY KEY, task_id TEXT NOT NULL, kind TEXT NOT NULL)")
        .execute(&app)
        .await
        .expect("jobs table");
    let legacy = store.legacy().await.expect("legacy store");
    let jobs = SqliteJobs(app);
    task_and_job_commit_together(Arc::new(store), &jobs).await;
    task_and_job_commit_together(Arc::new(legacy), &jobs).await;
}
