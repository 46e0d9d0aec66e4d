//! Legacy tasks on the 2025-11-25 wire (the seed's `ConduitMcp.Tasks`):
//! `capabilities.tasks` on legacy sessions, `params.task {ttl}` opting a
//! `tools/call` in, the nested `CreateTaskResult`, and `tasks/get`,
//! `tasks/result`, `tasks/list`, `tasks/cancel`, over a
//! [`LegacyTasks`] runtime (its own listable store).
//!
//! A `Tasks` handle installs it over its legacy twin
//! (`ServerBuilder::extension(tasks)`); `ServerBuilder::extension(legacy_tasks)`
//! installs it alone. The same tools then serve both eras: a `spawn`ed task
//! becomes a legacy task, a modern task, or runs inline, by what the client asked.

mod input;
mod methods;
mod owner;
mod record;
mod status;

use crate::ctx::Ctx;
use crate::ext::tasks::runtime::{LegacyTasks, start_janitor};
use crate::ext::tasks::wire::{Requested, create_task};
use crate::protocol::RpcError;
use crate::protocol::meta::ClientCapabilities;
use crate::protocol::methods::{TASKS_CANCEL, TASKS_GET, TASKS_LIST, TASKS_RESULT};
use crate::protocol::version::Era;
use crate::server::{Declaration, Extension, IntoExtension, TaskMaker};
use crate::task::{ResumableFn, TaskSpec};
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

/// Installs the 2025-11-25 tasks wire alone (a `Tasks` handle installs it
/// over its twin itself: install one or the other, not both).
impl IntoExtension for LegacyTasks {
    fn into_extensions(self) -> Vec<Arc<dyn Extension>> {
        vec![Arc::new(LegacyTasksExtension { tasks: self })]
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
        start_janitor(&self.tasks);
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
        // This era's client may ask for a lifetime (`params.task.ttl`); the rest is the common path.
        let ttl_ms = ctx.task_params().and_then(|t| t.get("ttl")).and_then(Value::as_u64);
        let requested = Requested { owner: owner::owner(ctx), ttl_ms };
        let rec = create_task(&self.tasks, ctx, spec, requested).await?;
        if let Some(session) = ctx.legacy_session() {
            status::follow(self.tasks.clone(), &rec, session);
        }
        Ok(record::create_result(&rec))
    }

    fn resumable(&self, name: &str) -> Option<ResumableFn> {
        self.tasks.resumable_work(name)
    }
}
