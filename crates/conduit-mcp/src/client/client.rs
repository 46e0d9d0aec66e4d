//! [`Client`]: a connection to one server, and the request plumbing every
//! call goes through (`_meta`, ids, routing headers, MRTR rounds).

use super::error::ClientError;
use super::input::{self, InputHandler};
use super::listen::Hub;
use super::task::TaskHandle;
use super::wire::{Outgoing, Wire};
use crate::protocol::jsonrpc::{Incoming, Response};
use crate::protocol::meta::{CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, PROGRESS_TOKEN_KEY, PROTOCOL_VERSION_KEY};
use crate::protocol::methods::{TOOLS_CALL, TOOLS_LIST};
use crate::protocol::mrtr::InputRequest;
use crate::protocol::routing::{PARAM_HEADER_PREFIX, ParamHeader, param_headers, param_value};
use crate::protocol::tasks::{TASKS_EXTENSION_ID, Task};
use crate::protocol::tools::{CallToolResult, ToolInfo};
use crate::protocol::{Era, Implementation, RequestId};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How many MRTR rounds one call may take before the client gives up.
const MAX_ROUNDS: usize = 32;

/// A callback for request-scoped notifications (`notifications/progress`, `notifications/message`).
pub type NotificationFn = Arc<dyn Fn(&str, &Value) + Send + Sync>;

/// The result of `tools/call` once MRTR rounds are answered: the tool's
/// result, or a task to follow.
#[derive(Debug)]
#[non_exhaustive]
pub enum CallOutcome {
    /// The tool finished inline (its `isError` may be set).
    Complete(CallToolResult),
    /// The server made the call a task.
    Task(TaskHandle),
}

/// What the server told about itself when the client connected.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ServerInfo {
    /// The era spoken.
    pub era: Option<Era>,
    /// The protocol version spoken.
    pub version: String,
    /// `capabilities` from `server/discover` (or `initialize`).
    pub capabilities: Value,
    /// `instructions`, when sent.
    pub instructions: Option<String>,
    /// The server's name and version, when sent.
    pub implementation: Option<Value>,
}

impl ServerInfo {
    /// Whether the server advertised the Tasks extension (modern) or `tasks` (legacy).
    pub fn offers_tasks(&self) -> bool {
        self.capabilities.get("extensions").and_then(|e| e.get(TASKS_EXTENSION_ID)).is_some()
            || self.capabilities.get("tasks").is_some()
    }
}

/// Each listed tool's `Mcp-Param-*` headers, or why its annotations were refused.
type ToolTable = HashMap<String, Result<Vec<ParamHeader>, String>>;

/// Settings of the task follower.
#[derive(Clone)]
pub(crate) struct FollowSettings {
    pub(crate) default_poll: Duration,
    pub(crate) max_poll: Duration,
    pub(crate) stuck_polls: u32,
    pub(crate) push: bool,
    pub(crate) now_ms: Arc<dyn Fn() -> i64 + Send + Sync>,
}

pub(crate) struct Inner {
    pub(crate) wire: Arc<dyn Wire>,
    pub(crate) server: ServerInfo,
    pub(crate) info: Implementation,
    pub(crate) handler: Arc<dyn InputHandler>,
    pub(crate) on_notification: Option<NotificationFn>,
    pub(crate) follow: FollowSettings,
    pub(crate) hub: Hub,
    next_id: Arc<AtomicI64>,
    tools: Mutex<Option<ToolTable>>,
}

/// A connection to one MCP server (cheap to clone; clones share the connection,
/// the tool cache and the one listen stream).
///
/// Made by [`ClientBuilder`](super::ClientBuilder). Every request carries its
/// own `_meta` (modern era) with the capabilities of the [`InputHandler`] and
/// the Tasks extension.
#[derive(Clone)]
pub struct Client {
    pub(crate) inner: Arc<Inner>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client").field("server", &self.inner.server).finish_non_exhaustive()
    }
}

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

impl Inner {
    pub(crate) fn with_ids(
        wire: Arc<dyn Wire>,
        server: ServerInfo,
        info: Implementation,
        handler: Arc<dyn InputHandler>,
        on_notification: Option<NotificationFn>,
        follow: FollowSettings,
        next_id: Arc<AtomicI64>,
    ) -> Self {
        Self {
            wire,
            server,
            info,
            handler,
            on_notification,
            follow,
            hub: Hub::default(),
            next_id,
            tools: Mutex::new(None),
        }
    }

    pub(crate) fn era(&self) -> Era {
        self.server.era.unwrap_or(Era::Modern)
    }

    pub(crate) fn next_id(&self) -> RequestId {
        RequestId::Number(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// The client capabilities declared on every modern request.
    pub(crate) fn capabilities(&self) -> Value {
        let mut caps = self.handler.support().capabilities();
        caps.insert("extensions".into(), json!({ TASKS_EXTENSION_ID: {} }));
        Value::Object(caps)
    }

    /// `params` with the modern `_meta` added (legacy: unchanged).
    pub(crate) fn with_meta(&self, mut params: Map<String, Value>, id: &RequestId) -> Map<String, Value> {
        if self.era() == Era::Modern {
            let mut meta = object(params.remove("_meta").unwrap_or(Value::Null));
            meta.insert(PROTOCOL_VERSION_KEY.into(), Value::String(self.server.version.clone()));
            meta.insert(CLIENT_INFO_KEY.into(), json!(self.info));
            meta.insert(CLIENT_CAPABILITIES_KEY.into(), self.capabilities());
            if self.on_notification.is_some() {
                meta.insert(PROGRESS_TOKEN_KEY.into(), id.to_value());
            }
            params.insert("_meta".into(), Value::Object(meta));
        }
        params
    }

    /// Sends one request and waits for its response.
    pub(crate) async fn request(
        &self,
        method: &str,
        params: Map<String, Value>,
        headers: Vec<(String, String)>,
    ) -> Result<Value, ClientError> {
        let id = self.next_id();
        let params = self.with_meta(params, &id);
        let out = Outgoing { id, method: method.into(), params, version: self.server.version.clone(), headers };
        let mut replies = self.wire.send(out).await?;
        while let Some(msg) = replies.recv().await {
            match msg {
                Incoming::Response(Response { outcome, .. }) => return outcome.map_err(ClientError::Rpc),
                Incoming::Notification { method, params } => {
                    if let Some(f) = &self.on_notification {
                        f(&method, params.as_ref().unwrap_or(&Value::Null));
                    }
                }
                Incoming::Request(req) => super::legacy::answer_server_request(self, req).await?,
            }
        }
        Err(ClientError::Transport(match replies.why() {
            Some(why) => format!("{why} (answering {method})"),
            None => format!("the server closed the stream before answering {method}"),
        }))
    }

    /// The `Mcp-Param-*` headers of a call (from the tool's `inputSchema`).
    async fn param_headers_for(&self, name: &str, args: &Value) -> Result<Vec<(String, String)>, ClientError> {
        if self.era() != Era::Modern {
            return Ok(Vec::new());
        }
        let known = self.tools.lock().unwrap_or_else(|p| p.into_inner()).is_some();
        if !known {
            // Learn the schemas once; a server that cannot list still gets the call.
            let _ = self.list_tools().await;
        }
        let tools = self.tools.lock().unwrap_or_else(|p| p.into_inner());
        let Some(entry) = tools.as_ref().and_then(|t| t.get(name)) else { return Ok(Vec::new()) };
        let headers = entry.as_ref().map_err(|why| ClientError::Tool(format!("{name}: refused ({why})")))?;
        Ok(headers
            .iter()
            .filter_map(|h| {
                let v = param_value(h.lookup(args)?)?;
                Some((format!("{PARAM_HEADER_PREFIX}{}", h.header), v.into_owned()))
            })
            .collect())
    }

    /// Every tool the server lists, minus those whose `x-mcp-header`
    /// annotations break the rules (a client must not call them).
    pub(crate) async fn list_tools(&self) -> Result<Vec<ToolInfo>, ClientError> {
        let mut out = Vec::new();
        let mut table = HashMap::new();
        let mut cursor: Option<String> = None;
        for _ in 0..1000 {
            let mut params = Map::new();
            if let Some(c) = cursor.take() {
                params.insert("cursor".into(), Value::String(c));
            }
            let page = self.request(TOOLS_LIST, params, Vec::new()).await?;
            let tools = page
                .get("tools")
                .and_then(Value::as_array)
                .ok_or_else(|| ClientError::Protocol("tools/list result has no tools array".into()))?;
            for t in tools {
                let Ok(info) = serde_json::from_value::<ToolInfo>(t.clone()) else {
                    tracing::warn!("skipping a tool the server described badly");
                    continue;
                };
                let headers = param_headers(&info.input_schema);
                if let Err(why) = &headers {
                    tracing::warn!(tool = %info.name, "excluding tool with an invalid x-mcp-header: {why}");
                } else {
                    out.push(info.clone());
                }
                table.insert(info.name.clone(), headers);
            }
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(c) if !c.is_empty() => cursor = Some(c.to_owned()),
                _ => break,
            }
        }
        *self.tools.lock().unwrap_or_else(|p| p.into_inner()) = Some(table);
        Ok(out)
    }
}

/// Reads a `CallToolResult` (a missing `resultType` means complete).
pub(crate) fn tool_result(v: Value) -> Result<CallToolResult, ClientError> {
    serde_json::from_value(v).map_err(|e| ClientError::Protocol(format!("not a CallToolResult: {e}")))
}

/// Reads the task of a `CreateTaskResult`.
pub(crate) fn task_of(v: Value) -> Result<Task, ClientError> {
    serde_json::from_value(v).map_err(|e| ClientError::Protocol(format!("not a task: {e}")))
}

impl Client {
    /// What the server said about itself when connecting.
    pub fn server(&self) -> &ServerInfo {
        &self.inner.server
    }

    /// Sends any request (with `_meta` and the routing headers filled in) and returns its result.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, ClientError> {
        self.inner.request(method, object(params), Vec::new()).await
    }

    /// `tools/list`, every page; tools with invalid `x-mcp-header`
    /// annotations are left out (and refused by [`Client::call_tool`]).
    pub async fn list_tools(&self) -> Result<Vec<ToolInfo>, ClientError> {
        self.inner.list_tools().await
    }

    /// `tools/call`: answers MRTR `input_required` rounds through the
    /// [`InputHandler`] (each key once) and returns the tool's result or the
    /// task the server made of it.
    pub async fn call_tool(&self, name: &str, args: Value) -> Result<CallOutcome, ClientError> {
        if self.inner.era() == Era::Legacy {
            return super::legacy::call_tool(self, name, args).await;
        }
        if !(args.is_null() || args.is_object()) {
            return Err(ClientError::Tool("arguments must be a JSON object".into()));
        }
        let headers = self.inner.param_headers_for(name, &args).await?;
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
            let result = self.inner.request(TOOLS_CALL, params, headers.clone()).await?;
            match result.get("resultType").and_then(Value::as_str) {
                None | Some("complete") => return tool_result(result).map(CallOutcome::Complete),
                Some("task") => {
                    let task = task_of(result)?;
                    return Ok(CallOutcome::Task(TaskHandle::new(self.clone(), task.task_id.clone(), Some(task))));
                }
                Some("input_required") => {
                    let requests = result.get("inputRequests").and_then(Value::as_object);
                    let state = result.get("requestState").and_then(Value::as_str).map(str::to_owned);
                    if requests.is_none() && state.is_none() {
                        return Err(ClientError::Protocol(
                            "input_required without inputRequests or requestState".into(),
                        ));
                    }
                    let mut responses = Map::new();
                    for (key, req) in requests.into_iter().flatten() {
                        let answer = match answers.get(key) {
                            Some(a) => a.clone(),
                            None => {
                                let req = InputRequest::from_value(req.clone()).ok_or_else(|| {
                                    ClientError::Protocol(format!("input request {key:?} is not one the client knows"))
                                })?;
                                let a = input::answer(self.inner.handler.as_ref(), key, &req).await?;
                                answers.insert(key.clone(), a.clone());
                                a
                            }
                        };
                        responses.insert(key.clone(), answer);
                    }
                    round = Some((responses, state));
                }
                Some(other) => return Err(ClientError::Protocol(format!("unknown resultType {other:?}"))),
            }
        }
        Err(ClientError::Protocol(format!("the server asked for input more than {MAX_ROUNDS} times")))
    }

    /// Calls a tool and drives everything to the end: MRTR rounds, the task
    /// and its `input_required` phases. Failed and cancelled tasks are values.
    pub async fn call_tool_to_end(&self, name: &str, args: Value) -> Result<super::ToolOutcome, ClientError> {
        match self.call_tool(name, args).await? {
            CallOutcome::Complete(r) => Ok(super::ToolOutcome::Completed(r)),
            CallOutcome::Task(t) => t.wait().await,
        }
    }

    /// A handle on a task known only by its id (resume after a restart).
    pub fn task(&self, task_id: impl Into<String>) -> TaskHandle {
        TaskHandle::new(self.clone(), task_id.into(), None)
    }
}
