//! Task creation, once for both eras: from a tool's [`TaskSpec`] to a stored
//! record whose work has started. The era decides only what it asked for
//! ([`Requested`]: the owner, a requested TTL) and how the stored record is
//! answered on its wire; everything between — the TTL and its bounds, the
//! work resolved, the lease, what the record keeps of the client's input, the
//! caps (terminal tasks never stop a create: `terminal`), the store write (with
//! a transaction hook when the tool asked for one),
//! `start` (panics caught), the launch — is here.

use super::rpc_error::store_error;
use crate::ctx::Ctx;
use crate::ext::tasks::runtime::{self, Tasks, Work};
use crate::ext::tasks::store::{TaskRecord, limits, new_legacy_task_id, new_task_id};
use crate::protocol::RpcError;
use crate::protocol::tasks::TaskStatus;
use crate::task::{TaskSpec, TaskWork};
use std::panic::AssertUnwindSafe;

/// What the era asked of a new task, beside the tool's [`TaskSpec`].
#[derive(Debug, Clone, Default)]
pub(crate) struct Requested {
    /// Whose task it is: the key every owner-scoped read compares.
    pub owner: Option<String>,
    /// The lifetime the client asked for, in ms (2025-11-25: `params.task.ttl`);
    /// held to the configured default and to [`limits::MIN_TTL_MS`].
    pub ttl_ms: Option<u64>,
}

/// The refusal of a tool's invalid task attributes (the tool's fault, logged).
fn invalid(why: &str) -> RpcError {
    tracing::warn!(reason = why, "tool returned invalid task attributes; no task created");
    RpcError::internal(format!("Invalid task attributes: {why}"))
}

fn millis(d: std::time::Duration, what: &str) -> Result<u64, RpcError> {
    u64::try_from(d.as_millis()).map_err(|_| invalid(&format!("{what} is too large")))
}

/// A new id, marked with the era of this runtime's store.
fn new_id(tasks: &Tasks) -> String {
    if tasks.inner.legacy_ids { new_legacy_task_id() } else { new_task_id() }
}

/// The task's lifetime: what the client asked (at most the default), else
/// the tool's, else the default; never below [`limits::MIN_TTL_MS`]
/// (`None`: unlimited, which only a tool can choose).
fn ttl_ms(tasks: &Tasks, spec: &TaskSpec, asked: Option<u64>) -> Result<Option<u64>, RpcError> {
    let default = millis(tasks.config().default_ttl, "default_ttl")?;
    let ttl = match (asked, spec.ttl) {
        (Some(a), _) => Some(a.min(default)),
        (None, None) => Some(default),
        (None, Some(None)) => None,
        (None, Some(Some(d))) => Some(millis(d, "ttl")?),
    };
    Ok(ttl.map(|t| t.max(limits::MIN_TTL_MS)))
}

/// Stores the task a tool returned, starts its work, and returns the
/// stored record (version 1) for the era to answer with.
pub(crate) async fn create_task(
    tasks: &Tasks,
    ctx: &Ctx,
    spec: TaskSpec,
    requested: Requested,
) -> Result<TaskRecord, RpcError> {
    // Past the client's creation rate, nothing is stored or started.
    tasks.create_rates().admit(tasks.config().create_rate, ctx.client_key())?;
    let ttl_ms = ttl_ms(tasks, &spec, requested.ttl_ms)?;
    let poll_ms = match spec.poll_interval {
        None => None,
        Some(d) if d.is_zero() => return Err(invalid("poll_interval must be positive")),
        Some(d) => Some(millis(d, "poll_interval")?.max(1)),
    };
    let mut rec = TaskRecord::new(new_id(tasks), requested.owner, tasks.now(), ttl_ms);
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
            let f = tasks
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
        rec.lease = Some(runtime::new_lease(tasks));
    }
    rec.poll_interval_ms = poll_ms;
    rec.status_message = spec.status_message.map(limits::bound_status_message);
    let finished = spec.finished.is_some();
    if let Some(result) = spec.finished {
        // Stored as it ends: one write, no work to run and finish again.
        rec.result = Some(result.to_value());
        rec.transition(TaskStatus::Completed, rec.created_at_ms);
    }
    // Only the declarations its input requests are judged by (not the whole,
    // client-sized capabilities).
    rec.client_capabilities = limits::task_capabilities(ctx.client_capabilities());
    // The caps, and at the row cap its owner's oldest terminal task's place (see `terminal`). The
    // hook's rows (a job, an outbox entry) commit with the task or not at all.
    let rec = runtime::store_new(tasks, rec, hook.as_deref()).await.map_err(store_error)?;
    crate::metrics::task_created();
    if finished {
        crate::metrics::task_finished("completed");
    }
    tasks.after_write(&rec);
    if finished {
        runtime::ended(tasks, &rec).await;
    }
    tracing::debug!(task_id = %rec.task_id, "task created");
    if let Some(start) = start {
        let id = rec.task_id.clone();
        if std::panic::catch_unwind(AssertUnwindSafe(move || start(id))).is_err() {
            tracing::error!("a task's start function panicked; the task is marked failed");
            let _ =
                tasks.fail(&rec.task_id, RpcError::internal("Internal error: the task could not start"), None).await;
        }
    }
    if let Some(work) = work {
        runtime::launch(tasks, rec.task_id.clone(), rec.expires_at_ms(), work);
    }
    Ok(rec)
}
