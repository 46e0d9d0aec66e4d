//! The `2025-11-25` era (and earlier): the `initialize` handshake and its
//! session, task-augmented `tools/call` (`params.task`), `tasks/get` +
//! `tasks/result`. The server asks its questions as requests, which the
//! connection core answers through the same input handler.

use super::tool_list::ToolCache;
use super::{Dialect, ToolCall, not_found, task_params, tool_result};
use crate::client::connection::Connection;
use crate::client::error::ClientError;
use crate::client::server_info::ServerInfo;
use crate::client::wire::{Outgoing, Replies};
use crate::protocol::methods::{INITIALIZE, TASKS_CANCEL, TASKS_GET, TASKS_RESULT, TOOLS_CALL};
use crate::protocol::tasks::{DetailedTask, Task, TaskStatus};
use crate::protocol::tools::ToolInfo;
use crate::protocol::version::LEGACY_VERSIONS;
use crate::protocol::{Era, Implementation, RequestId};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The legacy era on one connection (its session is the transport's).
#[derive(Debug)]
pub(super) struct LegacyEra {
    conn: Arc<Connection>,
    version: String,
    /// Whether the server takes task-augmented `tools/call`.
    server_tasks: bool,
    /// Each listed tool's `execution.taskSupport`, learnt at the first call.
    tools: ToolCache,
}

/// `initialize` params: the legacy capabilities of the handler.
fn initialize_params(conn: &Connection, info: &Implementation) -> Map<String, Value> {
    let mut caps = conn.handler().support().capabilities();
    if let Some(Value::Object(e)) = caps.get_mut("elicitation") {
        // 2025-11-25 reads `{}` as form; name both modes explicitly.
        e.entry("form").or_insert(json!({}));
    }
    let mut p = Map::new();
    p.insert("protocolVersion".into(), Value::String(LEGACY_VERSIONS[0].into()));
    p.insert("capabilities".into(), Value::Object(caps));
    p.insert("clientInfo".into(), json!(info));
    p
}

/// Reads a legacy task (`ttl`, `pollInterval`) into the modern shape.
fn legacy_task(v: &Value) -> Result<Task, ClientError> {
    let mut m = v.as_object().cloned().ok_or_else(|| ClientError::protocol("a task is not an object"))?;
    if let Some(t) = m.remove("ttl") {
        m.insert("ttlMs".into(), t);
    }
    m.entry("ttlMs").or_insert(Value::Null);
    if let Some(p) = m.remove("pollInterval") {
        m.insert("pollIntervalMs".into(), p);
    }
    serde_json::from_value(Value::Object(m)).map_err(|e| ClientError::malformed("a legacy task", e))
}

impl LegacyEra {
    /// The handshake: `initialize` (a fresh session), `notifications/initialized`,
    /// then the session's event stream.
    pub(super) async fn initialize(
        conn: Arc<Connection>,
        info: &Implementation,
    ) -> Result<(Self, ServerInfo), ClientError> {
        conn.end_session();
        let era = Self { conn, version: LEGACY_VERSIONS[0].into(), server_tasks: false, tools: ToolCache::default() };
        let result = era.request(INITIALIZE, initialize_params(&era.conn, info)).await?;
        let version = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .filter(|v| LEGACY_VERSIONS.contains(v))
            .ok_or_else(|| ClientError::protocol("initialize: the server chose no version this client speaks"))?
            .to_owned();
        let note = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        era.conn.notify(note, &version).await?;
        era.conn.open_session_events(&version).await;
        let mut server = ServerInfo::from_handshake(Era::Legacy, version.clone(), &result);
        server.implementation = result.get("serverInfo").cloned();
        let server_tasks = server.capabilities.pointer("/tasks/requests/tools/call").is_some();
        Ok((Self { conn: era.conn, version, server_tasks, tools: ToolCache::default() }, server))
    }
}

#[async_trait::async_trait]
impl Dialect for LegacyEra {
    fn connection(&self) -> &Connection {
        &self.conn
    }

    async fn request(&self, method: &str, params: Map<String, Value>) -> Result<Value, ClientError> {
        let out = Outgoing {
            id: self.conn.next_id(),
            method: method.into(),
            params,
            version: self.version.clone(),
            headers: Vec::new(),
        };
        self.conn.request(out).await
    }

    async fn open(&self, method: &str, params: Map<String, Value>) -> Result<(RequestId, Replies), ClientError> {
        let id = self.conn.next_id();
        let out = Outgoing {
            id: id.clone(),
            method: method.into(),
            params,
            version: self.version.clone(),
            headers: Vec::new(),
        };
        Ok((id, self.conn.open(out).await?))
    }

    async fn list_tools(&self) -> Result<Vec<ToolInfo>, ClientError> {
        self.tools.list(self).await
    }

    /// Task-augmented when the server and the tool allow it.
    async fn call_tool(&self, name: &str, args: Value) -> Result<ToolCall, ClientError> {
        let mut params = Map::new();
        params.insert("name".into(), Value::String(name.into()));
        if !args.is_null() {
            params.insert("arguments".into(), args);
        }
        if self.server_tasks && self.tools.knowing(self, name).await.get(name).is_some_and(|t| t.takes_tasks()) {
            params.insert("task".into(), json!({}));
        }
        let result = self.request(TOOLS_CALL, params).await?;
        match result.get("task") {
            Some(t) if t.is_object() && result.get("content").is_none() => Ok(ToolCall::Task(legacy_task(t)?)),
            _ => tool_result(result).map(ToolCall::Complete),
        }
    }

    /// `tasks/get`, and `tasks/result` once the task is terminal or waits for
    /// input (the server then asks its questions as requests on that stream).
    async fn get_task(&self, id: &str) -> Result<DetailedTask, ClientError> {
        let v = self.request(TASKS_GET, task_params(id)).await.map_err(not_found)?;
        let mut d = DetailedTask::new(legacy_task(&v)?);
        if !matches!(d.task.status, TaskStatus::Completed | TaskStatus::Failed | TaskStatus::InputRequired) {
            return Ok(d);
        }
        match self.request(TASKS_RESULT, task_params(id)).await {
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

    async fn update_task(&self, _id: &str, _responses: Map<String, Value>) -> Result<(), ClientError> {
        Err(ClientError::protocol("tasks/update does not exist on the legacy era"))
    }

    async fn cancel_task(&self, id: &str) -> Result<(), ClientError> {
        self.request(TASKS_CANCEL, task_params(id)).await.map(drop).map_err(not_found)
    }
}
