//! Work this node runs for tasks: launching `spawn`ed work under supervision,
//! the leases that claim it, waking workers that wait for input, and the
//! backend a running task's `TaskContext` talks to.

use super::store::StoreError;
use super::task::{Lease, TaskStatus};
use super::worker::Tasks;
use crate::protocol::RpcError;
use crate::protocol::mrtr::InputRequest;
use crate::protocol::tools::CallToolResult;
use crate::tool::{ResumableFn, TaskBackend, TaskContext, WorkFuture, WorkerError};
use async_trait::async_trait;
use futures_util::FutureExt;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// How often a waiting `input` re-reads the task even without a wake-up.
const INPUT_RECHECK: std::time::Duration = std::time::Duration::from_secs(1);

/// The first pause before the final write of a task is tried again.
const FINAL_WRITE_FIRST_RETRY: std::time::Duration = std::time::Duration::from_millis(50);
/// The longest pause between tries of a final write.
const FINAL_WRITE_MAX_RETRY: std::time::Duration = std::time::Duration::from_secs(2);

/// Work to run for one task.
pub(crate) type Work = Box<dyn FnOnce(TaskContext) -> WorkFuture + Send>;

impl Tasks {
    pub(super) fn waker(&self, id: &str) -> Arc<Notify> {
        let mut w = self.inner.wakers.lock().unwrap_or_else(|p| p.into_inner());
        w.entry(id.to_owned()).or_default().clone()
    }

    /// Wakes local workers waiting on task `id`.
    pub(super) fn wake(&self, id: &str) {
        let waker = self.inner.wakers.lock().ok().and_then(|w| w.get(id).cloned());
        if let Some(w) = waker {
            w.notify_waiters();
        }
    }

    /// The ids of the tasks something on this node waits on: work waiting for
    /// input, a legacy `tasks/result`. A cross-node notifier re-reads them
    /// after it reconnects, so a change it missed still wakes them.
    pub fn awaited(&self) -> Vec<String> {
        self.inner.wakers.lock().map(|w| w.keys().cloned().collect()).unwrap_or_default()
    }

    /// Whether anything on this node acts on a change of task `id`: a listen
    /// stream watching it, work or a legacy `tasks/result` waiting on it, or
    /// its work running here. A cross-node notifier need not read a change
    /// nobody here cares about.
    pub fn cares_about(&self, id: &str) -> bool {
        self.inner.listen.watchers(id) > 0
            || self.inner.wakers.lock().is_ok_and(|w| w.contains_key(id))
            || self.is_running(id)
    }

    /// Cancels local work of task `id`.
    pub(super) fn cancel_local(&self, id: &str) {
        let token = self.inner.running.lock().ok().and_then(|mut r| r.remove(id));
        if let Some(t) = token {
            t.cancel();
        }
    }

    /// Whether this node runs the work of task `id` right now.
    pub(crate) fn is_running(&self, id: &str) -> bool {
        self.inner.running.lock().is_ok_and(|r| r.contains_key(id))
    }

    /// The lease this node puts on work it starts now.
    pub(crate) fn new_lease(&self) -> Lease {
        Lease {
            node: self.inner.config.node_id.clone(),
            expires_at_ms: self.now() + self.inner.config.lease.as_millis() as u64,
        }
    }

    /// Renews this node's leases every third of the lease period (started once, at the first launch).
    fn start_lease_renewal(&self) {
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let me = self.clone();
        self.inner.leases.call_once(move || {
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
    pub(crate) fn launch_resumable(&self, id: String, expires_at_ms: Option<u64>, work: ResumableFn, args: Value) {
        self.launch(id, expires_at_ms, Box::new(move |ctx| work(ctx, args)));
    }

    /// Runs `work` for task `id` (expiring at `expires_at_ms`) under supervision.
    pub(crate) fn launch(&self, id: String, expires_at_ms: Option<u64>, work: Work) {
        self.start_lease_renewal();
        let id: Arc<str> = Arc::from(id);
        // A token of its own rather than a child of `shutdown` (children share the
        // parent's lock): `shutdown` cancels every token in `running` instead.
        let token = CancellationToken::new();
        if let Ok(mut r) = self.inner.running.lock() {
            r.insert(id.clone(), token.clone());
        }
        if self.inner.shutdown.is_cancelled() {
            // `shutdown` may have collected the running tokens before this one was in.
            token.cancel();
        }
        let backend = Arc::new(Runtime(self.clone()));
        let ctx = TaskContext::new(Some(id.clone()), backend, token);
        // One runtime task per work item: the work runs inside it, a panic is caught
        // here, and the bookkeeping after it is boxed so the parked task stays small.
        let me = self.clone();
        self.inner.tracker.spawn(async move {
            let outcome = AssertUnwindSafe(async move { work(ctx).await }).catch_unwind().await;
            Box::pin(me.work_ended(id, expires_at_ms, outcome)).await;
        });
    }

    /// Records the end of spawned work and forgets it. The final write is
    /// retried with back-off while the store fails, until it lands, the task
    /// expires, or the node shuts down: the work stays counted as running
    /// meanwhile, so its lease is renewed and no recovery claims it.
    async fn work_ended(
        self,
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
                Ok(result) => self.complete(&id, result.clone(), None).await,
                Err((error, message)) => self.fail(&id, error.clone(), message.clone()).await,
            };
            let e = match done {
                Ok(()) => {
                    if failures > 0 {
                        tracing::info!(failures, "recorded the end of a task's work after store failures");
                    }
                    break;
                }
                Err(WorkerError::Terminal | WorkerError::NotFound) => {
                    self.result_dropped(&id, failures).await;
                    break;
                }
                Err(e) => e,
            };
            failures += 1;
            let expired = expires_at_ms.is_some_and(|at| self.now() >= at);
            if expired || self.inner.shutdown.is_cancelled() {
                tracing::warn!(error = %e, failures, "gave up recording the end of a task's work");
                break;
            }
            if failures == 1 {
                tracing::warn!(error = %e, "could not record the end of a task's work; retrying");
            }
            tokio::select! {
                () = tokio::time::sleep(backoff) => {}
                () = self.inner.shutdown.cancelled() => {}
            }
            backoff = (backoff * 2).min(FINAL_WRITE_MAX_RETRY);
        }
        if let Ok(mut r) = self.inner.running.lock() {
            r.remove(&id);
        }
    }

    /// Says why the end of task `id`'s work was not recorded: cancelled by its
    /// client (expected), or ended by someone else, which for running work
    /// means this node lost its lease and another node recovered the task —
    /// the work's result is lost, which an operator must hear.
    async fn result_dropped(&self, id: &str, failures: u32) {
        match self.status(id).await {
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
        &self,
        id: &str,
        requests: BTreeMap<String, InputRequest>,
        cancel: &CancellationToken,
    ) -> Result<Map<String, Value>, WorkerError> {
        let keys: Vec<String> = requests.keys().cloned().collect();
        self.require_input(id, requests, None).await?;
        let notify = self.waker(id);
        loop {
            let notified = notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let rec = self.status(id).await?;
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
        self.0.wait_for_inputs(id.ok_or(WorkerError::NotFound)?, requests, cancel).await
    }
}
