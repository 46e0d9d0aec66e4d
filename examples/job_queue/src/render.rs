//! The job: renders a task's frames, reporting through the `Tasks` handle.
//!
//! One run of the job is one attempt. It starts from the frames already
//! done (`render_state.done_frames`), so a run after a crash or a retry
//! resumes instead of starting over, and it checks the task between frames:
//!
//! - cancelled → the run ends without an error, so the queue does not retry;
//! - a question to ask (half way, when asked for) → `require_input`, and the
//!   run ends: no worker sleeps while a person thinks. The answer's
//!   transaction adds the job again ([`ResumeRender`](crate::queue::ResumeRender));
//! - a failed frame → the run fails and the queue retries it later; the
//!   task stays `working` with a message saying so, and only the last
//!   attempt marks it `failed`.

use crate::queue::{RENDER_JOB, Schemas};
use conduit_mcp::ext::tasks::TaskRecord;
use conduit_mcp::prelude::*;
use conduit_mcp::protocol::tasks::TaskStatus;
use conduit_mcp::task::WorkerError;
use graphile_worker::{IntoTaskHandlerResult, TaskHandler, WorkerContext};
use serde::{Deserialize, Serialize};
use serde_json::json;
use sqlx::{AssertSqlSafe, PgPool};
use std::collections::BTreeMap;
use std::time::Duration;

/// The job's payload: which task to drive.
#[derive(Debug, Serialize, Deserialize)]
pub struct RenderJob {
    /// The MCP task the job runs.
    pub task_id: String,
}

impl TaskHandler for RenderJob {
    const IDENTIFIER: &'static str = RENDER_JOB;

    async fn run(self, ctx: WorkerContext) -> impl IntoTaskHandlerResult {
        let Some(renderer) = ctx.get_ext::<Renderer>() else {
            return Err("the worker was started without a renderer".to_owned());
        };
        let attempt = Attempt { number: *ctx.job().attempts(), of: *ctx.job().max_attempts() };
        renderer.run(&self.task_id, attempt).await
    }
}

/// Which attempt of the job this run is (counted by the queue from 1).
#[derive(Debug, Clone, Copy)]
struct Attempt {
    number: i16,
    of: i16,
}

/// Everything a run needs, shared by the worker's runs.
#[derive(Debug, Clone)]
pub struct Renderer {
    /// The task handle (on the same stores as the server).
    pub tasks: Tasks,
    /// The application's pool, for `render_state`.
    pub pool: PgPool,
    /// Where the tables are.
    pub schemas: Schemas,
    /// How long one frame takes.
    pub frame: Duration,
}

/// A task's render, as stored.
#[derive(Debug, sqlx::FromRow)]
struct RenderState {
    frames: i32,
    confirm: bool,
    fail_attempts: i32,
    done_frames: i32,
}

/// How a run ended without an error.
#[derive(Debug, PartialEq, Eq)]
enum Ended {
    /// Every frame is done.
    Rendered,
    /// The task asked a question; the answer brings the job back.
    Asked,
    /// The person said no at the question.
    Declined { at: i32 },
    /// The task was cancelled, finished elsewhere, or another run moved on.
    Stopped(&'static str),
}

impl Renderer {
    async fn run(&self, task_id: &str, attempt: Attempt) -> Result<(), String> {
        let task = match self.tasks.status(task_id).await {
            Ok(task) => task,
            // Expired (or never committed): nothing to run.
            Err(WorkerError::NotFound) => return Ok(()),
            Err(e) => return Err(format!("reading the task: {e}")),
        };
        let ended = match task.status {
            TaskStatus::Working => self.frames(&task, attempt).await,
            TaskStatus::InputRequired => Ok(Ended::Stopped("waiting for an answer")),
            _ => Ok(Ended::Stopped("the task is finished")),
        };
        match ended {
            Ok(Ended::Rendered) => self.finish(task_id).await,
            Ok(Ended::Declined { at }) => {
                let result = CallToolResult::text(format!("stopped after frame {at}: not confirmed"));
                self.settle(self.tasks.complete(task_id, result, Some("not confirmed".into())).await)
            }
            Ok(ended) => {
                tracing::info!(?ended, "render job ended");
                Ok(())
            }
            Err(why) if attempt.number < attempt.of => {
                let message = format!("attempt {} of {} failed ({why}); retrying", attempt.number, attempt.of);
                let _ = self.tasks.progress(task_id, message).await;
                Err(why)
            }
            Err(why) => {
                let message = format!("render failed after {} attempts: {why}", attempt.of);
                self.settle(self.tasks.fail(task_id, RpcError::internal(message.clone()), Some(message)).await)?;
                Err(why)
            }
        }
    }

    /// Renders the frames not yet done; each one is recorded before the next.
    async fn frames(&self, task: &TaskRecord, attempt: Attempt) -> Result<Ended, String> {
        let id = task.task_id.as_str();
        let state = self.state(id).await?;
        let half = state.frames / 2;
        let mut done = state.done_frames;
        while done < state.frames {
            if self.tasks.cancelled(id).await {
                return Ok(Ended::Stopped("cancelled"));
            }
            if state.confirm && done == half {
                match task.input_responses.get("confirm") {
                    None => {
                        if let Some(ended) = self.ask(id, done, state.frames).await? {
                            return Ok(ended);
                        }
                    }
                    Some(answer) if !confirmed(answer) => return Ok(Ended::Declined { at: done }),
                    Some(_) => {}
                }
            }
            if i32::from(attempt.number) <= state.fail_attempts && done == half {
                return Err(format!("simulated failure at frame {}", done + 1));
            }
            tokio::time::sleep(self.frame).await;
            if !self.advance(id, done).await? {
                return Ok(Ended::Stopped("another run moved on"));
            }
            done += 1;
            let _ = self.tasks.progress(id, format!("frame {done} of {}", state.frames)).await;
        }
        Ok(Ended::Rendered)
    }

    /// Asks the person to confirm the rest; the run ends here. `None`: the
    /// client declared no way to answer, so the render goes on unasked.
    async fn ask(&self, id: &str, done: i32, frames: i32) -> Result<Option<Ended>, String> {
        let schema = json!({
            "type": "object",
            "properties": { "confirm": { "type": "boolean", "title": "Render the rest?" } },
            "required": ["confirm"]
        });
        let message = format!("{done} of {frames} frames are rendered. Render the rest?");
        let requests = BTreeMap::from([("confirm".to_owned(), mrtr::elicit(message, schema))]);
        match self.tasks.require_input(id, requests, Some("waiting for confirmation".into())).await {
            Ok(()) => Ok(Some(Ended::Asked)),
            Err(WorkerError::Terminal | WorkerError::NotFound) => Ok(Some(Ended::Stopped("the task is finished"))),
            Err(WorkerError::UndeclaredCapability(_)) => Ok(None),
            Err(e) => Err(format!("asking: {e}")),
        }
    }

    /// Completes the task, then counts the completion (a run that finds the
    /// task already finished counts nothing).
    async fn finish(&self, id: &str) -> Result<(), String> {
        let frames = self.state(id).await?.frames;
        let result = CallToolResult::text(format!("rendered {frames} frames"));
        match self.tasks.complete(id, result, Some("rendered".into())).await {
            Ok(()) => {
                let sql = format!(
                    "UPDATE \"{}\".render_state SET finishes = finishes + 1 WHERE task_id = $1",
                    self.schemas.tasks
                );
                sqlx::query(AssertSqlSafe(sql)).bind(id).execute(&self.pool).await.map_err(|e| e.to_string())?;
                Ok(())
            }
            other => self.settle(other),
        }
    }

    /// A finishing write's outcome: a task that is already terminal (a
    /// cancel won the race) is not an error of the job.
    fn settle(&self, written: Result<(), WorkerError>) -> Result<(), String> {
        match written {
            Ok(()) | Err(WorkerError::Terminal | WorkerError::NotFound) => Ok(()),
            Err(e) => Err(format!("finishing the task: {e}")),
        }
    }

    async fn state(&self, id: &str) -> Result<RenderState, String> {
        let sql = format!(
            "SELECT frames, confirm, fail_attempts, done_frames FROM \"{}\".render_state WHERE task_id = $1",
            self.schemas.tasks
        );
        sqlx::query_as(AssertSqlSafe(sql))
            .bind(id)
            .fetch_one(&self.pool)
            .await
            .map_err(|e| format!("render state: {e}"))
    }

    /// Records frame `done + 1` as rendered, unless another run already
    /// moved past `done` (then this run stops).
    async fn advance(&self, id: &str, done: i32) -> Result<bool, String> {
        let sql = format!(
            "UPDATE \"{}\".render_state SET done_frames = $3 WHERE task_id = $1 AND done_frames = $2",
            self.schemas.tasks
        );
        let written = sqlx::query(AssertSqlSafe(sql)).bind(id).bind(done).bind(done + 1).execute(&self.pool).await;
        written.map(|r| r.rows_affected() == 1).map_err(|e| format!("recording frame {}: {e}", done + 1))
    }
}

/// Whether an elicitation answer said yes.
fn confirmed(answer: &serde_json::Value) -> bool {
    answer["action"] == "accept" && answer["content"]["confirm"] == true
}
