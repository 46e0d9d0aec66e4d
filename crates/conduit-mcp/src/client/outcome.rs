//! What following a task yields ([`TaskEvent`]) and how a tool call ended
//! ([`ToolOutcome`]).

use super::era::tool_result;
use super::error::ClientError;
use crate::protocol::RpcError;
use crate::protocol::tasks::{DetailedTask, Task, TaskStatus};
use crate::protocol::tools::CallToolResult;

/// How a tool call ended. A tool error (`isError`) is `Completed`; only a
/// JSON-RPC error while the task ran is `Failed`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ToolOutcome {
    /// The tool's result.
    Completed(CallToolResult),
    /// The task failed with this error.
    Failed(RpcError),
    /// The task was cancelled (its last status message, if any).
    Cancelled(Option<String>),
}

impl ToolOutcome {
    /// Reads the outcome of a terminal task; `None` while it is not terminal.
    pub fn of_task(t: &DetailedTask) -> Option<Result<Self, ClientError>> {
        Some(match t.task.status {
            TaskStatus::Completed => match &t.result {
                Some(r) => tool_result(r.clone()).map(Self::Completed),
                None => Err(ClientError::protocol("a completed task without a result")),
            },
            TaskStatus::Failed => Ok(Self::Failed(
                t.error.clone().unwrap_or_else(|| RpcError::internal("the task failed without an error object")),
            )),
            TaskStatus::Cancelled => Ok(Self::Cancelled(t.task.status_message.clone())),
            _ => return None,
        })
    }
}

/// What following a task yields, in order; the last item is `Finished` (or an error).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum TaskEvent {
    /// A new status or status message (the first observation too).
    Status(Task),
    /// The task asks for input under these keys (they are answered next).
    InputRequested(Vec<String>),
    /// The answers for these keys were sent (`tasks/update`).
    InputAnswered(Vec<String>),
    /// The task is terminal.
    Finished(ToolOutcome),
}
