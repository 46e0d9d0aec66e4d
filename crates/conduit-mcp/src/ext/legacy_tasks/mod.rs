//! Legacy tasks on the 2025-11-25 wire (the seed's `ConduitMcp.Tasks`):
//! `capabilities.tasks` on legacy sessions, `params.task {ttl}` opting a
//! `tools/call` in, the nested `CreateTaskResult`, and `tasks/get`,
//! `tasks/result`, `tasks/list`, `tasks/cancel`, over a
//! [`LegacyTasks`] runtime (its own listable store).
//!
//! Install it with `ServerBuilder::extension(legacy_tasks)`; the same tools
//! then serve both eras: a `spawn`ed task becomes a legacy task, a modern
//! task, or runs inline, by what the client asked.

mod input;
mod methods;
mod status;
mod wire;

use crate::Ctx;
use crate::ext::tasks::legacy::LegacyTasks;
use crate::ext::tasks::{StoreError, TaskRecord, new_task_id};
use crate::protocol::RpcError;
use crate::protocol::meta::ClientCapabilities;
use crate::protocol::methods::{TASKS_CANCEL, TASKS_GET, TASKS_LIST, TASKS_RESULT};
use crate::protocol::version::Era;
use crate::server::{Declaration, Extension, IntoExtension, TaskMaker};
use crate::tool::{ResumableFn, TaskContext, TaskSpec, TaskWork, WorkFuture};
use async_trait::async_trait;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The extension id this installs under (it has no capability key of its own on the wire).
pub const LEGACY_TASKS_ID: &str = "conduit-mcp/legacy-tasks";

const METHODS: &[&str] = &[TASKS_GET, TASKS_RESULT, TASKS_LIST, TASKS_CANCEL];

/// The legacy tasks wire over a [`LegacyTasks`] runtime.
pub(crate) struct LegacyTasksExtension {
    pub(crate) tasks: LegacyTasks,
}

impl IntoExtension for LegacyTasks {
    fn into_extension(self) -> Option<Arc<dyn Extension>> {
        Some(Arc::new(LegacyTasksExtension { tasks: self }))
    }
}

pub(crate) fn store_error(e: StoreError) -> RpcError {
    match e {
        StoreError::NotFound => RpcError::invalid_params("Failed to retrieve task: Task not found"),
        StoreError::InvalidCursor => RpcError::invalid_params("Invalid cursor"),
        StoreError::TaskLimitReached => RpcError::internal("Task limit reached"),
        e @ (StoreError::Hook { .. } | StoreError::Unsupported(_)) => crate::ext::tasks::hook_refusal(&e),
        e => {
            if let Some(suppressed) = crate::log_limit::admit("legacy task store failed") {
                tracing::error!(error = %e, suppressed, "legacy task store failed");
            }
            RpcError::internal("Task store unavailable")
        }
    }
}

#[async_trait]
impl Extension for LegacyTasksExtension {
    fn id(&self) -> &'static str {
        LEGACY_TASKS_ID
    }

    fn declare(&self, era: Era) -> Option<Declaration> {
        match era {
            Era::Legacy => Some(
                Declaration::new()
                    .capability("tasks", json!({ "list": {}, "cancel": {}, "requests": { "tools": { "call": {} } } }))
                    .methods(METHODS),
            ),
            _ => None,
        }
    }

    fn start(&self) {
        self.tasks.start_janitor();
    }

    async fn handle(&self, ctx: Ctx, method: &str, params: Map<String, Value>) -> Result<Value, RpcError> {
        match method {
            TASKS_GET => self.get(&ctx, &params).await,
            TASKS_RESULT => self.result(&ctx, &params).await,
            TASKS_LIST => self.list(&ctx, &params).await,
            TASKS_CANCEL => self.cancel(&ctx, &params).await,
            m => Err(RpcError::method_not_found(m)),
        }
    }

    fn tasks(&self) -> Option<&dyn TaskMaker> {
        Some(self)
    }

    async fn shutdown(&self) {
        self.tasks.shutdown().await;
    }
}

#[async_trait]
impl TaskMaker for LegacyTasksExtension {
    fn requested(&self, era: Era, _caps: &ClientCapabilities, params: &Map<String, Value>) -> bool {
        era == Era::Legacy && params.get("task").is_some_and(Value::is_object)
    }

    fn required_capabilities(&self, _era: Era) -> Value {
        json!({ "tasks": {} })
    }

    async fn create(&self, ctx: &Ctx, spec: TaskSpec) -> Result<Value, RpcError> {
        let invalid = |why: &str| RpcError::internal(format!("Invalid task attributes: {why}"));
        let asked = ctx.task_params().and_then(|t| t.get("ttl")).and_then(Value::as_u64);
        let default = self.tasks.config().default_ttl.as_millis() as u64;
        let ttl_ms = match (asked, spec.ttl) {
            (Some(a), _) => Some(a.min(default)),
            (None, None) => Some(default),
            (None, Some(None)) => None,
            (None, Some(Some(d))) => Some(u64::try_from(d.as_millis()).map_err(|_| invalid("ttl is too large"))?),
        };
        let mut rec = TaskRecord::new(new_task_id(), ctx.owner().map(String::from), self.tasks.now(), ttl_ms);
        rec.poll_interval_ms = spec.poll_interval.map(|d| (d.as_millis() as u64).max(1));
        rec.status_message = spec.status_message;
        rec.client_capabilities = ctx.client_capabilities().clone();
        let mut start = None;
        let mut hook = None;
        let mut work: Option<Box<dyn FnOnce(TaskContext) -> WorkFuture + Send>> = None;
        match spec.work {
            None => {}
            Some(TaskWork::Start(f)) => start = Some(f),
            Some(TaskWork::Transactional(h)) => hook = Some(h),
            Some(TaskWork::Spawn(w)) => work = Some(Box::new(move |t| w.run(t))),
            Some(TaskWork::Resumable { name, args }) => {
                let f = self
                    .tasks
                    .resumable_work(&name)
                    .ok_or_else(|| invalid(&format!("no resumable work is registered as {name:?}")))?;
                rec.tool = Some(name);
                rec.resume_args = Some(args.clone());
                work = Some(Box::new(move |t| f(t, args)));
            }
        }
        if work.is_some() {
            rec.lease = Some(self.tasks.new_lease());
        }
        let rec = match hook {
            None => self.tasks.create(rec).await,
            Some(hook) => self.tasks.create_with(rec, hook.as_ref()).await,
        }
        .map_err(store_error)?;
        tracing::debug!(task_id = %rec.task_id, "legacy task created");
        if let Some(start) = start {
            start(rec.task_id.clone());
        }
        if let Some(session) = ctx.legacy_session() {
            status::follow(self.tasks.clone(), &rec, session);
        }
        if let Some(work) = work {
            self.tasks.launch(rec.task_id.clone(), rec.expires_at_ms(), work);
        }
        Ok(wire::create_result(&rec))
    }

    fn resumable(&self, name: &str) -> Option<ResumableFn> {
        self.tasks.resumable_work(name)
    }
}
