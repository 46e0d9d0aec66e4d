use super::{ToolHandler, ToolOutput};
use crate::ctx::Ctx;
use crate::protocol::RpcError;
use crate::protocol::tools::{CallToolResult, ToolInfo};
use crate::task::TaskSupport;
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::marker::PhantomData;

/// A tool whose arguments are a Rust type deriving `Deserialize` and `JsonSchema`.
///
/// ```
/// use async_trait::async_trait;
/// use conduit_mcp::prelude::*;
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// /// Adds two numbers.
/// #[derive(Deserialize, JsonSchema)]
/// struct Add {
///     a: i64,
///     b: i64,
/// }
///
/// #[async_trait]
/// impl TypedTool for Add {
///     const NAME: &'static str = "add";
///     const DESCRIPTION: &'static str = "Adds two numbers";
///
///     async fn run(self, _ctx: Ctx) -> Result<ToolOutput, RpcError> {
///         Ok(CallToolResult::text((self.a + self.b).to_string()).into())
///     }
/// }
///
/// let server = Server::builder("calc", "1.0.0").typed_tool::<Add>().build().unwrap();
/// # let _ = server;
/// ```
#[async_trait]
pub trait TypedTool: DeserializeOwned + JsonSchema + Send + 'static {
    /// The tool name.
    const NAME: &'static str;
    /// What the tool does.
    const DESCRIPTION: &'static str;

    /// Required OAuth scopes.
    fn required_scopes() -> Vec<String> {
        Vec::new()
    }

    /// The task policy.
    fn task_support() -> TaskSupport {
        TaskSupport::Optional
    }

    /// Runs the tool with its parsed arguments.
    async fn run(self, ctx: Ctx) -> Result<ToolOutput, RpcError>;
}

/// Adapts a [`TypedTool`] to [`ToolHandler`].
pub struct TypedToolHandler<T>(PhantomData<fn() -> T>);

impl<T> Default for TypedToolHandler<T> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

impl<T> std::fmt::Debug for TypedToolHandler<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TypedToolHandler")
    }
}

#[async_trait]
impl<T: TypedTool> ToolHandler for TypedToolHandler<T> {
    fn info(&self) -> ToolInfo {
        let schema = schemars::schema_for!(T);
        let mut v = serde_json::to_value(&schema).unwrap_or(Value::Null);
        if let Value::Object(m) = &mut v {
            m.remove("title");
            m.remove("description");
            m.entry("type").or_insert_with(|| "object".into());
        }
        ToolInfo::new(T::NAME, T::DESCRIPTION, v)
    }

    fn required_scopes(&self) -> Vec<String> {
        T::required_scopes()
    }

    fn task_support(&self) -> TaskSupport {
        T::task_support()
    }

    async fn call(&self, ctx: Ctx, args: Value) -> Result<ToolOutput, RpcError> {
        match serde_json::from_value::<T>(args) {
            Ok(t) => t.run(ctx).await,
            Err(e) => Ok(CallToolResult::error(format!("Invalid arguments for tool {}: {e}", T::NAME)).into()),
        }
    }
}
