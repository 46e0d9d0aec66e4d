//! The extension itself: `tasks/get`, `tasks/update`, `tasks/cancel`, task
//! creation for the server's task decision, and the `taskIds` listen filter.
//! Its methods follow the brief's check order after dispatch: declared on this
//! request (`-32021`), then params (`-32602`), then the owner-scoped lookup.

use super::config::NotifierConfig;
use super::limits;
use super::runtime::Work;
use super::store::{Owner, StoreError};
use super::task::{TaskRecord, TaskStatus};
use super::worker::Tasks;
use crate::Ctx;
use crate::protocol::RpcError;
use crate::protocol::meta::ClientCapabilities;
use crate::protocol::methods::{TASKS_CANCEL, TASKS_GET, TASKS_UPDATE};
use crate::protocol::mrtr::InputKind;
use crate::protocol::tasks::TASKS_EXTENSION_ID;
use crate::protocol::version::Era;
use crate::server::{Declaration, Extension, TaskMaker};
use crate::subscriptions::Subscription;
use crate::tool::{ResumableFn, TaskSpec, TaskWork};
use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use serde_json::{Map, Value, json};
use std::panic::AssertUnwindSafe;

/// Most task ids one listen request may name.
pub const MAX_LISTEN_TASK_IDS: usize = 1000;

const NOT_FOUND: &str = "Failed to retrieve task: Task not found";

const METHODS: &[&str] = &[TASKS_GET, TASKS_UPDATE, TASKS_CANCEL];

pub(crate) struct TasksExtension {
    pub(crate) tasks: Tasks,
}

/// Whether a request declared the extension: asked here and nowhere else.
fn declared(caps: &ClientCapabilities) -> bool {
    caps.extension(TASKS_EXTENSION_ID)
}

fn required() -> Value {
    json!({ "extensions": { TASKS_EXTENSION_ID: {} } })
}

fn not_found() -> RpcError {
    RpcError::invalid_params(NOT_FOUND)
}

fn store_error(e: StoreError) -> RpcError {
    match e {
        StoreError::NotFound => not_found(),
        // `data.cap` names which cap refused the task.
        StoreError::TaskLimitReached => {
            crate::metrics::task_refused_by_limit();
            RpcError::internal("Task limit reached").with_data(json!({ "cap": "server" }))
        }
        StoreError::OwnerLimitReached => {
            crate::metrics::task_refused_by_limit();
            RpcError::internal("Task limit reached").with_data(json!({ "cap": "principal" }))
        }
        e @ (StoreError::Hook { .. } | StoreError::Unsupported(_)) => hook_refusal(&e),
        e => {
            crate::metrics::store_error("request");
            // Once per window, not once per request, while the store is away.
            if let Some(suppressed) = crate::log_limit::admit("task store failed") {
                tracing::error!(error = %e, suppressed, "task store failed");
            }
            RpcError::internal("Task store unavailable")
        }
    }
}

/// The answer to a task write whose transaction hook failed or that the
/// store could not run with a hook: nothing was written.
pub(crate) fn hook_refusal(e: &StoreError) -> RpcError {
    match e {
        StoreError::Unsupported(why) => {
            if let Some(suppressed) = crate::log_limit::admit("task store refused a transaction hook") {
                tracing::error!(reason = %why, suppressed, "task store refused a transaction hook; no task written");
            }
            RpcError::internal("Internal error: this server's task store cannot start the task")
        }
        e => {
            if let Some(suppressed) = crate::log_limit::admit("task transaction hook failed") {
                tracing::warn!(error = %e, suppressed, "a task's transaction hook failed; nothing was written");
            }
            RpcError::internal("Internal error: the task could not be started")
        }
    }
}

/// A new task id: 32 random bytes, 43 url-safe characters.
pub fn new_task_id() -> String {
    let bytes: [u8; 32] = rand::random();
    B64.encode(bytes)
}

/// Whether `v` is a well-formed answer to an input request of `kind`.
fn valid_response(kind: Option<InputKind>, v: &Value) -> bool {
    let Some(o) = v.as_object() else { return false };
    match kind {
        Some(InputKind::ElicitForm | InputKind::ElicitUrl) => {
            matches!(o.get("action").and_then(Value::as_str), Some("accept" | "decline" | "cancel"))
                && o.get("content").is_none_or(Value::is_object)
        }
        Some(InputKind::Sample | InputKind::SampleWithTools) => o.contains_key("role") && o.contains_key("content"),
        Some(InputKind::ListRoots) => o.get("roots").is_some_and(Value::is_array),
        None => false,
    }
}

fn task_id(params: &Map<String, Value>) -> Result<&str, RpcError> {
    params.get("taskId").and_then(Value::as_str).ok_or_else(|| RpcError::invalid_params("Missing taskId"))
}

impl TasksExtension {
    async fn get(&self, ctx: &Ctx, params: &Map<String, Value>) -> Result<Value, RpcError> {
        let id = task_id(params)?;
        let rec = self.tasks.store().get(id, Owner::Is(ctx.owner())).await.map_err(store_error)?;
        Ok(Value::Object(rec.detailed()))
    }

    async fn update(&self, ctx: &Ctx, params: &Map<String, Value>) -> Result<Value, RpcError> {
        let id = task_id(params)?;
        let Some(Value::Object(responses)) = params.get("inputResponses") else {
            return Err(RpcError::invalid_params("inputResponses must be an object"));
        };
        let now = self.tasks.now();
        let apply = |r: &TaskRecord| {
            if r.status != TaskStatus::InputRequired {
                return Err(StoreError::Refused("nothing outstanding".into()));
            }
            let mut n = r.clone();
            let mut applied = 0;
            let mut kept: usize =
                n.input_responses.values().chain(n.pending_responses.values()).map(limits::json_len).sum();
            for (k, v) in responses {
                let Some(req) = n.input_requests.get(k) else {
                    continue;
                };
                if !valid_response(req.kind(), v) {
                    continue;
                }
                // An answer past the bounds is ignored like a malformed one.
                let len = limits::json_len(v);
                if len > limits::MAX_ANSWER_BYTES || kept + len > limits::MAX_ANSWERS_BYTES {
                    continue;
                }
                kept += len;
                n.input_requests.remove(k);
                n.pending_responses.insert(k.clone(), v.clone());
                applied += 1;
            }
            if applied == 0 {
                return Err(StoreError::Refused("no outstanding key answered".into()));
            }
            if n.input_requests.is_empty() {
                let answers = std::mem::take(&mut n.pending_responses);
                n.input_responses.extend(answers);
                n.transition(TaskStatus::Working, now);
            } else {
                n.touch(now);
            }
            Ok(n)
        };
        let result = self.tasks.store_answer(id, Owner::Is(ctx.owner()), &apply).await;
        match result {
            Ok(rec) => self.tasks.after_write(&rec),
            Err(StoreError::Refused(_)) => {}
            Err(e) => return Err(store_error(e)),
        }
        Ok(json!({}))
    }

    async fn cancel(&self, ctx: &Ctx, params: &Map<String, Value>) -> Result<Value, RpcError> {
        let id = task_id(params)?;
        let before = self.tasks.store().get(id, Owner::Is(ctx.owner())).await.map_err(store_error)?;
        if !before.is_terminal() {
            let rec = self.tasks.store().cancel(id, Owner::Is(ctx.owner()), None).await.map_err(store_error)?;
            if rec.version != before.version {
                if rec.status == TaskStatus::Cancelled {
                    crate::metrics::task_finished("cancelled");
                }
                self.tasks.after_write(&rec);
            }
        }
        Ok(json!({}))
    }
}

#[async_trait]
impl Extension for TasksExtension {
    fn id(&self) -> &'static str {
        TASKS_EXTENSION_ID
    }

    fn declare(&self, era: Era) -> Option<Declaration> {
        match era {
            Era::Modern => Some(
                Declaration::new()
                    .extension(TASKS_EXTENSION_ID, json!({}))
                    .methods(METHODS)
                    .listen_fields(&["taskIds"]),
            ),
            // The legacy era has its own task model (`capabilities.tasks`).
            _ => None,
        }
    }

    fn start(&self) {
        self.tasks.start_janitor();
    }

    async fn handle(&self, ctx: Ctx, method: &str, params: Map<String, Value>) -> Result<Value, RpcError> {
        if !declared(ctx.client_capabilities()) {
            return Err(RpcError::missing_capability(required()));
        }
        match method {
            TASKS_GET => self.get(&ctx, &params).await,
            TASKS_UPDATE => self.update(&ctx, &params).await,
            TASKS_CANCEL => self.cancel(&ctx, &params).await,
            m => Err(RpcError::method_not_found(m)),
        }
    }

    fn tasks(&self) -> Option<&dyn TaskMaker> {
        Some(self)
    }

    async fn listen(
        &self,
        ctx: &Ctx,
        filter: &Map<String, Value>,
        sub: &Subscription,
    ) -> Result<Map<String, Value>, RpcError> {
        let Some(ids) = filter.get("taskIds") else {
            return Ok(Map::new());
        };
        if !declared(ctx.client_capabilities()) {
            return Err(RpcError::missing_capability(required()));
        }
        let ids = match ids {
            Value::Array(a) if a.iter().all(Value::is_string) => a,
            _ => {
                return Err(RpcError::invalid_params("notifications.taskIds must be an array of strings"));
            }
        };
        if ids.len() > MAX_LISTEN_TASK_IDS {
            return Err(RpcError::invalid_params(format!(
                "notifications.taskIds may name at most {MAX_LISTEN_TASK_IDS} tasks"
            )));
        }
        let delivers = !matches!(self.tasks.config().notifier, NotifierConfig::None);
        let mut kept: Vec<&str> = Vec::new();
        for id in ids.iter().filter_map(Value::as_str) {
            if !delivers || kept.contains(&id) {
                continue;
            }
            if let Ok(rec) = self.tasks.store().get(id, Owner::Is(ctx.owner())).await {
                self.tasks.listen_notifier().watch(id, sub, rec.version);
                kept.push(id);
            }
        }
        let mut ack = Map::new();
        ack.insert("taskIds".into(), json!(kept));
        Ok(ack)
    }

    async fn shutdown(&self) {
        self.tasks.shutdown().await;
    }
}

#[async_trait]
impl TaskMaker for TasksExtension {
    fn requested(&self, era: Era, caps: &ClientCapabilities, _params: &Map<String, Value>) -> bool {
        era == Era::Modern && declared(caps)
    }

    fn required_capabilities(&self, _era: Era) -> Value {
        required()
    }

    async fn create(&self, ctx: &Ctx, spec: TaskSpec) -> Result<Value, RpcError> {
        self.create_task(ctx, spec).await
    }

    fn resumable(&self, name: &str) -> Option<ResumableFn> {
        self.tasks.resumable_work(name)
    }
}

impl TasksExtension {
    async fn create_task(&self, ctx: &Ctx, spec: TaskSpec) -> Result<Value, RpcError> {
        let invalid = |why: &str| {
            tracing::warn!(reason = why, "tool returned invalid task attributes; no task created");
            RpcError::internal(format!("Invalid task attributes: {why}"))
        };
        let ttl_ms = match spec.ttl {
            None => Some(self.tasks.config().default_ttl.as_millis() as u64),
            Some(None) => None,
            Some(Some(d)) => Some(u64::try_from(d.as_millis()).map_err(|_| invalid("ttl is too large"))?),
        };
        let poll_ms = match spec.poll_interval {
            None => None,
            Some(d) if d.is_zero() => return Err(invalid("poll_interval must be positive")),
            Some(d) => Some(u64::try_from(d.as_millis()).map_err(|_| invalid("poll_interval is too large"))?.max(1)),
        };
        let mut rec = TaskRecord::new(new_task_id(), ctx.owner().map(String::from), self.tasks.now(), ttl_ms);
        let mut start = None;
        let mut hook = None;
        let work: Option<Work> = match spec.work {
            None => None,
            Some(TaskWork::Start(f)) => {
                start = Some(f);
                None
            }
            Some(TaskWork::Transactional(h)) => {
                hook = Some(h);
                None
            }
            Some(TaskWork::Spawn(w)) => Some(Box::new(move |t| w.run(t))),
            Some(TaskWork::Resumable { name, args }) => {
                let f = self
                    .tasks
                    .resumable_work(&name)
                    .ok_or_else(|| invalid(&format!("no resumable work is registered as {name:?}")))?;
                if limits::json_len(&args) > limits::MAX_RESUME_ARGS_BYTES {
                    return Err(invalid(&format!(
                        "the arguments of resumable work are limited to {} bytes",
                        limits::MAX_RESUME_ARGS_BYTES
                    )));
                }
                rec.tool = Some(name);
                rec.resume_args = Some(args.clone());
                Some(Box::new(move |t| f(t, args)))
            }
        };
        if work.is_some() {
            rec.lease = Some(self.tasks.new_lease());
        }
        rec.poll_interval_ms = poll_ms;
        rec.status_message = spec.status_message.map(limits::bound_status_message);
        // Only the declarations its input requests are judged by (not the whole,
        // client-sized `clientCapabilities`).
        rec.client_capabilities = limits::task_capabilities(ctx.client_capabilities());
        let caps = self.tasks.config().create_caps();
        let store = self.tasks.store();
        match &hook {
            None => store.create_capped(rec.clone(), caps).await,
            Some(hook) => store.create_with(rec.clone(), caps, hook.as_ref()).await,
        }
        .map_err(store_error)?;
        rec.version = 1;
        crate::metrics::task_created();
        self.tasks.after_write(&rec);
        tracing::debug!(task_id = %rec.task_id, "task created");
        if let Some(start) = start {
            let id = rec.task_id.clone();
            if std::panic::catch_unwind(AssertUnwindSafe(move || start(id))).is_err() {
                tracing::error!("a task's start function panicked; the task is marked failed");
                let _ = self
                    .tasks
                    .fail(&rec.task_id, RpcError::internal("Internal error: the task could not start"), None)
                    .await;
            }
        }
        if let Some(work) = work {
            self.tasks.launch(rec.task_id.clone(), rec.expires_at_ms(), work);
        }
        Ok(rec.create_result())
    }
}
