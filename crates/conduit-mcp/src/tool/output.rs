use crate::mrtr::InputRequired;
use crate::protocol::tools::CallToolResult;
use crate::task::TaskSpec;

/// What a tool returns.
#[derive(Debug)]
#[non_exhaustive]
pub enum ToolOutput {
    /// The tool finished (`isError` included).
    Complete(CallToolResult),
    /// The tool needs input from the client first (MRTR).
    InputRequired(InputRequired),
    /// The work continues as a task, or inline when the call does not become one.
    Task(TaskSpec),
}

impl From<CallToolResult> for ToolOutput {
    fn from(r: CallToolResult) -> Self {
        Self::Complete(r)
    }
}

impl From<InputRequired> for ToolOutput {
    fn from(r: InputRequired) -> Self {
        Self::InputRequired(r)
    }
}

impl From<TaskSpec> for ToolOutput {
    fn from(t: TaskSpec) -> Self {
        Self::Task(t)
    }
}
