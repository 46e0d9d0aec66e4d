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

use super::inline::run_inline;
use crate::ctx::{Ctx, CtxInner};
use crate::protocol::jsonrpc::RpcError;
use crate::protocol::tools::CallToolResult;
use crate::protocol::version::Era;
use crate::server::{Server, TaskMaker};
use crate::task::{TaskSpec, TaskSupport, TaskWork};
use crate::tool::ToolOutput;
use crate::tool::registry::Registered;
use serde_json::{Map, Value};

/// A `tools/call` past its precheck: what the request asked for, kept until the tool answers.
pub(super) struct TaskCall<'s> {
    server: &'s Server,
    tool: &'s Registered,
    /// Whether the request asked for its work to become a task (asked once per call).
    requested: bool,
}

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

/// Before the tool runs: whether the request asked for a task (its `params.task` then kept
/// on the context), and a task-only tool refused to a request that cannot get a task.
pub(super) fn precheck<'s>(
    server: &'s Server,
    tool: &'s Registered,
    parts: &mut CtxInner,
    params: &Map<String, Value>,
) -> Result<TaskCall<'s>, RpcError> {
    let era = parts.era;
    let requested = server.task_maker(era).is_some_and(|m| m.requested(era, &parts.caps, params));
    if requested {
        parts.task_params = params.get("task").cloned();
    }
    if tool.handler.task_support() != TaskSupport::Required || requested {
        return Ok(TaskCall { server, tool, requested });
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

impl TaskCall<'_> {
    /// What the tool returned, become the answer: see the module table. (An
    /// `input_required` answer is MRTR's, answered before a call is finished.)
    pub(super) async fn finish(self, ctx: &Ctx, output: ToolOutput) -> Result<Value, RpcError> {
        match output {
            ToolOutput::Complete(r) => self.answered_at_once(ctx, r).await,
            ToolOutput::Task(spec) => self.task_or_inline(ctx, spec).await,
            ToolOutput::InputRequired(_) => {
                Err(RpcError::internal("input_required is answered by MRTR, not as a task"))
            }
        }
    }

    /// Stores the task, or runs its work inline, or refuses.
    async fn task_or_inline(self, ctx: &Ctx, spec: TaskSpec) -> Result<Value, RpcError> {
        let Self { server, tool, requested } = self;
        match plan(server, tool, requested, ctx.era(), spec.work.as_ref()) {
            Plan::Store(m) => m.create(ctx, spec).await,
            Plan::Refuse(e) => Err(e),
            Plan::Inline => tool.checked(run_inline(server, ctx, tool, spec.work).await?),
        }
    }

    /// A tool's immediate answer: see the module table's last paragraph.
    async fn answered_at_once(self, ctx: &Ctx, result: CallToolResult) -> Result<Value, RpcError> {
        let Self { server, tool, requested } = self;
        let as_task = requested && ctx.era() == Era::Legacy && tool.handler.task_support() != TaskSupport::Forbidden;
        match server.task_maker(ctx.era()) {
            Some(maker) if as_task => {
                tool.check_output(&result)?;
                maker.create(ctx, TaskSpec::finished(result)).await
            }
            _ => tool.checked(result),
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
