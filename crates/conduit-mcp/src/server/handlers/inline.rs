//! A task's work run inside its `tools/call`, when the call does not become a
//! task (when: `task_plan.rs`'s table). Its progress becomes
//! `notifications/progress` (when the request carried a token); the call's
//! cancellation cancels it; it cannot ask the client for input.

use crate::ctx::Ctx;
use crate::protocol::jsonrpc::RpcError;
use crate::protocol::mrtr::InputRequest;
use crate::protocol::tools::CallToolResult;
use crate::server::Server;
use crate::task::{TaskBackend, TaskContext, TaskWork, WorkFuture, WorkerError};
use crate::tool::registry::Registered;
use async_trait::async_trait;
use futures_util::FutureExt;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio_util::sync::CancellationToken;

/// Runs `work` (a spawned future, or resumable work by its registered name) in the call.
pub(super) async fn run_inline(
    server: &Server,
    ctx: &Ctx,
    tool: &Registered,
    work: Option<TaskWork>,
) -> Result<CallToolResult, RpcError> {
    let work = match work {
        Some(TaskWork::Spawn(w)) => Box::new(move |t| w.run(t)) as Box<dyn FnOnce(TaskContext) -> WorkFuture + Send>,
        Some(TaskWork::Resumable { name, args }) => {
            let Some(f) = server.task_maker(ctx.era()).and_then(|m| m.resumable(&name)) else {
                tracing::warn!(tool = %tool.info.name, "no resumable work is registered under the name the tool gave");
                return Err(RpcError::internal(format!(
                    "Invalid task attributes: no resumable work is registered as {name:?}"
                )));
            };
            Box::new(move |t| f(t, args))
        }
        _ => {
            tracing::warn!(tool = %tool.info.name, "a tool returned work the server cannot run inline");
            return Err(RpcError::internal("Tool returned a task the server cannot run inline"));
        }
    };
    let cancel = ctx.cancellation().clone();
    let backend = Arc::new(Inline { ctx: ctx.clone(), steps: AtomicU64::new(0) });
    let task = TaskContext::new(None, backend, cancel.clone());
    let run = AssertUnwindSafe(async move { work(task).await }).catch_unwind();
    tokio::select! {
        r = run => match r {
            Ok(r) => r,
            Err(_panic) => {
                tracing::error!("a tool's inline work panicked");
                Err(RpcError::internal("Internal error: the tool's work failed"))
            }
        },
        _ = cancel.cancelled() => Err(RpcError::internal("Request cancelled")),
    }
}

/// The inline call as a task's backend.
struct Inline {
    ctx: Ctx,
    steps: AtomicU64,
}

#[async_trait]
impl TaskBackend for Inline {
    async fn progress(&self, _id: Option<&str>, message: String) -> Result<(), WorkerError> {
        let step = self.steps.fetch_add(1, Ordering::Relaxed) + 1;
        self.ctx.progress(step as f64, None, Some(&message));
        Ok(())
    }

    async fn inputs(
        &self,
        _id: Option<&str>,
        _requests: BTreeMap<String, InputRequest>,
        _cancel: &CancellationToken,
    ) -> Result<Map<String, Value>, WorkerError> {
        Err(WorkerError::InputUnavailable)
    }
}
