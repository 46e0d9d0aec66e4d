//! The worker side: a cloneable `Tasks` handle that drives tasks by id, and
//! `spawn` for work the server runs itself.

use super::config::{JanitorConfig, NotifierConfig, TasksConfig};
use super::memory::{IdBuild, MemoryStore};
use super::notifier::ListenNotifier;
use super::store::{Owner, StatusFields, StoreError, TaskStore};
use super::task::{TaskRecord, TaskStatus};
use crate::clock::{Clock, SystemClock};
use crate::protocol::RpcError;
use crate::protocol::mrtr::{InputKind, InputRequest};
use crate::protocol::tools::CallToolResult;
use crate::tool::TaskSpec;
use futures_util::future::BoxFuture;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, Once};
use tokio::sync::Notify;
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};
use tokio_util::task::TaskTracker;

/// Why a worker operation failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum WorkerError {
    /// No such task (or it expired).
    #[error("task not found")]
    NotFound,
    /// The task is terminal; nothing changes it any more.
    #[error("task is terminal")]
    Terminal,
    /// These input keys were used before on this task (keys are single-use).
    #[error("duplicate input keys: {0:?}")]
    DuplicateKeys(Vec<String>),
    /// Empty, or not built with `conduit_mcp::mrtr`.
    #[error("invalid input requests")]
    InvalidInputRequests,
    /// The creating request did not declare the capability these requests need.
    #[error("the client did not declare the capability {0}")]
    UndeclaredCapability(Value),
    /// The store failed.
    #[error(transparent)]
    Store(StoreError),
}

impl From<StoreError> for WorkerError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound => Self::NotFound,
            StoreError::Terminal => Self::Terminal,
            e => Self::Store(e),
        }
    }
}

/// Work run by the server for a task (see [`TaskSpecExt::spawn`]).
pub(crate) type SpawnFn = Box<dyn FnOnce(TaskContext) -> BoxFuture<'static, Result<CallToolResult, RpcError>> + Send>;

/// Work registered under a name with [`Tasks::resumable`], so any node can
/// start it again from its arguments.
pub(crate) type ResumableFn =
    Arc<dyn Fn(TaskContext, Value) -> BoxFuture<'static, Result<CallToolResult, RpcError>> + Send + Sync>;

/// A request to run registered resumable work (see [`TaskSpecExt::spawn_resumable`]).
pub(crate) struct ResumableSpawn {
    pub(crate) name: String,
    pub(crate) args: Value,
}

/// Adds `spawn` to [`TaskSpec`].
pub trait TaskSpecExt {
    /// Runs `work` on the server's runtime as the task's work, supervised and
    /// shut down with the server: `Ok(result)` → `completed`, `Err(error)` →
    /// `failed`, a panic → `failed` with `-32603`.
    fn spawn<F, Fut>(self, work: F) -> TaskSpec
    where
        F: FnOnce(TaskContext) -> Fut + Send + 'static,
        Fut: Future<Output = Result<CallToolResult, RpcError>> + Send + 'static;

    /// Runs the work registered as `name` with [`Tasks::resumable`], with
    /// `args`. If the node running it dies, a live node starts it again from
    /// the start with the same arguments: the work runs at least once, so make
    /// it idempotent.
    fn spawn_resumable(self, name: &str, args: Value) -> TaskSpec;
}

impl TaskSpecExt for TaskSpec {
    fn spawn_resumable(mut self, name: &str, args: Value) -> TaskSpec {
        self.spawn = Some(Box::new(ResumableSpawn { name: name.to_owned(), args }));
        self
    }

    fn spawn<F, Fut>(mut self, work: F) -> TaskSpec
    where
        F: FnOnce(TaskContext) -> Fut + Send + 'static,
        Fut: Future<Output = Result<CallToolResult, RpcError>> + Send + 'static,
    {
        let f: SpawnFn = Box::new(move |ctx| Box::pin(work(ctx)));
        self.spawn = Some(Box::new(f));
        self
    }
}

/// A running task, as its `spawn`ed work sees it.
#[derive(Clone)]
pub struct TaskContext {
    id: Arc<str>,
    tasks: Tasks,
    cancel: CancellationToken,
}

impl std::fmt::Debug for TaskContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskContext").finish_non_exhaustive()
    }
}

impl TaskContext {
    /// The task id (a capability: keep it out of logs).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The worker handle.
    pub fn tasks(&self) -> &Tasks {
        &self.tasks
    }

    /// Updates the status message.
    pub async fn progress(&self, message: impl Into<String>) -> Result<(), WorkerError> {
        self.tasks.progress(&self.id, message).await
    }

    /// Resolves once `tasks/cancel` ran (or the server shuts down).
    pub fn cancelled(&self) -> WaitForCancellationFuture<'_> {
        self.cancel.cancelled()
    }

    /// Whether the task was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Asks the client a question mid-flight and waits for the answer.
    ///
    /// The task moves to `input_required` until the client answers `key`
    /// with `tasks/update`; then it is `working` again and the answer returned.
    pub async fn input(&self, key: &str, request: InputRequest) -> Result<Value, WorkerError> {
        let mut map = BTreeMap::new();
        map.insert(key.to_owned(), request);
        let mut answers = self.inputs(map).await?;
        answers.remove(key).ok_or(WorkerError::Terminal)
    }

    /// Asks several questions at once (all pending together) and waits until
    /// every one is answered; returns the answers by key.
    pub async fn inputs(&self, requests: BTreeMap<String, InputRequest>) -> Result<Map<String, Value>, WorkerError> {
        let keys: Vec<String> = requests.keys().cloned().collect();
        self.tasks.require_input(&self.id, requests, None).await?;
        let notify = self.tasks.waker(&self.id);
        loop {
            let notified = notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let rec = self.tasks.status(&self.id).await?;
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
                _ = self.cancel.cancelled() => return Err(WorkerError::Terminal),
            }
        }
    }
}

/// How often a waiting `input` re-reads the task even without a wake-up.
const INPUT_RECHECK: std::time::Duration = std::time::Duration::from_secs(1);

/// Drives tasks by id from workers. Not owner-scoped: the id is the capability.
///
/// Cheap to clone. Create one with [`Tasks::new`], install it in the server
/// with [`Tasks::extension`], and hand clones to your workers.
#[derive(Clone)]
pub struct Tasks {
    pub(crate) inner: Arc<TasksInner>,
}

pub(crate) struct TasksInner {
    pub(crate) config: TasksConfig,
    pub(crate) store: Arc<dyn TaskStore>,
    pub(crate) listen: ListenNotifier,
    pub(crate) clock: Arc<dyn Clock>,
    wakers: Mutex<HashMap<String, Arc<Notify>, IdBuild>>,
    running: Mutex<HashMap<Arc<str>, CancellationToken, IdBuild>>,
    pub(crate) shutdown: CancellationToken,
    tracker: TaskTracker,
    janitor: Once,
    leases: Once,
    resumable: std::sync::RwLock<HashMap<String, ResumableFn>>,
    /// When this handle was made: tasks leased to this node id before then
    /// belong to an earlier process with the same id.
    pub(crate) started_at_ms: u64,
}

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tasks").field("store", &self.inner.store.name()).finish_non_exhaustive()
    }
}

fn status_error(e: StoreError) -> WorkerError {
    WorkerError::from(e)
}

impl Tasks {
    /// A handle for this configuration, on the system clock.
    pub fn new(config: TasksConfig) -> Result<Self, super::config::ConfigError> {
        Self::with_clock(config, Arc::new(SystemClock))
    }

    /// A handle on an injected clock (the default memory store uses it too).
    pub fn with_clock(config: TasksConfig, clock: Arc<dyn Clock>) -> Result<Self, super::config::ConfigError> {
        config.validate()?;
        let store = config.store.clone().unwrap_or_else(|| Arc::new(MemoryStore::with_clock(clock.clone())));
        let started_at_ms = clock.now_ms();
        Ok(Self {
            inner: Arc::new(TasksInner {
                config,
                store,
                listen: ListenNotifier::new(),
                clock,
                wakers: Mutex::default(),
                running: Mutex::default(),
                shutdown: CancellationToken::new(),
                tracker: TaskTracker::new(),
                janitor: Once::new(),
                leases: Once::new(),
                resumable: Default::default(),
                started_at_ms,
            }),
        })
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn TaskStore> {
        &self.inner.store
    }

    /// The built-in listen delivery.
    pub fn listen_notifier(&self) -> &ListenNotifier {
        &self.inner.listen
    }

    /// The configuration.
    pub fn config(&self) -> &TasksConfig {
        &self.inner.config
    }

    pub(crate) fn now(&self) -> u64 {
        self.inner.clock.now_ms()
    }

    pub(crate) fn waker(&self, id: &str) -> Arc<Notify> {
        let mut w = self.inner.wakers.lock().unwrap_or_else(|p| p.into_inner());
        w.entry(id.to_owned()).or_default().clone()
    }

    /// Starts the janitor (once) if the configuration has one and a runtime is running.
    pub fn start_janitor(&self) {
        if let JanitorConfig::Every { interval, .. } = self.inner.config.janitor {
            if tokio::runtime::Handle::try_current().is_err() {
                return;
            }
            let me = self.clone();
            self.inner.janitor.call_once(move || {
                let shutdown = me.inner.shutdown.clone();
                let tracker = me.inner.tracker.clone();
                // The schedules start now, not when the task is first polled.
                let start = tokio::time::Instant::now();
                let mut tick = tokio::time::interval_at(start + interval, interval);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                // Recovery checks are cheap (an indexed query): run them often, so a
                // lapsed lease is noticed within a tenth of the period.
                let every = me.inner.config.lease / 10;
                let mut check = tokio::time::interval_at(start, every);
                check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                tracker.spawn(async move {
                    if let Err(e) = super::janitor::recover_own(&me).await {
                        tracing::warn!(error = %e, "could not recover this node's earlier tasks");
                    }
                    loop {
                        tokio::select! {
                            _ = tick.tick() => { let _ = super::janitor::sweep(&me).await; }
                            _ = check.tick() => {
                                if let Err(e) = super::janitor::recover(&me).await {
                                    tracing::warn!(error = %e, "lease recovery failed");
                                }
                            }
                            _ = shutdown.cancelled() => break,
                        }
                    }
                });
            });
        }
    }

    /// Called after every successful store write: notifier (panics swallowed), local wake-ups, cancellation.
    pub(crate) fn after_write(&self, record: &TaskRecord) {
        let listen = &self.inner.listen;
        let call = std::panic::catch_unwind(AssertUnwindSafe(|| match &self.inner.config.notifier {
            NotifierConfig::Listen => listen.task_changed(record),
            NotifierConfig::None => {}
            NotifierConfig::Custom(n) => n.task_changed(record, listen),
        }));
        if call.is_err() {
            tracing::error!("task notifier panicked; the change itself was stored");
        }
        self.local_change(record);
    }

    /// Local consequences of a change, wherever it was written: wake waiting
    /// workers, and stop local work of a cancelled task.
    pub fn local_change(&self, record: &TaskRecord) {
        self.wake(&record.task_id);
        if record.is_terminal() {
            if let Ok(mut w) = self.inner.wakers.lock() {
                w.remove(&record.task_id);
            }
            if record.status == TaskStatus::Cancelled {
                self.cancel_local(&record.task_id);
            }
        }
    }

    /// The task's current state (not owner-scoped).
    pub async fn status(&self, id: &str) -> Result<TaskRecord, WorkerError> {
        Ok(self.inner.store.get(id, Owner::Any).await?)
    }

    /// Whether `tasks/cancel` ran; `false` for an unknown id.
    pub async fn cancelled(&self, id: &str) -> bool {
        self.status(id).await.is_ok_and(|t| t.status == TaskStatus::Cancelled)
    }

    /// Updates `statusMessage` and `lastUpdatedAt` without changing the status.
    pub async fn progress(&self, id: &str, message: impl Into<String>) -> Result<(), WorkerError> {
        let message = message.into();
        let now = self.now();
        let rec = self
            .inner
            .store
            .update(id, Owner::Any, &|r: &TaskRecord| {
                if r.is_terminal() {
                    return Err(StoreError::Terminal);
                }
                let mut n = r.clone();
                n.status_message = Some(message.clone());
                n.touch(now);
                Ok(n)
            })
            .await
            .map_err(status_error)?;
        self.after_write(&rec);
        Ok(())
    }

    async fn finish(&self, id: &str, status: TaskStatus, fields: StatusFields) -> Result<(), WorkerError> {
        let rec = self.inner.store.put_status(id, status, fields).await.map_err(status_error)?;
        self.after_write(&rec);
        Ok(())
    }

    /// `completed` with `result` (what the tool would have returned; `isError: true` included).
    pub async fn complete(
        &self,
        id: &str,
        result: CallToolResult,
        status_message: Option<String>,
    ) -> Result<(), WorkerError> {
        let fields = StatusFields { status_message, result: Some(result.to_value()), error: None };
        self.finish(id, TaskStatus::Completed, fields).await
    }

    /// `failed` with a JSON-RPC error.
    pub async fn fail(&self, id: &str, error: RpcError, status_message: Option<String>) -> Result<(), WorkerError> {
        let fields = StatusFields { status_message, result: None, error: Some(error.into()) };
        self.finish(id, TaskStatus::Failed, fields).await
    }

    /// `input_required` with these requests (keys single-use over the task's life).
    pub async fn require_input(
        &self,
        id: &str,
        requests: BTreeMap<String, InputRequest>,
        status_message: Option<String>,
    ) -> Result<(), WorkerError> {
        if requests.is_empty() || requests.values().any(|r| r.kind().is_none()) {
            return Err(WorkerError::InvalidInputRequests);
        }
        let now = self.now();
        let refusal: Mutex<Option<WorkerError>> = Mutex::new(None);
        let refuse = |e: WorkerError| {
            if let Ok(mut r) = refusal.lock() {
                *r = Some(e);
            }
            Err(StoreError::Refused("input requests refused".into()))
        };
        let result = self
            .inner
            .store
            .update(id, Owner::Any, &|r: &TaskRecord| {
                if r.is_terminal() {
                    return Err(StoreError::Terminal);
                }
                let dup: Vec<String> = requests.keys().filter(|k| r.issued_keys.contains(*k)).cloned().collect();
                if !dup.is_empty() {
                    return refuse(WorkerError::DuplicateKeys(dup));
                }
                let caps = &r.client_capabilities;
                for req in requests.values() {
                    let kind = req.kind().unwrap_or(InputKind::ElicitForm);
                    let ok = match kind {
                        InputKind::ElicitForm => caps.elicitation_form(),
                        InputKind::ElicitUrl => caps.elicitation_url(),
                        InputKind::Sample => caps.sampling(),
                        InputKind::SampleWithTools => caps.sampling_tools(),
                        InputKind::ListRoots => caps.roots(),
                    };
                    if !ok {
                        return refuse(WorkerError::UndeclaredCapability(crate::mrtr::required_capability(kind)));
                    }
                }
                let mut n = r.clone();
                for (k, v) in &requests {
                    n.issued_keys.insert(k.clone());
                    n.input_requests.insert(k.clone(), v.clone());
                }
                if status_message.is_some() {
                    n.status_message = status_message.clone();
                }
                n.transition(TaskStatus::InputRequired, now);
                Ok(n)
            })
            .await;
        match result {
            Ok(rec) => {
                self.after_write(&rec);
                Ok(())
            }
            Err(StoreError::Refused(_)) => {
                Err(refusal.lock().ok().and_then(|mut r| r.take()).unwrap_or(WorkerError::InvalidInputRequests))
            }
            Err(e) => Err(status_error(e)),
        }
    }

    /// Runs `work` for task `id` under supervision.
    /// Registers resumable work under `name` (see [`TaskSpecExt::spawn_resumable`]).
    /// Register the same names on every node.
    pub fn resumable<F, Fut>(&self, name: &str, work: F)
    where
        F: Fn(TaskContext, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CallToolResult, RpcError>> + Send + 'static,
    {
        let f: ResumableFn = Arc::new(move |ctx, args| Box::pin(work(ctx, args)));
        if let Ok(mut r) = self.inner.resumable.write() {
            r.insert(name.to_owned(), f);
        }
    }

    pub(crate) fn resumable_work(&self, name: &str) -> Option<ResumableFn> {
        self.inner.resumable.read().ok().and_then(|r| r.get(name).cloned())
    }

    /// This node's id.
    pub fn node_id(&self) -> &str {
        &self.inner.config.node_id
    }

    /// The lease this node puts on work it starts now.
    pub(crate) fn new_lease(&self) -> super::task::Lease {
        super::task::Lease {
            node: self.inner.config.node_id.clone(),
            expires_at_ms: self.now() + self.inner.config.lease.as_millis() as u64,
        }
    }

    /// Whether this node runs the work of task `id` right now.
    pub(crate) fn is_running(&self, id: &str) -> bool {
        self.inner.running.lock().is_ok_and(|r| r.contains_key(id))
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
                            let until = me.now() + me.inner.config.lease.as_millis() as u64;
                            if let Err(e) = me.inner.store.renew_leases(&me.inner.config.node_id, until).await {
                                tracing::warn!(error = %e, "could not renew this node's task leases");
                            }
                        }
                        _ = shutdown.cancelled() => break,
                    }
                }
            });
        });
    }

    /// Starts resumable work `work` for task `id` with `args`.
    pub(crate) fn launch_resumable(&self, id: String, work: ResumableFn, args: Value) {
        self.launch(id, Box::new(move |ctx| work(ctx, args)));
    }

    pub(crate) fn launch(&self, id: String, work: SpawnFn) {
        use futures_util::FutureExt;
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
        let ctx = TaskContext { id, tasks: self.clone(), cancel: token };
        // One runtime task per work item: the work runs inside it, a panic is caught
        // here, and the bookkeeping after it is boxed so the parked task stays small.
        self.inner.tracker.spawn(async move {
            let (me, id) = (ctx.tasks.clone(), ctx.id.clone());
            let outcome = AssertUnwindSafe(async move { work(ctx).await }).catch_unwind().await;
            Box::pin(me.work_ended(id, outcome)).await;
        });
    }

    /// Records the end of spawned work and forgets it.
    async fn work_ended(
        self,
        id: Arc<str>,
        outcome: Result<Result<CallToolResult, RpcError>, Box<dyn std::any::Any + Send>>,
    ) {
        let done = match outcome {
            Ok(Ok(result)) => self.complete(&id, result, None).await,
            Ok(Err(error)) => self.fail(&id, error, None).await,
            Err(_panic) => {
                let msg = "the task's work panicked";
                tracing::error!("{msg}");
                self.fail(&id, RpcError::internal("Internal error: the task's work failed"), Some(msg.into())).await
            }
        };
        if let Err(e) = done
            && !matches!(e, WorkerError::Terminal | WorkerError::NotFound)
        {
            tracing::warn!(error = %e, "could not record the end of a task's work");
        }
        if let Ok(mut r) = self.inner.running.lock() {
            r.remove(&id);
        }
    }

    /// Wakes local workers waiting on task `id` (a cross-node notifier calls
    /// this when another node changed the task).
    pub fn wake(&self, id: &str) {
        let waker = self.inner.wakers.lock().ok().and_then(|w| w.get(id).cloned());
        if let Some(w) = waker {
            w.notify_waiters();
        }
    }

    /// Cancels local work of task `id` (a cross-node notifier calls this when
    /// another node cancelled it).
    pub fn cancel_local(&self, id: &str) {
        let token = self.inner.running.lock().ok().and_then(|mut r| r.remove(id));
        if let Some(t) = token {
            t.cancel();
        }
    }

    /// Stops spawned work: running tasks are marked failed as interrupted.
    pub async fn shutdown(&self) {
        self.inner.shutdown.cancel();
        let ids: Vec<String> = self
            .inner
            .running
            .lock()
            .map(|r| {
                for t in r.values() {
                    t.cancel();
                }
                r.keys().map(|k| k.to_string()).collect()
            })
            .unwrap_or_default();
        for id in ids {
            let _ = self
                .fail(
                    &id,
                    RpcError::internal("interrupted: the server running this task stopped"),
                    Some("interrupted: the server running this task stopped".into()),
                )
                .await;
        }
        self.inner.tracker.close();
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), self.inner.tracker.wait()).await;
    }
}
