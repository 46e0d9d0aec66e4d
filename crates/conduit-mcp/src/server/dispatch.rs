//! Request dispatch: `_meta` validation, version support, routing, handlers.
//!
//! The check order follows the protocol brief (§8.17): `_meta` present →
//! transport headers → version supported → method known → routing headers →
//! the handler's own checks.

use super::seal::{OpenError, params_digest};
use super::{Ctx, Server, TASKS_EXTENSION_ID, ctx::CtxInner};
use crate::auth::Principal;
use crate::mrtr::{InputRequired, required_capability};
use crate::prompt::PromptOutput;
use crate::protocol::jsonrpc::{ErrorClass, Message, Request, RequestId};
use crate::protocol::meta::{
    CLIENT_CAPABILITIES_KEY, ClientCapabilities, LOG_LEVEL_KEY, PROGRESS_TOKEN_KEY, PROTOCOL_VERSION_KEY,
};
use crate::protocol::subscriptions::{ACKNOWLEDGED, LISTEN};
use crate::protocol::version::{Era, SUPPORTED_VERSIONS, is_supported};
use crate::protocol::{RpcError, discover::CacheHints};
use crate::resource::ResourceOutput;
use crate::subscriptions::{CoreFilter, tagged};
use crate::tool::{TaskSupport, ToolOutput};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use serde_json::{Map, Value, json};
use std::sync::Arc;
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};
use tokio_util::sync::CancellationToken;

/// Transport-specific header rules, called by dispatch at the right points
/// (implemented by the HTTP transport; stdio has none).
pub trait HeaderCheck: Send + Sync {
    /// Checks `MCP-Protocol-Version` and `Mcp-Method` against the body.
    fn check_base(&self, meta_version: &str, method: &str) -> Result<(), RpcError>;

    /// Checks `Mcp-Name` (when the method has a name to mirror) and `Mcp-Param-*`.
    fn check_routing(&self, name: Option<&str>, params: &[(&str, &Value)]) -> Result<(), RpcError>;
}

/// What the transport knows about a request besides its body.
#[derive(Default)]
#[non_exhaustive]
pub struct RequestEnv {
    /// The authenticated caller (`None` without authentication).
    pub principal: Option<Principal>,
    /// Header rules (HTTP only).
    pub headers: Option<Box<dyn HeaderCheck>>,
    /// Fires when the client goes away or cancels.
    pub cancel: CancellationToken,
    /// Where request-scoped notifications (progress, log, listen) go.
    pub out: Option<UnboundedSender<Message>>,
}

impl RequestEnv {
    /// An environment with a principal, a cancellation token and an outlet for notifications.
    pub fn new(principal: Option<Principal>, cancel: CancellationToken, out: Option<UnboundedSender<Message>>) -> Self {
        Self { principal, headers: None, cancel, out }
    }

    /// Adds header rules.
    pub fn with_headers(mut self, headers: Box<dyn HeaderCheck>) -> Self {
        self.headers = Some(headers);
        self
    }
}

fn str_param<'a>(params: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    params.get(key).and_then(Value::as_str)
}

impl Server {
    /// Handles one request and returns its response message.
    ///
    /// Notifications that precede the response (progress, log, listen traffic)
    /// go to `env.out`.
    pub async fn handle_request(&self, req: Request, env: RequestEnv) -> Message {
        let id = req.id.clone();
        match self.dispatch(req, env).await {
            Ok(result) => Message::Result { id, result },
            Err(error) => {
                if error.code == -32603 {
                    tracing::warn!(code = error.code, message = %error.message, "internal error answered");
                }
                Message::Error { id: Some(id), error }
            }
        }
    }

    fn method_known(&self, method: &str) -> bool {
        let i = &self.inner;
        match method {
            "server/discover" => true,
            "tools/list" | "tools/call" => !i.tools.is_empty(),
            "prompts/list" | "prompts/get" => !i.prompts.is_empty(),
            "resources/list" | "resources/templates/list" | "resources/read" => {
                !i.resources.is_empty() || !i.templates.is_empty()
            }
            "completion/complete" => i.completion.is_some(),
            LISTEN => {
                !i.tools.is_empty()
                    || !i.prompts.is_empty()
                    || !i.resources.is_empty()
                    || !i.templates.is_empty()
                    || i.extensions.iter().any(|e| !e.listen_fields().is_empty())
            }
            m => i.extensions.iter().any(|e| e.methods().contains(&m)),
        }
    }

    async fn dispatch(&self, req: Request, env: RequestEnv) -> Result<Value, RpcError> {
        let Request { id, method, params } = req;
        let mut params = match params {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        // 1. _meta present and well-formed.
        let meta = params.get("_meta").and_then(Value::as_object);
        let version = meta.and_then(|m| m.get(PROTOCOL_VERSION_KEY));
        if version.is_none() && method == "initialize" {
            let requested = str_param(&params, "protocolVersion").unwrap_or("unknown");
            let mut e = RpcError::unsupported_version(requested, SUPPORTED_VERSIONS);
            e.message = format!(
                "Unsupported protocol version: this server speaks only {} (stateless, no initialize); send per-request _meta",
                SUPPORTED_VERSIONS.join(", ")
            );
            return Err(e);
        }
        let Some(meta) = meta else {
            return Err(RpcError::missing_meta("Missing params._meta"));
        };
        let version = match version {
            Some(Value::String(v)) => v.as_str(),
            Some(_) => {
                return Err(RpcError::missing_meta(format!("_meta[{PROTOCOL_VERSION_KEY}] must be a string")));
            }
            None => {
                return Err(RpcError::missing_meta(format!("Missing _meta[{PROTOCOL_VERSION_KEY}]")));
            }
        };
        let caps = match meta.get(CLIENT_CAPABILITIES_KEY) {
            Some(Value::Object(c)) => ClientCapabilities(c.clone()),
            Some(_) => {
                return Err(RpcError::missing_meta(format!("_meta[{CLIENT_CAPABILITIES_KEY}] must be an object")));
            }
            None => {
                return Err(RpcError::missing_meta(format!("Missing _meta[{CLIENT_CAPABILITIES_KEY}]")));
            }
        };
        // 2. Transport headers agree with the body.
        if let Some(h) = &env.headers {
            h.check_base(version, &method)?;
        }
        // 3. Version supported.
        if !is_supported(version) {
            return Err(RpcError::unsupported_version(version, SUPPORTED_VERSIONS));
        }
        // 4. Method known.
        if !self.method_known(&method) {
            return Err(RpcError::method_not_found(&method));
        }
        // 5. Routing headers.
        if let Some(h) = &env.headers {
            let name = match method.as_str() {
                "tools/call" | "prompts/get" => str_param(&params, "name"),
                "resources/read" => str_param(&params, "uri"),
                m => self
                    .inner
                    .extensions
                    .iter()
                    .find(|e| e.methods().contains(&m))
                    .and_then(|e| e.routing_name(m, &params)),
            };
            let mut mirrored = Vec::new();
            if method == "tools/call"
                && let (Some(tool), Some(args)) = (name.and_then(|n| self.inner.tools.get(n)), params.get("arguments"))
            {
                for hp in &tool.header_params {
                    if let Some(v) = hp.lookup(args) {
                        mirrored.push((hp.header.as_str(), v));
                    }
                }
            }
            h.check_routing(name, &mirrored)?;
        }
        // `_meta` moves into the context (handlers read it there); a completion
        // handler, which sees the whole params object, gets it back below.
        let meta = match params.remove("_meta") {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        let progress_token =
            meta.get(PROGRESS_TOKEN_KEY).filter(|t| t.is_string() || t.is_i64() || t.is_u64()).cloned();
        let log_level = meta.get(LOG_LEVEL_KEY).and_then(Value::as_str).map(String::from);
        let ctx = Ctx {
            inner: Arc::new(CtxInner {
                server: self.clone(),
                request_id: id,
                method: method.clone(),
                era: Era::Modern,
                principal: env.principal,
                caps,
                progress_token,
                log_level,
                meta,
                cancel: env.cancel,
                out: env.out,
                input_responses: None,
                request_state: None,
            }),
        };
        let result = match method.as_str() {
            "server/discover" => Ok(self.discover()),
            "tools/list" => self.list(&params, "tools", self.inner.tools.tools.iter().map(|t| json!(t.info)).collect()),
            "tools/call" => self.call_tool(ctx, params).await,
            "prompts/list" => {
                self.list(&params, "prompts", self.inner.prompts.iter().map(|p| json!(p.info())).collect())
            }
            "prompts/get" => self.get_prompt(ctx, params).await,
            "resources/list" => {
                self.list(&params, "resources", self.inner.resources.iter().map(|r| json!(r.info())).collect())
            }
            "resources/templates/list" => {
                self.list(&params, "resourceTemplates", self.inner.templates.iter().map(|t| json!(t.info())).collect())
            }
            "resources/read" => self.read_resource(ctx, params).await,
            "completion/complete" => match &self.inner.completion {
                Some(f) => {
                    params.insert("_meta".into(), Value::Object(ctx.meta().clone()));
                    f(ctx, Value::Object(params)).await.map(|c| json!({ "completion": c }))
                }
                None => Err(RpcError::method_not_found(&method)),
            },
            LISTEN => self.listen(ctx, params).await,
            m => {
                let ext = self.inner.extensions.iter().find(|e| e.methods().contains(&m)).cloned();
                match ext {
                    Some(e) => e.handle(ctx, m, params).await,
                    None => Err(RpcError::method_not_found(m)),
                }
            }
        }?;
        Ok(self.finish_result(result))
    }

    fn discover(&self) -> Value {
        let i = &self.inner;
        let mut caps = Map::new();
        if !i.tools.is_empty() {
            caps.insert("tools".into(), json!({ "listChanged": true }));
        }
        if !i.prompts.is_empty() {
            caps.insert("prompts".into(), json!({ "listChanged": true }));
        }
        if !i.resources.is_empty() || !i.templates.is_empty() {
            caps.insert("resources".into(), json!({ "subscribe": true, "listChanged": true }));
        }
        if i.completion.is_some() {
            caps.insert("completions".into(), json!({}));
        }
        if !i.extensions.is_empty() {
            let ext: Map<String, Value> = i.extensions.iter().map(|e| (e.id().to_owned(), e.capability())).collect();
            caps.insert("extensions".into(), Value::Object(ext));
        }
        let mut r = json!({
            "resultType": "complete",
            "supportedVersions": SUPPORTED_VERSIONS,
            "capabilities": caps,
        });
        add_cache(&mut r, i.options.discover_cache);
        if let Some(text) = &i.instructions {
            r["instructions"] = json!(text);
        }
        r
    }

    fn list(&self, params: &Map<String, Value>, key: &str, items: Vec<Value>) -> Result<Value, RpcError> {
        let start = match params.get("cursor") {
            None => 0,
            Some(Value::String(c)) => decode_cursor(c).ok_or_else(|| RpcError::invalid_params("Invalid cursor"))?,
            Some(_) => return Err(RpcError::invalid_params("Invalid cursor")),
        };
        if start > items.len() {
            return Err(RpcError::invalid_params("Invalid cursor"));
        }
        let size = self.inner.options.page_size;
        let end = (start + size).min(items.len());
        let mut r = json!({ "resultType": "complete", key: items[start..end] });
        if end < items.len() {
            r["nextCursor"] = json!(B64.encode(format!("o:{end}")));
        }
        add_cache(&mut r, self.inner.options.list_cache);
        Ok(r)
    }

    /// Reads `inputResponses` and `requestState` into the context; `-32602` on bad ones.
    fn with_round_state(&self, ctx: Ctx, params: &Map<String, Value>) -> Result<Ctx, RpcError> {
        let responses = match params.get("inputResponses") {
            None => None,
            Some(Value::Object(m)) => Some(m.clone()),
            Some(_) => return Err(RpcError::invalid_params("inputResponses must be an object")),
        };
        let state = match params.get("requestState") {
            None => None,
            Some(Value::String(s)) => {
                let digest = params_digest(params);
                let now = self.inner.clock.now_ms();
                match self.inner.sealer.open(s, ctx.owner(), ctx.method(), &digest, now) {
                    Ok(v) => Some(v),
                    Err(OpenError::Expired) => {
                        return Err(RpcError::invalid_params("requestState has expired"));
                    }
                    Err(_) => return Err(RpcError::invalid_params("Invalid requestState")),
                }
            }
            Some(_) => return Err(RpcError::invalid_params("requestState must be a string")),
        };
        if responses.is_none() && state.is_none() {
            return Ok(ctx);
        }
        let mut inner = match Arc::try_unwrap(ctx.inner) {
            Ok(i) => i,
            Err(shared) => {
                return Err(RpcError::internal(format!("context of {} is shared", shared.method)));
            }
        };
        inner.input_responses = responses;
        inner.request_state = state;
        Ok(Ctx { inner: Arc::new(inner) })
    }

    /// Turns an `InputRequired` into the wire result, refusing kinds the request did not declare.
    fn input_required(&self, ctx: &Ctx, params: &Map<String, Value>, ir: InputRequired) -> Result<Value, RpcError> {
        let (requests, state) = ir.into_parts();
        if requests.is_empty() && state.is_none() {
            return Err(RpcError::internal("input_required result has neither inputRequests nor requestState"));
        }
        let caps = ctx.client_capabilities();
        for r in requests.values() {
            let kind = r.kind().ok_or_else(|| RpcError::internal("invalid input request"))?;
            let ok = match kind {
                crate::protocol::mrtr::InputKind::ElicitForm => caps.elicitation_form(),
                crate::protocol::mrtr::InputKind::ElicitUrl => caps.elicitation_url(),
                crate::protocol::mrtr::InputKind::Sample => caps.sampling(),
                crate::protocol::mrtr::InputKind::SampleWithTools => caps.sampling_tools(),
                crate::protocol::mrtr::InputKind::ListRoots => caps.roots(),
            };
            if !ok {
                return Err(RpcError::missing_capability(required_capability(kind)));
            }
        }
        let mut r = json!({ "resultType": "input_required" });
        if !requests.is_empty() {
            r["inputRequests"] = json!(requests);
        }
        if let Some(state) = state {
            let exp = self.inner.clock.now_ms() + self.inner.options.request_state_ttl.as_millis() as u64;
            r["requestState"] =
                json!(self.inner.sealer.seal(&state, ctx.owner(), ctx.method(), &params_digest(params), exp));
        }
        Ok(r)
    }

    async fn call_tool(&self, ctx: Ctx, params: Map<String, Value>) -> Result<Value, RpcError> {
        let name = match params.get("name") {
            Some(Value::String(n)) => n.clone(),
            _ => {
                return Err(RpcError::invalid_params("tools/call requires a string name"));
            }
        };
        let args = match params.get("arguments") {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(Value::Object(a)) => Value::Object(a.clone()),
            Some(_) => return Err(RpcError::invalid_params("arguments must be an object")),
        };
        let Some(tool) = self.inner.tools.get(&name) else {
            return Err(RpcError::invalid_params(format!("Unknown tool: {name}")));
        };
        if !tool.scopes.is_empty() && !ctx.principal().is_some_and(|p| p.has_scopes(&tool.scopes)) {
            let mut e = RpcError::new(crate::protocol::ErrorCode::Other(INSUFFICIENT_SCOPE), "Insufficient scope")
                .with_data(json!({ "requiredScopes": tool.scopes }));
            e.class = ErrorClass::InsufficientScope;
            return Err(e);
        }
        let tasks_enabled = self.extension(TASKS_EXTENSION_ID).is_some();
        if tool.handler.task_support() == TaskSupport::Required && !ctx.tasks_declared() {
            if tasks_enabled {
                return Err(RpcError::missing_capability(json!({ "extensions": { TASKS_EXTENSION_ID: {} } })));
            }
            tracing::warn!(tool = %name, "tool requires tasks but the Tasks extension is not enabled");
            return Err(RpcError::internal("This tool runs only as a task, and tasks are not enabled on this server"));
        }
        let ctx = self.with_round_state(ctx, &params)?;
        if let Err(msg) = tool.validate(&args) {
            return Ok(crate::protocol::tools::CallToolResult::error(msg).to_value());
        }
        let cancel = ctx.cancellation().clone();
        let out = tokio::select! {
            r = tool.handler.call(ctx.clone(), args) => r?,
            _ = cancel.cancelled() => return Err(RpcError::internal("Request cancelled")),
        };
        match out {
            ToolOutput::Complete(r) => {
                if let (Some(schema), Some(sc)) = (&tool.info.output_schema, &r.structured_content)
                    && let Ok(v) = jsonschema::validator_for(schema)
                    && !v.is_valid(sc)
                {
                    tracing::warn!(tool = %name, "structuredContent does not match outputSchema");
                    return Err(RpcError::internal(format!(
                        "Tool {name} produced structuredContent that does not match its outputSchema"
                    )));
                }
                Ok(r.to_value())
            }
            ToolOutput::InputRequired(ir) => self.input_required(&ctx, &params, ir),
            ToolOutput::Task(spec) => {
                let Some(ext) = self.extension(TASKS_EXTENSION_ID).cloned() else {
                    tracing::warn!(tool = %name, "tool returned a task but the Tasks extension is not enabled");
                    return Err(RpcError::internal("Tool returned a task, but the Tasks extension is not enabled"));
                };
                if !ctx.tasks_declared() {
                    // The extension is on, but this request did not declare it: the client must.
                    tracing::debug!(tool = %name, "task refused: the request did not declare the Tasks extension");
                    return Err(RpcError::missing_capability(json!({ "extensions": { TASKS_EXTENSION_ID: {} } })));
                }
                match ext.create_task(&ctx, spec).await {
                    Some(r) => r,
                    None => {
                        tracing::warn!(tool = %name, "the Tasks extension did not create the task");
                        Err(RpcError::internal("Tool returned a task, but no extension creates tasks"))
                    }
                }
            }
        }
    }

    async fn get_prompt(&self, ctx: Ctx, params: Map<String, Value>) -> Result<Value, RpcError> {
        let Some(name) = str_param(&params, "name") else {
            return Err(RpcError::invalid_params("prompts/get requires a string name"));
        };
        let Some(&idx) = self.inner.prompt_index.get(name) else {
            return Err(RpcError::invalid_params(format!("Unknown prompt: {name}")));
        };
        let mut args = crate::prompt::PromptArgs::new();
        match params.get("arguments") {
            None | Some(Value::Null) => {}
            Some(Value::Object(a)) => {
                for (k, v) in a {
                    let Value::String(s) = v else {
                        return Err(RpcError::invalid_params(format!("Prompt argument {k:?} must be a string")));
                    };
                    args.insert(k.clone(), s.clone());
                }
            }
            Some(_) => return Err(RpcError::invalid_params("arguments must be an object")),
        }
        let ctx = self.with_round_state(ctx, &params)?;
        match self.inner.prompts[idx].get(ctx.clone(), args).await? {
            PromptOutput::Complete(r) => Ok(json!(r)),
            PromptOutput::InputRequired(ir) => self.input_required(&ctx, &params, ir),
        }
    }

    async fn read_resource(&self, ctx: Ctx, params: Map<String, Value>) -> Result<Value, RpcError> {
        let Some(uri) = str_param(&params, "uri").map(String::from) else {
            return Err(RpcError::invalid_params("resources/read requires a string uri"));
        };
        let ctx = self.with_round_state(ctx, &params)?;
        let out = if let Some(&i) = self.inner.resource_index.get(&uri) {
            self.inner.resources[i].read_now(ctx.clone(), uri.clone()).await?
        } else if let Some((t, vars)) = self.inner.templates.iter().find_map(|t| t.matches(&uri).map(|v| (t, v))) {
            t.read_now(ctx.clone(), uri.clone(), vars).await?
        } else {
            return Err(super::resource_not_found(&uri));
        };
        match out {
            ResourceOutput::Complete(contents) if contents.is_empty() => Err(super::resource_not_found(&uri)),
            ResourceOutput::Complete(contents) => {
                let mut r = json!({ "resultType": "complete", "contents": contents });
                add_cache(&mut r, self.inner.options.list_cache);
                Ok(r)
            }
            ResourceOutput::InputRequired(ir) => self.input_required(&ctx, &params, ir),
        }
    }

    async fn listen(&self, ctx: Ctx, params: Map<String, Value>) -> Result<Value, RpcError> {
        let filter = match params.get("notifications") {
            Some(Value::Object(f)) => f.clone(),
            _ => {
                return Err(RpcError::invalid_params("subscriptions/listen requires a notifications object"));
            }
        };
        let flag = |k: &str| -> Result<bool, RpcError> {
            match filter.get(k) {
                None | Some(Value::Null) => Ok(false),
                Some(Value::Bool(b)) => Ok(*b),
                Some(_) => Err(RpcError::invalid_params(format!("notifications.{k} must be a boolean"))),
            }
        };
        let i = &self.inner;
        let has_resources = !i.resources.is_empty() || !i.templates.is_empty();
        let mut core = CoreFilter {
            tools_list_changed: flag("toolsListChanged")? && !i.tools.is_empty(),
            prompts_list_changed: flag("promptsListChanged")? && !i.prompts.is_empty(),
            resources_list_changed: flag("resourcesListChanged")? && has_resources,
            ..CoreFilter::default()
        };
        match filter.get("resourceSubscriptions") {
            None | Some(Value::Null) => {}
            Some(Value::Array(a)) if a.iter().all(Value::is_string) => {
                if has_resources {
                    core.resource_subscriptions = a.iter().filter_map(Value::as_str).map(String::from).collect();
                }
            }
            Some(_) => {
                return Err(RpcError::invalid_params(
                    "notifications.resourceSubscriptions must be an array of strings",
                ));
            }
        }
        let mut ack = Map::new();
        if core.tools_list_changed {
            ack.insert("toolsListChanged".into(), true.into());
        }
        if core.prompts_list_changed {
            ack.insert("promptsListChanged".into(), true.into());
        }
        if core.resources_list_changed {
            ack.insert("resourcesListChanged".into(), true.into());
        }
        if !core.resource_subscriptions.is_empty() {
            ack.insert("resourceSubscriptions".into(), json!(core.resource_subscriptions));
        }
        let Some(out) = ctx.inner.out.clone() else {
            return Err(RpcError::internal("this transport cannot carry a listen stream"));
        };
        let (tx, mut rx) = unbounded_channel();
        let (sub, _registration) = i.hub.register(ctx.request_id().clone(), ctx.principal().cloned(), core, tx);
        for e in &i.extensions {
            if e.listen_fields().iter().any(|f| filter.contains_key(*f)) {
                ack.extend(e.listen(&ctx, &filter, &sub).await?);
            }
        }
        let id: RequestId = ctx.request_id().clone();
        let mut ack_params = Map::new();
        ack_params.insert("notifications".into(), Value::Object(ack));
        if out.send(tagged(&id, ACKNOWLEDGED, ack_params)).is_err() {
            return Err(RpcError::internal("listen stream closed"));
        }
        let cancel = ctx.cancellation().clone();
        let shutdown = i.shutdown.clone();
        loop {
            tokio::select! {
                // Cancellation first: nothing may be forwarded once the client cancelled.
                biased;
                _ = cancel.cancelled() => break,
                _ = shutdown.cancelled() => break,
                msg = rx.recv() => match msg {
                    Some(m) => if out.send(m).is_err() { break },
                    None => break,
                },
            }
        }
        drop(sub);
        Ok(json!({
            "resultType": "complete",
            "_meta": { crate::protocol::meta::SUBSCRIPTION_ID_KEY: id.to_value() },
        }))
    }
}

/// The JSON-RPC code used for "insufficient scope" outside HTTP (an application
/// code outside the reserved range; HTTP answers 403 instead).
pub const INSUFFICIENT_SCOPE: i64 = 403;

fn add_cache(r: &mut Value, hints: CacheHints) {
    r["ttlMs"] = json!(hints.ttl_ms);
    r["cacheScope"] = json!(hints.cache_scope);
}

fn decode_cursor(c: &str) -> Option<usize> {
    let bytes = B64.decode(c).ok()?;
    std::str::from_utf8(&bytes).ok()?.strip_prefix("o:")?.parse().ok()
}
