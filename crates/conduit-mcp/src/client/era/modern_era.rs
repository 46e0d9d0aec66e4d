//! The `2026-07-28` era: `server/discover`, the `_meta` every request
//! carries, `Mcp-Param-*` headers, MRTR `input_required` rounds, and the
//! Tasks extension's `tasks/get`, `tasks/update`, `tasks/cancel`.

use super::tool_list::ToolCache;
use super::{Dialect, ToolCall, not_found, task_params, tool_result};
use crate::client::connection::Connection;
use crate::client::error::ClientError;
use crate::client::input;
use crate::client::server_info::ServerInfo;
use crate::client::wire::{Outgoing, Replies};
use crate::protocol::meta::{CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, PROGRESS_TOKEN_KEY, PROTOCOL_VERSION_KEY};
use crate::protocol::methods::{DISCOVER, TASKS_CANCEL, TASKS_GET, TASKS_UPDATE, TOOLS_CALL};
use crate::protocol::mrtr::InputRequest;
use crate::protocol::routing::{PARAM_HEADER_PREFIX, param_value};
use crate::protocol::tasks::{DetailedTask, TASKS_EXTENSION_ID, Task};
use crate::protocol::tools::ToolInfo;
use crate::protocol::version::{LEGACY_VERSIONS, MODERN_VERSIONS};
use crate::protocol::{Era, ErrorCode, Implementation, LATEST_PROTOCOL_VERSION, RequestId};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::Arc;

/// How many MRTR rounds one call may take before the client gives up.
const MAX_ROUNDS: usize = 32;

/// The modern era on one connection.
#[derive(Debug)]
pub(super) struct ModernEra {
    conn: Arc<Connection>,
    version: String,
    /// What every request's `_meta` starts with: the version, `clientInfo`, `clientCapabilities`.
    meta: Map<String, Value>,
    /// The listed tools' `Mcp-Param-*` headers, learnt at the first call.
    tools: ToolCache,
}

impl ModernEra {
    fn new(conn: Arc<Connection>, version: String, info: &Implementation) -> Self {
        let mut caps = conn.handler().support().capabilities();
        caps.insert("extensions".into(), json!({ TASKS_EXTENSION_ID: {} }));
        let mut meta = Map::new();
        meta.insert(PROTOCOL_VERSION_KEY.into(), Value::String(version.clone()));
        meta.insert(CLIENT_INFO_KEY.into(), json!(info));
        meta.insert(CLIENT_CAPABILITIES_KEY.into(), Value::Object(caps));
        Self { conn, version, meta, tools: ToolCache::default() }
    }

    /// `server/discover`; on `-32022` tries once more with a modern version
    /// the server lists. A `pinned` client goes on without discover when the
    /// server refuses it (it is optional for clients).
    pub(super) async fn discover(
        conn: Arc<Connection>,
        info: &Implementation,
        pinned: bool,
    ) -> Result<(Self, ServerInfo), ClientError> {
        let mut version = LATEST_PROTOCOL_VERSION.to_owned();
        for attempt in 0..2 {
            let era = Self::new(conn.clone(), version.clone(), info);
            let id = conn.next_id();
            let out = era.outgoing(id, DISCOVER, Map::new(), Vec::new(), false);
            match conn.request(out).await {
                Ok(r) => return Ok((era, ServerInfo::from_handshake(Era::Modern, version, &r))),
                Err(ClientError::Rpc(e)) if e.error_code() == ErrorCode::UnsupportedProtocolVersion && attempt == 0 => {
                    let supported: Vec<String> = e
                        .data
                        .as_ref()
                        .and_then(|d| d.get("supported"))
                        .and_then(Value::as_array)
                        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                        .unwrap_or_default();
                    match supported.iter().find(|v| MODERN_VERSIONS.contains(&v.as_str())) {
                        Some(v) => version = v.clone(),
                        None if pinned => return Err(ClientError::Rpc(e)),
                        None if supported.iter().any(|v| LEGACY_VERSIONS.contains(&v.as_str())) => {
                            return Err(ClientError::Rpc(e));
                        }
                        None => return Err(ClientError::protocol("no protocol version in common")),
                    }
                }
                Err(ClientError::Rpc(_)) if pinned => return Ok((era, ServerInfo::unasked(version))),
                Err(e) => return Err(e),
            }
        }
        Err(ClientError::protocol("the server rejected every protocol version offered"))
    }

    /// A request with this era's `_meta` (and a `progressToken` when `progress`).
    fn outgoing(
        &self,
        id: RequestId,
        method: &str,
        mut params: Map<String, Value>,
        headers: Vec<(String, String)>,
        progress: bool,
    ) -> Outgoing {
        let mut meta = match params.remove("_meta") {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        meta.extend(self.meta.iter().map(|(k, v)| (k.clone(), v.clone())));
        if progress {
            meta.insert(PROGRESS_TOKEN_KEY.into(), id.to_value());
        }
        params.insert("_meta".into(), Value::Object(meta));
        Outgoing { id, method: method.into(), params, version: self.version.clone(), headers }
    }

    /// Sends one request with these extra headers and waits for its result.
    async fn send(
        &self,
        method: &str,
        params: Map<String, Value>,
        headers: Vec<(String, String)>,
    ) -> Result<Value, ClientError> {
        let out = self.outgoing(self.conn.next_id(), method, params, headers, self.conn.reports_notifications());
        self.conn.request(out).await
    }

    /// A `tasks/*` request on one task.
    async fn on_task(&self, method: &str, params: Map<String, Value>) -> Result<Value, ClientError> {
        self.send(method, params, Vec::new()).await.map_err(not_found)
    }

    /// The `Mcp-Param-*` headers of a call (from the tool's `inputSchema`).
    async fn param_headers_for(&self, name: &str, args: &Value) -> Result<Vec<(String, String)>, ClientError> {
        let tools = self.tools.knowing(self, name).await;
        let Some(entry) = tools.get(name) else { return Ok(Vec::new()) };
        let headers = entry.headers.as_ref().map_err(|why| ClientError::Tool(format!("{name}: refused ({why})")))?;
        Ok(headers
            .iter()
            .filter_map(|h| {
                let v = param_value(h.lookup(args)?)?;
                Some((format!("{PARAM_HEADER_PREFIX}{}", h.header), v.into_owned()))
            })
            .collect())
    }

    /// The answers to one `input_required` round, each key asked of the handler once per call.
    async fn answer_round(
        &self,
        requests: Option<&Map<String, Value>>,
        answers: &mut HashMap<String, Value>,
    ) -> Result<Map<String, Value>, ClientError> {
        let mut responses = Map::new();
        for (key, req) in requests.into_iter().flatten() {
            let answer = match answers.get(key) {
                Some(a) => a.clone(),
                None => {
                    let req = InputRequest::from_value(req.clone()).ok_or_else(|| {
                        ClientError::protocol(format!("input request {key:?} is not one the client knows"))
                    })?;
                    let a = input::answer(self.conn.handler(), key, &req).await?;
                    answers.insert(key.clone(), a.clone());
                    a
                }
            };
            responses.insert(key.clone(), answer);
        }
        Ok(responses)
    }
}

#[async_trait::async_trait]
impl Dialect for ModernEra {
    fn connection(&self) -> &Connection {
        &self.conn
    }

    async fn request(&self, method: &str, params: Map<String, Value>) -> Result<Value, ClientError> {
        self.send(method, params, Vec::new()).await
    }

    async fn open(&self, method: &str, params: Map<String, Value>) -> Result<(RequestId, Replies), ClientError> {
        let id = self.conn.next_id();
        let out = self.outgoing(id.clone(), method, params, Vec::new(), self.conn.reports_notifications());
        Ok((id, self.conn.open(out).await?))
    }

    async fn list_tools(&self) -> Result<Vec<ToolInfo>, ClientError> {
        self.tools.list(self).await
    }

    /// Answers MRTR `input_required` rounds through the input handler and
    /// returns the tool's result or the task the server made of the call.
    async fn call_tool(&self, name: &str, args: Value) -> Result<ToolCall, ClientError> {
        if !(args.is_null() || args.is_object()) {
            return Err(ClientError::Tool("arguments must be a JSON object".into()));
        }
        let headers = self.param_headers_for(name, &args).await?;
        let mut answers: HashMap<String, Value> = HashMap::new();
        let mut round: Option<(Map<String, Value>, Option<String>)> = None;
        for _ in 0..MAX_ROUNDS {
            let mut params = Map::new();
            params.insert("name".into(), Value::String(name.into()));
            if !args.is_null() {
                params.insert("arguments".into(), args.clone());
            }
            if let Some((responses, state)) = round.take() {
                params.insert("inputResponses".into(), Value::Object(responses));
                if let Some(s) = state {
                    params.insert("requestState".into(), Value::String(s));
                }
            }
            let result = self.send(TOOLS_CALL, params, headers.clone()).await?;
            match result.get("resultType").and_then(Value::as_str) {
                None | Some("complete") => return tool_result(result).map(ToolCall::Complete),
                Some("task") => {
                    let task: Task = serde_json::from_value(result).map_err(|e| ClientError::malformed("a task", e))?;
                    return Ok(ToolCall::Task(task));
                }
                Some("input_required") => {
                    let requests = result.get("inputRequests").and_then(Value::as_object);
                    let state = result.get("requestState").and_then(Value::as_str).map(str::to_owned);
                    if requests.is_none() && state.is_none() {
                        return Err(ClientError::protocol("input_required without inputRequests or requestState"));
                    }
                    round = Some((self.answer_round(requests, &mut answers).await?, state));
                }
                Some(other) => return Err(ClientError::protocol(format!("unknown resultType {other:?}"))),
            }
        }
        Err(ClientError::protocol(format!("the server asked for input more than {MAX_ROUNDS} times")))
    }

    async fn get_task(&self, id: &str) -> Result<DetailedTask, ClientError> {
        let v = self.on_task(TASKS_GET, task_params(id)).await?;
        serde_json::from_value(v).map_err(|e| ClientError::malformed("a task (tasks/get)", e))
    }

    async fn update_task(&self, id: &str, responses: Map<String, Value>) -> Result<(), ClientError> {
        let mut p = task_params(id);
        p.insert("inputResponses".into(), Value::Object(responses));
        self.on_task(TASKS_UPDATE, p).await.map(drop)
    }

    async fn cancel_task(&self, id: &str) -> Result<(), ClientError> {
        self.on_task(TASKS_CANCEL, task_params(id)).await.map(drop)
    }
}
