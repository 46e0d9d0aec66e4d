//! The `render` tool end to end: the server and the worker as processes on
//! the real PostgreSQL, clients of both eras over HTTP. Every status a task
//! passes through is recorded by a trigger on the task tables, so "no
//! `failed` before `completed`" is checked on what was written, not on what
//! a poll happened to see.

mod support;

use conduit_mcp::client::ToolOutcome;
use conduit_mcp::protocol::version::Era;
use serde_json::json;
use sqlx::AssertSqlSafe;
use support::{Db, client, follow, pg_url, render, serve, text, until, worker};

/// Records every write of a task row (status and message) in `history`.
async fn record_history(db: &Db) {
    let s = &db.tasks;
    let sql = format!(
        "CREATE TABLE \"{s}\".history (n BIGSERIAL PRIMARY KEY, task_id TEXT, status TEXT, message TEXT);
         CREATE FUNCTION \"{s}\".remember() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN
           INSERT INTO \"{s}\".history (task_id, status, message)
           VALUES (NEW.task_id, NEW.status, NEW.doc::jsonb ->> 'status_message');
           RETURN NEW;
         END $$;
         CREATE TRIGGER remember AFTER INSERT OR UPDATE ON \"{s}\".conduit_tasks
           FOR EACH ROW EXECUTE FUNCTION \"{s}\".remember();
         CREATE TRIGGER remember AFTER INSERT OR UPDATE ON \"{s}\".conduit_legacy_tasks
           FOR EACH ROW EXECUTE FUNCTION \"{s}\".remember();"
    );
    sqlx::raw_sql(AssertSqlSafe(sql)).execute(&db.pool).await.expect("history trigger");
}

/// Every (status, message) written for the task, in order.
async fn history(db: &Db, task_id: &str) -> Vec<(String, String)> {
    let sql =
        format!("SELECT status, coalesce(message, '') FROM \"{}\".history WHERE task_id = $1 ORDER BY n", db.tasks);
    sqlx::query_as(AssertSqlSafe(sql)).bind(task_id).fetch_all(&db.pool).await.expect("history")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_render_completes_on_both_eras_with_progress() {
    let Some(url) = pg_url("a_render_completes_on_both_eras_with_progress") else { return };
    let db = Db::new(&url).await;
    let (_server, mcp) = serve(&db, &[]).await;
    record_history(&db).await;
    // Both tasks are created before any worker runs: each has its one job.
    let mut tasks = Vec::new();
    for era in [Era::Modern, Era::Legacy] {
        let (c, _) = client(&mcp, era, true).await;
        let task = render(&c, json!({ "frames": 5 })).await;
        assert_eq!(db.jobs(task.id()).await, 1, "{era:?}: the job was written with the task");
        tasks.push((era, c, task));
    }
    let _worker = worker(&db, 4, 20).await;
    for (era, _client, task) in &tasks {
        let (outcome, _) = follow(task).await;
        assert_eq!(text(&outcome), "rendered 5 frames", "{era:?}");
        let written = history(&db, task.id()).await;
        let progress: Vec<&str> = written.iter().map(|(_, m)| m.as_str()).filter(|m| m.starts_with("frame ")).collect();
        assert_eq!(
            progress,
            ["frame 1 of 5", "frame 2 of 5", "frame 3 of 5", "frame 4 of 5", "frame 5 of 5"],
            "{era:?}"
        );
        assert_eq!(written.last().map(|(s, _)| s.as_str()), Some("completed"));
        until("the completing run counts itself", || async { db.finishes(task.id()).await >= 1 }).await;
        assert_eq!(db.finishes(task.id()).await, 1, "{era:?}: completed by exactly one run");
        until("the job leaves the queue", || async { db.jobs(task.id()).await == 0 }).await;
    }
    db.drop_schemas().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_attempt_is_retried_without_the_task_ever_failing() {
    let Some(url) = pg_url("a_failed_attempt_is_retried_without_the_task_ever_failing") else { return };
    let db = Db::new(&url).await;
    let (_server, mcp) = serve(&db, &[]).await;
    record_history(&db).await;
    let _worker = worker(&db, 2, 10).await;
    let (c, _) = client(&mcp, Era::Modern, true).await;
    // The first attempt fails at frame 3; the queue runs the job again (its
    // own backoff, about 3 s) and the second attempt resumes from frame 3.
    let task = render(&c, json!({ "frames": 4, "fail_attempts": 1 })).await;
    let (outcome, _) = follow(&task).await;
    assert_eq!(text(&outcome), "rendered 4 frames");
    let written = history(&db, task.id()).await;
    let statuses: Vec<&str> = written.iter().map(|(s, _)| s.as_str()).collect();
    assert!(!statuses.contains(&"failed"), "never failed on the way: {written:?}");
    let messages: Vec<&str> = written.iter().map(|(_, m)| m.as_str()).collect();
    let retry = "attempt 1 of 3 failed (simulated failure at frame 3); retrying";
    assert!(messages.contains(&retry), "the retry is said: {messages:?}");
    let frames: Vec<&str> = messages.iter().copied().filter(|m| m.starts_with("frame ")).collect();
    assert_eq!(frames, ["frame 1 of 4", "frame 2 of 4", "frame 3 of 4", "frame 4 of 4"], "resumed, not restarted");
    until("the completing run counts itself", || async { db.finishes(task.id()).await >= 1 }).await;
    assert_eq!(db.finishes(task.id()).await, 1);
    db.drop_schemas().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_the_queue_gives_up_on_fails_its_task_once() {
    let Some(url) = pg_url("a_job_the_queue_gives_up_on_fails_its_task_once") else { return };
    let db = Db::new(&url).await;
    let (_server, mcp) = serve(&db, &[]).await;
    record_history(&db).await;
    let _worker = worker(&db, 2, 10).await;
    let (c, _) = client(&mcp, Era::Modern, true).await;
    let task = render(&c, json!({ "frames": 2, "fail_attempts": 3 })).await;
    let (outcome, _) = follow(&task).await;
    let ToolOutcome::Failed(error) = outcome else { panic!("failed expected: {outcome:?}") };
    assert_eq!(error.message, "render failed after 3 attempts: simulated failure at frame 2");
    let written = history(&db, task.id()).await;
    let failed = written.iter().filter(|(s, _)| s == "failed").count();
    assert_eq!(failed, 1, "failed once, at the last attempt: {written:?}");
    let retries = written.iter().filter(|(_, m)| m.ends_with("; retrying")).count();
    assert_eq!(retries, 2, "two retries announced: {written:?}");
    db.drop_schemas().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_stops_the_running_job_within_a_frame_and_it_is_not_retried() {
    let Some(url) = pg_url("cancelling_stops_the_running_job_within_a_frame_and_it_is_not_retried") else { return };
    let db = Db::new(&url).await;
    let (_server, mcp) = serve(&db, &[]).await;
    let worker = worker(&db, 2, 100).await;
    let (c, _) = client(&mcp, Era::Modern, true).await;
    let task = render(&c, json!({ "frames": 1000 })).await;
    until("the job renders", || async { db.done_frames(task.id()).await >= 2 }).await;
    task.cancel().await.expect("cancel");
    let at_cancel = db.done_frames(task.id()).await;
    worker.line("render job ended ended=Stopped(\"cancelled\")").await;
    let (outcome, _) = follow(&task).await;
    assert!(matches!(outcome, ToolOutcome::Cancelled(_)), "{outcome:?}");
    // A retried job keeps its row (to run later); this one leaves the queue.
    until("the job leaves the queue", || async { db.jobs(task.id()).await == 0 }).await;
    assert!(db.done_frames(task.id()).await <= at_cancel + 1, "stopped within one frame of the cancel");
    assert_eq!(db.finishes(task.id()).await, 0);
    db.drop_schemas().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_mid_flight_ends_the_job_and_the_answer_resumes_it() {
    let Some(url) = pg_url("a_question_mid_flight_ends_the_job_and_the_answer_resumes_it") else { return };
    let db = Db::new(&url).await;
    let (_server, mcp) = serve(&db, &[]).await;
    record_history(&db).await;
    let worker = worker(&db, 2, 10).await;
    for era in [Era::Modern, Era::Legacy] {
        let (c, asked) = client(&mcp, era, true).await;
        let task = render(&c, json!({ "frames": 6, "confirm": true })).await;
        let (outcome, _) = follow(&task).await;
        assert_eq!(text(&outcome), "rendered 6 frames", "{era:?}");
        // (The 2025-11-25 era asks with a request of the server's, keyed by its id.)
        assert_eq!(asked.lock().unwrap().len(), 1, "{era:?}: asked once");
        let written = history(&db, task.id()).await;
        let waiting = written.iter().position(|(s, _)| s == "input_required").expect("it asked");
        let frames_before = written[..waiting].iter().filter(|(_, m)| m.starts_with("frame ")).count();
        let frames_after = written[waiting..].iter().filter(|(_, m)| m.starts_with("frame ")).count();
        assert_eq!((frames_before, frames_after), (3, 3), "{era:?}: resumed where it stopped: {written:?}");
        until("the completing run counts itself", || async { db.finishes(task.id()).await >= 1 }).await;
        assert_eq!(db.finishes(task.id()).await, 1);
    }
    // No worker slept through the question: each job run ended when it asked.
    worker.line("render job ended ended=Asked").await;
    let (c, _) = client(&mcp, Era::Modern, false).await;
    let task = render(&c, json!({ "frames": 4, "confirm": true })).await;
    let (outcome, _) = follow(&task).await;
    assert_eq!(text(&outcome), "stopped after frame 2: not confirmed");
    db.drop_schemas().await;
}
