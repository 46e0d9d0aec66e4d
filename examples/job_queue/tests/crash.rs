//! `kill -9`, three ways: the worker with 50 jobs running, the server with
//! 50 tasks in flight, and the server between writing a task and adding its
//! job. Nothing is lost, nothing is completed twice, and no task is left
//! without its job (nor a job without its task). The figures each test
//! measured are printed (`--nocapture`).

mod support;

use conduit_mcp::client::Client;
use conduit_mcp::protocol::version::Era;
use serde_json::json;
use std::time::Instant;
use support::{Db, client, pg_url, render, serve, until, worker};

const TASKS: usize = 50;

/// Creates `TASKS` renders of `frames` frames; their ids.
async fn create_all(c: &Client, frames: u32) -> Vec<String> {
    let mut ids = Vec::new();
    for _ in 0..TASKS {
        ids.push(render(c, json!({ "frames": frames })).await.id().to_owned());
    }
    ids
}

/// Counts the given tasks' rows by status.
async fn count_status(db: &Db, status: &str) -> i64 {
    let sql = "SELECT count(*) FROM \"{tasks}\".conduit_tasks WHERE status = $1";
    db.count(sql, status).await
}

/// Waits until every task is completed and every run that completed one
/// has counted it (the count follows the completion); then each task must
/// have been completed by exactly one run.
async fn completed_once_each(db: &Db, ids: &[String]) {
    until("every task completes", || async {
        count_status(db, "completed").await == TASKS as i64
            && db.scalar("SELECT sum(finishes)::bigint FROM \"{tasks}\".render_state").await >= TASKS as i64
    })
    .await;
    for id in ids {
        assert_eq!(db.finishes(id).await, 1, "each task completed by exactly one run");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_worker_s_50_running_jobs_are_recovered_and_complete_once() {
    let Some(url) = pg_url("a_killed_worker_s_50_running_jobs_are_recovered_and_complete_once") else { return };
    let db = Db::new(&url).await;
    let (_server, mcp) = serve(&db, &[]).await;
    let (c, _) = client(&mcp, Era::Modern, true).await;
    let ids = create_all(&c, 30).await;
    let mut first = worker(&db, TASKS, 100).await;
    // Every job is running (each has rendered a frame) when the worker dies.
    until("all 50 jobs run", || async {
        db.scalar("SELECT count(*) FROM \"{tasks}\".render_state WHERE done_frames >= 1").await == TASKS as i64
    })
    .await;
    first.kill();
    let killed_at = Instant::now();
    let frames_at_kill = db.scalar("SELECT sum(done_frames)::bigint FROM \"{tasks}\".render_state").await;
    assert_eq!(count_status(&db, "working").await, TASKS as i64, "the tasks wait, intact");
    let _second = worker(&db, TASKS, 100).await;
    completed_once_each(&db, &ids).await;
    let total_frames = db.scalar("SELECT sum(done_frames)::bigint FROM \"{tasks}\".render_state").await;
    assert_eq!(total_frames, 30 * TASKS as i64, "every frame recorded once");
    eprintln!(
        "worker kill: {TASKS}/{TASKS} completed {:.1} s after the kill; {frames_at_kill} of {} frames were done at \
         the kill and not rendered again; each completed by exactly one run",
        killed_at.elapsed().as_secs_f64(),
        30 * TASKS
    );
    db.drop_schemas().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_s_50_tasks_are_finished_by_the_worker() {
    let Some(url) = pg_url("a_killed_server_s_50_tasks_are_finished_by_the_worker") else { return };
    let db = Db::new(&url).await;
    let (mut server, mcp) = serve(&db, &[]).await;
    let (c, _) = client(&mcp, Era::Modern, true).await;
    let ids = create_all(&c, 10).await;
    let _worker = worker(&db, TASKS, 50).await;
    let started =
        || async { db.scalar("SELECT count(*) FROM \"{tasks}\".render_state WHERE done_frames >= 1").await > 0 };
    until("the worker starts on them", started).await;
    server.kill();
    completed_once_each(&db, &ids).await;
    // A new server reads them: the same ids, completed, with their results.
    let (_again, mcp) = serve(&db, &[]).await;
    let (c, _) = client(&mcp, Era::Modern, true).await;
    for id in &ids {
        let task = c.task(id).get().await.expect("tasks/get");
        assert_eq!(task.result.as_ref().map(|r| r["content"][0]["text"].clone()), Some(json!("rendered 10 frames")));
    }
    eprintln!(
        "server kill: {TASKS}/{TASKS} tasks completed by the worker while no server ran, each by exactly one run"
    );
    db.drop_schemas().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_between_the_task_and_its_job_leaves_neither() {
    let Some(url) = pg_url("a_server_killed_between_the_task_and_its_job_leaves_neither") else { return };
    let db = Db::new(&url).await;
    let (mut server, mcp) = serve(&db, &[(job_queue_pause(), "1")]).await;
    let (c, _) = client(&mcp, Era::Modern, true).await;
    let calling = tokio::spawn(async move { c.call_tool("render", json!({ "frames": 3 })).await.map(|_| ()) });
    server.line("enqueue paused").await;
    server.kill();
    assert!(calling.await.expect("joined").is_err(), "the call got no task");
    let all = |table: &'static str| {
        let sql = format!("SELECT count(*) FROM {table}");
        let db = &db;
        async move { db.scalar(&sql).await }
    };
    assert_eq!(all("\"{tasks}\".conduit_tasks").await, 0, "no task without its job");
    assert_eq!(all("\"{tasks}\".render_state").await, 0, "no render row");
    assert_eq!(all("\"{queue}\".jobs").await, 0, "no job without its task");
    // The next server writes both, together.
    let (_server, mcp) = serve(&db, &[]).await;
    let (c, _) = client(&mcp, Era::Modern, true).await;
    let task = render(&c, json!({ "frames": 3 })).await;
    assert_eq!(db.jobs(task.id()).await, 1);
    assert_eq!(all("\"{tasks}\".conduit_tasks").await, 1);
    db.drop_schemas().await;
}

/// The example's fault-injection switch (see `queue::PAUSE_BEFORE_ENQUEUE`).
fn job_queue_pause() -> &'static str {
    "JOB_QUEUE_TEST_PAUSE_BEFORE_ENQUEUE"
}
