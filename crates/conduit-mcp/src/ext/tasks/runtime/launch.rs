//! Work this node runs for tasks: launching `spawn`ed work under supervision,
//! the leases that claim it, waking workers that wait for input, and the
//! backend a running task's `TaskContext` talks to.

use super::worker::Tasks;
use crate::ext::tasks::store::Lease;
use crate::protocol::RpcError;
use crate::protocol::mrtr::InputRequest;
use crate::protocol::tasks::TaskStatus;
use crate::protocol::tools::CallToolResult;
use crate::task::{ResumableFn, StoreError, TaskBackend, TaskContext, WorkFuture, WorkerError};
use async_trait::async_trait;
use futures_util::FutureExt;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// How often a waiting `input` re-reads the task even without a wake-up.
const INPUT_RECHECK: std::time::Duration = std::time::Duration::from_secs(1);

/// The first pause before the final write of a task is tried again.
const FINAL_WRITE_FIRST_RETRY: std::time::Duration = std::time::Duration::from_millis(50);
/// The longest pause between tries of a final write.
const FINAL_WRITE_MAX_RETRY: std::time::Duration = std::time::Duration::from_secs(2);

/// Work to run for one task.
pub(crate) type Work = Box<dyn FnOnce(TaskContext) -> WorkFuture + Send>;

/// The lease this node puts on work it starts now.
pub(crate) fn new_lease(tasks: &Tasks) -> Lease {
    Lease {
        node: tasks.inner.config.node_id.clone(),
        expires_at_ms: tasks.now() + tasks.inner.config.lease.as_millis() as u64,
    }
}

/// Renews this node's leases every third of the lease period (started once, at the first launch).
fn start_lease_renewal(tasks: &Tasks) {
    if tokio::runtime::Handle::try_current().is_err() {
        return;
    }
    let me = tasks.clone();
    tasks.inner.leases.call_once(move || {
        let every = me.inner.config.lease / 3;
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let (shutdown, tracker) = (me.inner.shutdown.clone(), me.inner.tracker.clone());
        tracker.spawn(async move {
            loop {
                tokio::select! {
                    _ = tick.tick() => {
                        // Another process took the id (this one lost its claim in a
                        // database restart): its leases are not this node's to renew.
                        if let Err(e @ StoreError::Refused(_)) = me.claim_node().await {
                            tracing::error!(error = %e, "this node lost its node id; not renewing leases");
                            continue;
                        }
                        let until = me.now() + me.inner.config.lease.as_millis() as u64;
                        // Only work still running here (or still recording its end).
                        let ids: Vec<String> = me
                            .inner
                            .running
                            .lock()
                            .map(|r| r.keys().map(|k| k.to_string()).collect())
                            .unwrap_or_default();
                        if ids.is_empty() {
                            continue;
                        }
                        if let Err(e) = me.inner.store.renew_leases_of(&me.inner.config.node_id, &ids, until).await {
                            tracing::warn!(error = %e, "could not renew this node's task leases");
                        }
                    }
                    _ = shutdown.cancelled() => break,
                }
            }
        });
    });
}

/// Starts resumable work `work` for task `id` (expiring at `expires_at_ms`) with `args`.
pub(crate) fn launch_resumable(tasks: &Tasks, id: String, expires_at_ms: Option<u64>, work: ResumableFn, args: Value) {
    launch(tasks, id, expires_at_ms, Box::new(move |ctx| work(ctx, args)));
}

/// Runs `work` for task `id` (expiring at `expires_at_ms`) under supervision.
pub(crate) fn launch(tasks: &Tasks, id: String, expires_at_ms: Option<u64>, work: Work) {
    start_lease_renewal(tasks);
    let id: Arc<str> = Arc::from(id);
    // A token of its own rather than a child of `shutdown` (children share the
    // parent's lock): `shutdown` cancels every token in `running` instead.
    let token = CancellationToken::new();
    if let Ok(mut r) = tasks.inner.running.lock() {
        r.insert(id.clone(), token.clone());
    }
    if tasks.inner.shutdown.is_cancelled() {
        // `shutdown` may have collected the running tokens before this one was in.
        token.cancel();
    }
    let backend = Arc::new(Runtime(tasks.clone()));
    let ctx = TaskContext::new(Some(id.clone()), backend, token);
    // One runtime task per work item: the work runs inside it, a panic is caught
    // here, and the bookkeeping after it is boxed so the parked task stays small.
    let me = tasks.clone();
    tasks.inner.tracker.spawn(async move {
        let outcome = AssertUnwindSafe(async move { work(ctx).await }).catch_unwind().await;
        Box::pin(work_ended(me, id, expires_at_ms, outcome)).await;
    });
}

/// Records the end of spawned work and forgets it. The final write is
/// retried with back-off while the store fails, until it lands, the task
/// expires, or the node shuts down: the work stays counted as running
/// meanwhile, so its lease is renewed and no recovery claims it.
async fn work_ended(
    tasks: Tasks,
    id: Arc<str>,
    expires_at_ms: Option<u64>,
    outcome: Result<Result<CallToolResult, RpcError>, Box<dyn std::any::Any + Send>>,
) {
    let end = match outcome {
        Ok(Ok(result)) => Ok(result),
        Ok(Err(error)) => Err((error, None)),
        Err(_panic) => {
            let msg = "the task's work panicked";
            tracing::error!("{msg}");
            Err((RpcError::internal("Internal error: the task's work failed"), Some(msg.to_owned())))
        }
    };
    let mut backoff = FINAL_WRITE_FIRST_RETRY;
    let mut failures = 0u32;
    loop {
        let done = match &end {
            Ok(result) => tasks.complete(&id, result.clone(), None).await,
            Err((error, message)) => tasks.fail(&id, error.clone(), message.clone()).await,
        };
        let e = match done {
            Ok(()) => {
                if failures > 0 {
                    tracing::info!(failures, "recorded the end of a task's work after store failures");
                }
                break;
            }
            Err(WorkerError::Terminal | WorkerError::NotFound) => {
                result_dropped(&tasks, &id, failures).await;
                break;
            }
            Err(e) => e,
        };
        failures += 1;
        let expired = expires_at_ms.is_some_and(|at| tasks.now() >= at);
        if expired || tasks.inner.shutdown.is_cancelled() {
            tracing::warn!(error = %e, failures, "gave up recording the end of a task's work");
            break;
        }
        if failures == 1 {
            tracing::warn!(error = %e, "could not record the end of a task's work; retrying");
        }
        tokio::select! {
            () = tokio::time::sleep(backoff) => {}
            () = tasks.inner.shutdown.cancelled() => {}
        }
        backoff = (backoff * 2).min(FINAL_WRITE_MAX_RETRY);
    }
    if let Ok(mut r) = tasks.inner.running.lock() {
        r.remove(&id);
    }
}

/// Says why the end of task `id`'s work was not recorded: cancelled by its
/// client (expected), or ended by someone else, which for running work
/// means this node lost its lease and another node recovered the task —
/// the work's result is lost, which an operator must hear.
async fn result_dropped(tasks: &Tasks, id: &str, failures: u32) {
    match tasks.status(id).await {
        Ok(rec) if rec.status == TaskStatus::Cancelled => {
            tracing::debug!("a task's work ended after the task was cancelled; its result is not kept");
        }
        Ok(rec) => tracing::warn!(
            status = ?rec.status,
            failures,
            "a task's work ended but its result was dropped: the task had already ended elsewhere \
             (this node lost its lease and another node recovered it)"
        ),
        Err(_) => tracing::warn!(
            failures,
            "a task's work ended but its result was dropped: the task is gone (expired or removed)"
        ),
    }
}

/// Asks `requests` on task `id` and waits until every one is answered.
async fn wait_for_inputs(
    tasks: &Tasks,
    id: &str,
    requests: BTreeMap<String, InputRequest>,
    cancel: &CancellationToken,
) -> Result<Map<String, Value>, WorkerError> {
    let keys: Vec<String> = requests.keys().cloned().collect();
    tasks.require_input(id, requests, None).await?;
    let notify = tasks.waker(id);
    loop {
        let notified = notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let rec = tasks.status(id).await?;
        if keys.iter().all(|k| rec.input_responses.contains_key(k)) {
            return Ok(keys
                .iter()
                .filter_map(|k| rec.input_responses.get(k).map(|v| (k.clone(), v.clone())))
                .collect());
        }
        if rec.is_terminal() {
            return Err(WorkerError::Terminal);
        }
        tokio::select! {
            _ = notified => {}
            // Answers written by another node arrive through the notifier; this is a backstop.
            _ = tokio::time::sleep(INPUT_RECHECK) => {}
            _ = cancel.cancelled() => return Err(WorkerError::Terminal),
        }
    }
}

/// A stored task's backend: the runtime of this node.
struct Runtime(Tasks);

#[async_trait]
impl TaskBackend for Runtime {
    async fn progress(&self, id: Option<&str>, message: String) -> Result<(), WorkerError> {
        self.0.progress(id.ok_or(WorkerError::NotFound)?, message).await
    }

    async fn inputs(
        &self,
        id: Option<&str>,
        requests: BTreeMap<String, InputRequest>,
        cancel: &CancellationToken,
    ) -> Result<Map<String, Value>, WorkerError> {
        wait_for_inputs(&self.0, id.ok_or(WorkerError::NotFound)?, requests, cancel).await
    }
}
