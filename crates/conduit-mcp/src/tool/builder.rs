use super::{ToolHandler, ToolOutput};
use crate::ctx::Ctx;
use crate::protocol::RpcError;
use crate::protocol::tools::ToolInfo;
use crate::task::TaskSupport;
use async_trait::async_trait;
use futures_util::future::BoxFuture;
use serde_json::{Map, Value, json};
use std::future::Future;
use std::sync::Arc;

/// One parameter of a closure-built tool.
#[derive(Debug, Clone)]
#[must_use]
pub struct Param {
    schema: Map<String, Value>,
    required: bool,
}

impl Param {
    fn of(ty: &str, description: &str) -> Self {
        let mut schema = Map::new();
        schema.insert("type".into(), ty.into());
        schema.insert("description".into(), description.into());
        Self { schema, required: false }
    }

    /// A string parameter.
    pub fn string(description: &str) -> Self {
        Self::of("string", description)
    }

    /// An integer parameter.
    pub fn integer(description: &str) -> Self {
        Self::of("integer", description)
    }

    /// A number parameter.
    pub fn number(description: &str) -> Self {
        Self::of("number", description)
    }

    /// A boolean parameter.
    pub fn boolean(description: &str) -> Self {
        Self::of("boolean", description)
    }

    /// Marks the parameter required.
    pub fn required(mut self) -> Self {
        self.required = true;
        self
    }

    /// Mirrors the argument in the `Mcp-Param-{name}` HTTP header (`x-mcp-header`).
    pub fn header(mut self, name: &str) -> Self {
        self.schema.insert("x-mcp-header".into(), name.into());
        self
    }

    /// Adds any other JSON Schema keyword (`minimum`, `enum`, `default`, ...).
    pub fn keyword(mut self, key: &str, value: Value) -> Self {
        self.schema.insert(key.into(), value);
        self
    }
}

type Handler = Arc<dyn Fn(Ctx, Value) -> BoxFuture<'static, Result<ToolOutput, RpcError>> + Send + Sync>;

/// A tool built from a closure.
///
/// ```
/// use conduit_mcp::prelude::*;
///
/// let tool = Tool::new("build", "Build a ref")
///     .param("ref", Param::string("Git ref").required())
///     .handle(|_ctx, args| async move {
///         let r = args["ref"].as_str().unwrap_or_default().to_owned();
///         Ok(CallToolResult::text(format!("built {r}")))
///     });
/// assert_eq!(tool.info().name, "build");
/// ```
#[derive(Clone)]
#[must_use]
pub struct Tool {
    info: ToolInfo,
    properties: Map<String, Value>,
    required: Vec<String>,
    raw_schema: bool,
    scopes: Vec<String>,
    task_support: TaskSupport,
    handler: Option<Handler>,
}

impl std::fmt::Debug for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool").field("name", &self.info.name).finish_non_exhaustive()
    }
}

impl Tool {
    /// A tool with a name and description and no parameters yet.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            info: ToolInfo::new(name, description, json!({ "type": "object" })),
            properties: Map::new(),
            required: Vec::new(),
            raw_schema: false,
            scopes: Vec::new(),
            task_support: TaskSupport::Optional,
            handler: None,
        }
    }

    /// Adds a parameter.
    pub fn param(mut self, name: &str, param: Param) -> Self {
        if param.required {
            self.required.push(name.into());
        }
        self.properties.insert(name.into(), Value::Object(param.schema));
        self
    }

    /// Replaces the generated input schema with this one, kept verbatim.
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.info.input_schema = schema;
        self.raw_schema = true;
        self
    }

    /// Sets the output schema (`structuredContent` must conform to it).
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.info.output_schema = Some(schema);
        self
    }

    /// Sets the display title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.info.title = Some(title.into());
        self
    }

    /// Sets the behaviour hints (`readOnlyHint`, ...).
    pub fn annotations(mut self, annotations: Value) -> Self {
        self.info.annotations = Some(annotations);
        self
    }

    /// Requires OAuth scopes.
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes.extend(scopes.into_iter().map(Into::into));
        self
    }

    /// Sets the task policy.
    pub fn task_support(mut self, support: TaskSupport) -> Self {
        self.task_support = support;
        self
    }

    /// Sets the handler. Its output can be anything that converts into a [`ToolOutput`].
    pub fn handle<F, Fut, O>(mut self, f: F) -> Self
    where
        F: Fn(Ctx, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, RpcError>> + Send + 'static,
        O: Into<ToolOutput>,
    {
        self.handler = Some(Arc::new(move |ctx, args| {
            let fut = f(ctx, args);
            Box::pin(async move { fut.await.map(Into::into) })
        }));
        self
    }

    /// How the tool is listed.
    pub fn info(&self) -> ToolInfo {
        let mut info = self.info.clone();
        if !self.raw_schema {
            let mut schema = Map::new();
            schema.insert("type".into(), "object".into());
            schema.insert("properties".into(), Value::Object(self.properties.clone()));
            if !self.required.is_empty() {
                schema.insert("required".into(), json!(self.required));
            }
            info.input_schema = Value::Object(schema);
        }
        info
    }
}

#[async_trait]
impl ToolHandler for Tool {
    fn info(&self) -> ToolInfo {
        Tool::info(self)
    }

    fn required_scopes(&self) -> Vec<String> {
        self.scopes.clone()
    }

    fn task_support(&self) -> TaskSupport {
        self.task_support
    }

    async fn call(&self, ctx: Ctx, args: Value) -> Result<ToolOutput, RpcError> {
        match &self.handler {
            Some(h) => h(ctx, args).await,
            None => Err(RpcError::internal(format!("tool {} has no handler", self.info.name))),
        }
    }
}
