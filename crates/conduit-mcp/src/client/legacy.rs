//! The legacy era (`2025-11-25` and earlier) on the client side: the
//! `initialize` handshake, task-augmented `tools/call` (`params.task`),
//! `tasks/get` + `tasks/result`, and server→client requests answered by the
//! same [`InputHandler`](super::InputHandler).

use super::client::{CallOutcome, Client, Inner, tool_result};
use super::error::ClientError;
use super::input;
use super::task::TaskHandle;
use crate::protocol::jsonrpc::{Message, Request};
use crate::protocol::methods::{INITIALIZE, TASKS_GET, TASKS_RESULT, TOOLS_CALL, TOOLS_LIST};
use crate::protocol::mrtr::InputRequest;
use crate::protocol::tasks::{DetailedTask, Task, TaskStatus};
use crate::protocol::version::LEGACY_VERSIONS;
use crate::protocol::{ErrorCode, RpcError};
use serde_json::{Map, Value, json};

/// `initialize` params: the legacy capabilities of the handler.
pub(crate) fn initialize_params(inner: &Inner) -> Map<String, Value> {
    let mut caps = inner.handler.support().capabilities();
    if let Some(Value::Object(e)) = caps.get_mut("elicitation") {
        // 2025-11-25 reads `{}` as form; name both modes explicitly.
        e.entry("form").or_insert(json!({}));
    }
    let mut p = Map::new();
    p.insert("protocolVersion".into(), Value::String(LEGACY_VERSIONS[0].into()));
    p.insert("capabilities".into(), Value::Object(caps));
    p.insert("clientInfo".into(), json!(inner.info));
    p
}

/// Runs the handshake on a provisional connection; returns the version and the result.
pub(crate) async fn initialize(inner: &Inner) -> Result<(String, Value), ClientError> {
    inner.wire.reset_session();
    let result = inner.request(INITIALIZE, initialize_params(inner), Vec::new()).await?;
    let version = result
        .get("protocolVersion")
        .and_then(Value::as_str)
        .filter(|v| LEGACY_VERSIONS.contains(v))
        .ok_or_else(|| ClientError::Protocol("initialize: the server chose no version this client speaks".into()))?
        .to_owned();
    let note = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    inner.wire.post(note, &version).await?;
    Ok((version, result))
}

/// Answers a request the server sent (legacy era: elicitation, sampling, roots, ping).
pub(crate) async fn answer_server_request(inner: &Inner, req: Request) -> Result<(), ClientError> {
    let reply = match req.method.as_str() {
        "ping" => Message::Result { id: req.id, result: json!({}) },
        method => {
            let ir = InputRequest::from_value(json!({ "method": method, "params": req.params }));
            match ir {
                None => Message::Error { id: Some(req.id), error: RpcError::method_not_found(method) },
                Some(ir) => match input::answer(inner.handler.as_ref(), &req.id.to_string(), &ir).await {
                    Ok(result) => Message::Result { id: req.id, result },
                    Err(e) => Message::Error { id: Some(req.id), error: RpcError::internal(e.to_string()) },
                },
            }
        }
    };
    inner.wire.post(reply.to_value(), &inner.server.version).await
}

/// Reads a legacy task (`ttl`, `pollInterval`) into the modern shape.
fn legacy_task(v: &Value) -> Result<Task, ClientError> {
    let mut m = v.as_object().cloned().ok_or_else(|| ClientError::Protocol("a task is not an object".into()))?;
    if let Some(t) = m.remove("ttl") {
        m.insert("ttlMs".into(), t);
    }
    m.entry("ttlMs").or_insert(Value::Null);
    if let Some(p) = m.remove("pollInterval") {
        m.insert("pollIntervalMs".into(), p);
    }
    serde_json::from_value(Value::Object(m)).map_err(|e| ClientError::Protocol(format!("not a legacy task: {e}")))
}

/// `tools/call` on the legacy era: task-augmented when the server and the tool allow it.
pub(crate) async fn call_tool(client: &Client, name: &str, args: Value) -> Result<CallOutcome, ClientError> {
    let inner = &client.inner;
    let mut params = Map::new();
    params.insert("name".into(), Value::String(name.into()));
    if !args.is_null() {
        params.insert("arguments".into(), args);
    }
    let server_tasks = inner.server.capabilities.pointer("/tasks/requests/tools/call").is_some();
    if server_tasks && tool_task_support(inner, name).await.is_some_and(|s| s == "optional" || s == "required") {
        params.insert("task".into(), json!({}));
    }
    let result = inner.request(TOOLS_CALL, params, Vec::new()).await?;
    match result.get("task") {
        Some(t) if t.is_object() && result.get("content").is_none() => {
            let task = legacy_task(t)?;
            Ok(CallOutcome::Task(TaskHandle::new(client.clone(), task.task_id.clone(), Some(task))))
        }
        _ => tool_result(result).map(CallOutcome::Complete),
    }
}

/// A tool's `execution.taskSupport` from `tools/list`.
async fn tool_task_support(inner: &Inner, name: &str) -> Option<String> {
    let list = inner.request(TOOLS_LIST, Map::new(), Vec::new()).await.ok()?;
    list.get("tools")?
        .as_array()?
        .iter()
        .find(|t| t.get("name").and_then(Value::as_str) == Some(name))?
        .pointer("/execution/taskSupport")?
        .as_str()
        .map(str::to_owned)
}

/// `tasks/get`, and `tasks/result` once the task is terminal or waits for
/// input (the server then asks its questions as requests on that stream).
pub(crate) async fn get_task(h: &TaskHandle) -> Result<DetailedTask, ClientError> {
    let inner = &h.client.inner;
    let mut p = Map::new();
    p.insert("taskId".into(), Value::String(h.id().to_owned()));
    let not_found = |e: ClientError| match e {
        ClientError::Rpc(e) if e.error_code() == ErrorCode::InvalidParams => ClientError::TaskNotFound(e.message),
        e => e,
    };
    let v = inner.request(TASKS_GET, p.clone(), Vec::new()).await.map_err(not_found)?;
    let task = legacy_task(&v)?;
    let mut d = DetailedTask::new(task);
    if !matches!(d.task.status, TaskStatus::Completed | TaskStatus::Failed | TaskStatus::InputRequired) {
        return Ok(d);
    }
    match inner.request(TASKS_RESULT, p, Vec::new()).await {
        Ok(result) => {
            // Legacy `failed` covers `isError` results; the outcome is the result itself.
            d.task.status = TaskStatus::Completed;
            d.result = Some(result);
        }
        Err(ClientError::Rpc(e)) => {
            d.task.status = TaskStatus::Failed;
            d.error = Some(e);
        }
        Err(e) => return Err(e),
    }
    Ok(d)
}
