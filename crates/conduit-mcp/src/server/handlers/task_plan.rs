//! Task or inline: the one place that decides what becomes of a tool call
//! whose tool may run as a task, from the tool's [`TaskSupport`], what the
//! request asked for, and the era.
//!
//! | tool's support | request asked for a task | the tool returned a `TaskSpec` with ... | answer |
//! |---|---|---|---|
//! | `Required` | no | (the tool is not called) | `-32021` naming what to declare (`-32603` without a task maker) |
//! | `Optional`, `Required` | yes | any work | a stored task |
//! | `Optional` | no | `spawn`ed or resumable work | the work runs inline; its result is the answer |
//! | `Forbidden` | either | `spawn`ed or resumable work | the work runs inline |
//! | `Optional` | no | a `start` callback (or none) | `-32021` (the seed's rule) |
//! | `Forbidden` | either | a `start` callback (or none) | `-32603`: the tool broke its own policy |
//!
//! A tool that answers at once (no `TaskSpec`): its result is the answer,
//! except on 2025-11-25 when the request asked for a task and the tool may
//! run as one (`Optional`, `Required`): the client expects a
//! `CreateTaskResult`, so it gets a task stored already `completed` with the
//! result (one write; nothing runs).
//!
//! What else differs by era is decided here too:
//!
//! | era | decision | answer |
//! |---|---|---|
//! | 2026-07-28 | a task-only tool called without asking for a task | `-32021` naming the Tasks extension |
//! | 2025-11-25 | the same | `-32601` ("task augmentation required", as that revision says) |
//! | 2025-11-25 | a `tools/call` answered `-32021` (a capability the session did not declare) | a tool error naming it |
//! | 2025-11-25, legacy tasks installed | `tools/list` | each tool's `execution.taskSupport` |

use super::tools::checked;
use crate::Ctx;
use crate::ctx::CtxInner;
use crate::protocol::RpcError;
use crate::protocol::mrtr::InputRequest;
use crate::protocol::tools::CallToolResult;
use crate::protocol::version::Era;
use crate::server::{Server, TaskMaker};
use crate::tool::registry::Registered;
use crate::tool::{TaskBackend, TaskContext, TaskSpec, TaskSupport, TaskWork, WorkFuture, WorkerError};
use async_trait::async_trait;
use futures_util::FutureExt;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio_util::sync::CancellationToken;

/// What becomes of a returned `TaskSpec`.
enum Plan<'a> {
    Store(&'a dyn TaskMaker),
    Inline,
    Refuse(RpcError),
}

fn not_enabled(tool: &str) -> RpcError {
    tracing::warn!(tool = %tool, "tool returned a task but no task extension is installed");
    RpcError::internal("Tool returned a task, but the Tasks extension is not enabled")
}

/// Whether the request asked for its work to become a task (asked once per call).
pub(super) fn task_requested(server: &Server, parts: &CtxInner, params: &Map<String, Value>) -> bool {
    server.task_maker(parts.era).is_some_and(|m| m.requested(parts.era, &parts.caps, params))
}

/// Before the tool runs: a task-only tool is refused to a request that cannot get a task.
pub(super) fn may_call(server: &Server, tool: &Registered, requested: bool, era: Era) -> Result<(), RpcError> {
    if tool.handler.task_support() != TaskSupport::Required || requested {
        return Ok(());
    }
    match server.task_maker(era) {
        // 2025-11-25: a non-augmented call to a task-only tool MUST get -32601.
        Some(_) if era == Era::Legacy => Err(RpcError::new(
            crate::protocol::ErrorCode::MethodNotFound,
            format!("Task augmentation required: {} runs only as a task (send params.task)", tool.info.name),
        )),
        Some(m) => Err(RpcError::missing_capability(m.required_capabilities(era))),
        None => {
            tracing::warn!(tool = %tool.info.name, "tool requires tasks but no task extension is installed");
            Err(RpcError::internal("This tool runs only as a task, and tasks are not enabled on this server"))
        }
    }
}

fn plan<'s>(server: &'s Server, tool: &Registered, requested: bool, era: Era, work: Option<&TaskWork>) -> Plan<'s> {
    let support = tool.handler.task_support();
    let maker = server.task_maker(era);
    if support != TaskSupport::Forbidden
        && let (Some(m), true) = (maker, requested)
    {
        return Plan::Store(m);
    }
    if matches!(work, Some(TaskWork::Spawn(_) | TaskWork::Resumable { .. })) {
        return Plan::Inline;
    }
    let name = &tool.info.name;
    Plan::Refuse(match (support, maker) {
        (TaskSupport::Forbidden, _) => {
            tracing::warn!(tool = %name, "a tool that may not run as a task returned one it cannot run inline");
            RpcError::internal(format!("Tool {name} may not run as a task, but returned one"))
        }
        (_, Some(m)) => {
            tracing::debug!(tool = %name, "task refused: the request did not ask for a task");
            RpcError::missing_capability(m.required_capabilities(era))
        }
        (_, None) => not_enabled(name),
    })
}

/// Stores the task, or runs its work inline, or refuses: see the module table.
pub(super) async fn task_or_inline(
    server: &Server,
    ctx: &Ctx,
    tool: &Registered,
    requested: bool,
    mut spec: TaskSpec,
) -> Result<Value, RpcError> {
    match plan(server, tool, requested, ctx.era(), spec.work.as_ref()) {
        Plan::Store(m) => m.create(ctx, spec).await,
        Plan::Refuse(e) => Err(e),
        Plan::Inline => {
            let work = match spec.work.take() {
                Some(TaskWork::Spawn(w)) => {
                    Box::new(move |t| w.run(t)) as Box<dyn FnOnce(TaskContext) -> WorkFuture + Send>
                }
                Some(TaskWork::Resumable { name, args }) => {
                    let Some(f) = server.task_maker(ctx.era()).and_then(|m| m.resumable(&name)) else {
                        tracing::warn!(tool = %tool.info.name, "no resumable work is registered under the name the tool gave");
                        return Err(RpcError::internal(format!(
                            "Invalid task attributes: no resumable work is registered as {name:?}"
                        )));
                    };
                    Box::new(move |t| f(t, args))
                }
                _ => return Err(not_enabled(&tool.info.name)),
            };
            checked(tool, run_inline(ctx, work).await?)
        }
    }
}

/// A tool's immediate answer: see the module table's last paragraph.
pub(super) async fn answered_at_once(
    server: &Server,
    ctx: &Ctx,
    tool: &Registered,
    requested: bool,
    result: CallToolResult,
) -> Result<Value, RpcError> {
    let as_task = requested && ctx.era() == Era::Legacy && tool.handler.task_support() != TaskSupport::Forbidden;
    match server.task_maker(ctx.era()) {
        Some(maker) if as_task => {
            checked(tool, result.clone())?;
            maker.create(ctx, TaskSpec::finished(result)).await
        }
        _ => checked(tool, result),
    }
}

/// Whether `tools/list` on `era` says of each tool whether it runs as a task.
pub(super) fn lists_task_support(server: &Server, era: Era) -> bool {
    era == Era::Legacy && server.task_maker(Era::Legacy).is_some()
}

/// A `tools/call` answer as its era gives it: on 2025-11-25 a `-32021` is a
/// tool error, as that era's clients expect (they have no such code).
pub(super) fn call_answer(era: Era, answer: Result<Value, RpcError>) -> Result<Value, RpcError> {
    match answer {
        Err(e) if era == Era::Legacy && e.code == -32021 => Ok(CallToolResult::error(format!(
            "This tool needs a client capability the session did not declare: {}",
            e.data.as_ref().map(Value::to_string).unwrap_or_default()
        ))
        .to_value()),
        answer => answer,
    }
}

/// A tool's `execution.taskSupport` where a `tools/list` says it.
pub(super) fn task_support_name(support: TaskSupport) -> &'static str {
    match support {
        TaskSupport::Required => "required",
        TaskSupport::Optional => "optional",
        _ => "forbidden",
    }
}

/// Runs task work inside the call: progress becomes `notifications/progress`
/// (when the request carried a token); the call's cancellation cancels it.
async fn run_inline(
    ctx: &Ctx,
    work: Box<dyn FnOnce(TaskContext) -> WorkFuture + Send>,
) -> Result<CallToolResult, RpcError> {
    let cancel = ctx.cancellation().clone();
    let backend = Arc::new(Inline { ctx: ctx.clone(), steps: AtomicU64::new(0) });
    let task = TaskContext::new(None, backend, cancel.clone());
    let run = AssertUnwindSafe(async move { work(task).await }).catch_unwind();
    tokio::select! {
        r = run => match r {
            Ok(r) => r,
            Err(_panic) => {
                tracing::error!("a tool's inline work panicked");
                Err(RpcError::internal("Internal error: the tool's work failed"))
            }
        },
        _ = cancel.cancelled() => Err(RpcError::internal("Request cancelled")),
    }
}

/// The inline call as a task's backend.
struct Inline {
    ctx: Ctx,
    steps: AtomicU64,
}

#[async_trait]
impl TaskBackend for Inline {
    async fn progress(&self, _id: Option<&str>, message: String) -> Result<(), WorkerError> {
        let step = self.steps.fetch_add(1, Ordering::Relaxed) + 1;
        self.ctx.progress(step as f64, None, Some(&message));
        Ok(())
    }

    async fn inputs(
        &self,
        _id: Option<&str>,
        _requests: BTreeMap<String, InputRequest>,
        _cancel: &CancellationToken,
    ) -> Result<Map<String, Value>, WorkerError> {
        Err(WorkerError::InputUnavailable)
    }
}
