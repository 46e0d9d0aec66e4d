//! `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel` on the legacy
//! wire, all owner-scoped (a foreign task is answered like a missing one;
//! whose a task is: [`owner`](super::owner)).

use super::owner::owner;
use super::{LegacyTasksExtension, record};
use crate::ctx::Ctx;
use crate::ext::tasks::runtime;
use crate::ext::tasks::store::Owner;
use crate::ext::tasks::store::legacy_store::DEFAULT_PAGE_SIZE;
use crate::ext::tasks::wire::store_error;
use crate::protocol::RpcError;
use crate::protocol::tasks::TaskStatus;
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

fn task_id(params: &Map<String, Value>) -> Result<&str, RpcError> {
    params.get("taskId").and_then(Value::as_str).ok_or_else(|| RpcError::invalid_params("Missing taskId"))
}

impl LegacyTasksExtension {
    pub(super) async fn get(&self, ctx: &Ctx, params: &Map<String, Value>) -> Result<Value, RpcError> {
        let owner = owner(ctx);
        let rec = self.tasks.store().get(task_id(params)?, Owner::Is(owner.as_deref())).await.map_err(store_error)?;
        Ok(record::task(&rec).into_value())
    }

    /// Blocks until the task is terminal, then answers what the call would have. While it
    /// waits, the worker's questions go to the client on this request's stream.
    pub(super) async fn result(&self, ctx: &Ctx, params: &Map<String, Value>) -> Result<Value, RpcError> {
        let id = task_id(params)?;
        let owner = owner(ctx);
        let mut asked = BTreeSet::new();
        loop {
            let seen = &asked;
            let wait = self.tasks.wait(id, Owner::Is(owner.as_deref()), |r| {
                r.is_terminal()
                    || (r.status == TaskStatus::InputRequired && r.input_requests.keys().any(|k| !seen.contains(k)))
            });
            let rec = tokio::select! {
                r = wait => r.map_err(store_error)?,
                _ = ctx.cancellation().cancelled() => return Err(RpcError::internal("Request cancelled")),
            };
            if rec.is_terminal() {
                return record::outcome(&rec);
            }
            self.relay_inputs(ctx, &rec, &mut asked).await?;
        }
    }

    pub(super) async fn list(&self, ctx: &Ctx, params: &Map<String, Value>) -> Result<Value, RpcError> {
        let cursor = match params.get("cursor") {
            None | Some(Value::Null) => None,
            Some(Value::String(c)) => Some(c.as_str()),
            Some(_) => return Err(RpcError::invalid_params("Invalid cursor")),
        };
        let owner = owner(ctx);
        let page = self.tasks.list(owner.as_deref(), cursor, DEFAULT_PAGE_SIZE).await.map_err(store_error)?;
        let mut r = json!({ "tasks": page.tasks.iter().map(|t| record::task(t).into_value()).collect::<Vec<_>>() });
        if let Some(next) = page.next_cursor {
            r["nextCursor"] = json!(next);
        }
        Ok(r)
    }

    /// Cancels a live task and answers it `cancelled`; a terminal one is `-32602`.
    ///
    /// The task stays `cancelled` — read by `tasks/get`, listed by
    /// `tasks/list`, answered by `tasks/result` — until its TTL, as the
    /// TypeScript SDK 1.x and `mcp-remote` expect when they read it right
    /// after cancelling (issue 34). It holds no live slot meanwhile: its
    /// principal's cap counts live tasks, and terminal ones are bounded
    /// apart (see `ext::tasks::runtime::terminal`).
    pub(super) async fn cancel(&self, ctx: &Ctx, params: &Map<String, Value>) -> Result<Value, RpcError> {
        let id = task_id(params)?;
        let key = owner(ctx);
        let owner = Owner::Is(key.as_deref());
        let before = self.tasks.store().get(id, owner).await.map_err(store_error)?;
        if before.is_terminal() {
            return Err(RpcError::invalid_params(format!(
                "Cannot cancel task: already in terminal status '{}'",
                record::status(&before).as_str()
            )));
        }
        let rec = self.tasks.store().cancel(id, owner, None).await.map_err(store_error)?;
        if rec.version != before.version {
            self.tasks.after_write(&rec);
            runtime::ended(&self.tasks, &rec).await;
        }
        Ok(record::task(&rec).into_value())
    }
}
