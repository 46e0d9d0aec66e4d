//! Tools: the three ways to define one, and what a tool returns.
//!
//! - implement [`ToolHandler`] on your own type;
//! - build one from a closure with [`Tool::new`];
//! - derive `Deserialize` + `JsonSchema` on an argument struct and implement
//!   [`TypedTool`] on it (the schema is generated, JSON Schema 2020-12).
//!
//! All three return a [`ToolOutput`]: a finished result, a request for input
//! (MRTR), or a task ([`TaskSpec`](crate::task::TaskSpec); its work sees a
//! [`TaskContext`](crate::task::TaskContext)). What describes and drives a task
//! is [`task`](crate::task).

mod builder;
mod output;
pub(crate) mod registry;
mod typed;

pub use builder::{Param, Tool};
pub use output::ToolOutput;
pub use typed::{TypedTool, TypedToolHandler};

use crate::ctx::Ctx;
use crate::protocol::RpcError;
use crate::protocol::tools::ToolInfo;
use crate::task::TaskSupport;
use async_trait::async_trait;
use serde_json::Value;

/// A tool, implemented directly.
///
/// ```
/// use async_trait::async_trait;
/// use conduit_mcp::prelude::*;
/// use serde_json::{json, Value};
///
/// struct Echo;
///
/// #[async_trait]
/// impl ToolHandler for Echo {
///     fn info(&self) -> ToolInfo {
///         ToolInfo::new("echo", "Echo the text back", json!({
///             "type": "object",
///             "properties": { "text": { "type": "string" } },
///             "required": ["text"]
///         }))
///     }
///
///     async fn call(&self, _ctx: Ctx, args: Value) -> Result<ToolOutput, RpcError> {
///         Ok(CallToolResult::text(args["text"].as_str().unwrap_or_default()).into())
///     }
/// }
/// ```
#[async_trait]
pub trait ToolHandler: Send + Sync + 'static {
    /// How the tool is listed. Called once, at registration.
    fn info(&self) -> ToolInfo;

    /// OAuth scopes the caller must hold; checked before `call`, failing closed.
    fn required_scopes(&self) -> Vec<String> {
        Vec::new()
    }

    /// Whether the tool may, must or must not run as a task (server-side policy).
    fn task_support(&self) -> TaskSupport {
        TaskSupport::Optional
    }

    /// Runs the tool. `args` has already been validated against `inputSchema`.
    async fn call(&self, ctx: Ctx, args: Value) -> Result<ToolOutput, RpcError>;
}
