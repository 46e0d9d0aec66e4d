//! `tools/list` and `tools/call`.

use super::task_plan::task_support_name;
use crate::ctx::{Ctx, CtxInner};
use crate::protocol::jsonrpc::RpcError;
use crate::protocol::tools::CallToolResult;
use crate::protocol::version::Era;
use crate::server::Server;
use crate::tool::ToolOutput;
use crate::tool::registry::Registered;
use serde_json::{Map, Value, json};
use std::sync::Arc;

pub(super) fn list_tools(server: &Server, era: Era, params: &Map<String, Value>) -> Result<Value, RpcError> {
    if super::task_plan::lists_task_support(server, era) {
        return super::pagination::page(
            server,
            era,
            params,
            "tools",
            server.inner.tools.tools.iter().map(|t| {
                let mut v = json!(t.info);
                v["execution"] = json!({ "taskSupport": task_support_name(t.handler.task_support()) });
                v
            }),
        );
    }
    super::pagination::page(server, era, params, "tools", server.inner.tools.tools.iter().map(|t| json!(t.info)))
}

/// Runs a tool. `tool` is the route's lookup of `params.name`.
pub(super) async fn call_tool(
    server: &Server,
    tool: Option<&Registered>,
    mut parts: CtxInner,
    mut params: Map<String, Value>,
) -> Result<Value, RpcError> {
    let Some(Value::String(name)) = params.get("name") else {
        return Err(RpcError::invalid_params("tools/call requires a string name"));
    };
    if !matches!(params.get("arguments"), None | Some(Value::Null | Value::Object(_))) {
        return Err(RpcError::invalid_params("arguments must be an object"));
    }
    let Some(tool) = tool else {
        return Err(RpcError::invalid_params(format!("Unknown tool: {name}")));
    };
    if !tool.scopes.is_empty() && !parts.principal.as_ref().is_some_and(|p| p.has_scopes(&tool.scopes)) {
        return Err(RpcError::insufficient_scope(&tool.scopes));
    }
    let task = super::task_plan::precheck(server, tool, &mut parts, &params)?;
    super::rounds::open_round(server, &mut parts, &params)?;
    // An `input_required` answer is sealed to the params as sent, arguments included, and
    // the arguments move into the tool: keep them as they came (cheaper than digesting every
    // call up front; the digest is made only when a state is sealed).
    let sent = params.remove("arguments");
    let args = match &sent {
        Some(a @ Value::Object(_)) => a.clone(),
        _ => Value::Object(Map::new()),
    };
    if let Err(msg) = tool.validate(&args) {
        return Ok(CallToolResult::error(msg).to_value());
    }
    let ctx = Ctx { inner: Arc::new(parts) };
    let cancel = ctx.cancellation().clone();
    let out = tokio::select! {
        r = tool.handler.call(ctx.clone(), args) => r?,
        _ = cancel.cancelled() => return Err(RpcError::internal("Request cancelled")),
    };
    match out {
        ToolOutput::InputRequired(ir) => {
            if let Some(a) = sent {
                params.insert("arguments".into(), a);
            }
            super::rounds::input_required(server, &ctx, &params, ir)
        }
        out => task.finish(&ctx, out).await,
    }
}
