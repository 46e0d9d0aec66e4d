//! The extension itself: `tasks/get`, `tasks/update`, `tasks/cancel`, task
//! creation for the server's task decision, and the `taskIds` listen filter.
//! Its methods follow the brief's check order after dispatch: declared on this
//! request (`-32021`), then params (`-32602`), then the owner-scoped lookup.

use super::answers::answer;
use super::creation::{Requested, create_task};
use super::rpc_error::store_error;
use crate::ctx::Ctx;
use crate::ext::tasks::runtime::{self, NotifierConfig, Tasks, start_janitor};
use crate::ext::tasks::store::Owner;
use crate::protocol::RpcError;
use crate::protocol::meta::ClientCapabilities;
use crate::protocol::methods::{TASKS_CANCEL, TASKS_GET, TASKS_UPDATE};
use crate::protocol::tasks::{TASKS_EXTENSION_ID, TaskStatus};
use crate::protocol::version::Era;
use crate::server::{Declaration, Extension, IntoExtension, TaskMaker};
use crate::subscriptions::Subscription;
use crate::task::{ResumableFn, TaskSpec};
use async_trait::async_trait;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// Most task ids one listen request may name.
pub const MAX_LISTEN_TASK_IDS: usize = 1000;

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
        // Answers that were not applied are not an error on this wire: the ack is the same.
        answer(&self.tasks, id, Owner::Is(ctx.owner()), responses).await?;
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
                runtime::ended(&self.tasks, &rec).await;
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
        start_janitor(&self.tasks);
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
        let requested = Requested { owner: ctx.owner().map(String::from), ttl_ms: None };
        Ok(create_task(&self.tasks, ctx, spec, requested).await?.create_result())
    }

    fn resumable(&self, name: &str) -> Option<ResumableFn> {
        self.tasks.resumable_work(name)
    }
}

/// Installs what the handle serves when its configuration enables it, and
/// nothing otherwise: the Tasks extension (`2026-07-28`), and the
/// `2025-11-25` tasks wire over its legacy twin (the paired one, or one made
/// now in memory).
impl IntoExtension for Tasks {
    fn into_extensions(self) -> Vec<Arc<dyn Extension>> {
        if !self.config().enabled {
            return Vec::new();
        }
        let twin = self.legacy_twin();
        let mut installed = vec![Arc::new(TasksExtension { tasks: self }) as Arc<dyn Extension>];
        installed.extend(twin.into_iter().flat_map(IntoExtension::into_extensions));
        installed
    }
}
