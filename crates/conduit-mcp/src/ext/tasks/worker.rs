//! The worker side: a cloneable [`Tasks`] handle that drives tasks by id.
//! Not owner-scoped: the id is the capability.

use super::config::{NotifierConfig, TasksConfig};
use super::legacy_store::{LegacyTasks, MemoryLegacyStore};
use super::limits::bound_status_message;
use super::memory::{IdBuild, MemoryStore};
use super::notifier::ListenNotifier;
use super::store::{Owner, StatusFields, StoreError, TaskStore};
use super::task::{TaskRecord, TaskStatus};
use super::task_id::is_legacy_task_id;
use crate::clock::{Clock, SystemClock};
use crate::protocol::RpcError;
use crate::protocol::mrtr::{InputKind, InputRequest};
use crate::protocol::tools::CallToolResult;
use crate::tool::{ResumableFn, TaskContext, WorkerError};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, Once, OnceLock};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Drives tasks by id from workers. Not owner-scoped: the id is the capability.
///
/// Cheap to clone. Create one with [`Tasks::new`], install it in the server
/// with `ServerBuilder::extension(tasks.clone())`, and hand clones to your
/// workers. Installed, it serves both eras when its configuration is enabled
/// (and nothing otherwise): the Tasks extension on `2026-07-28`, and the
/// `2025-11-25` tasks wire over its [legacy twin](Self::legacy) — the
/// [`LegacyTasks`] runtime paired with [`drive_legacy`](Self::drive_legacy)
/// (`conduit_mcp_sql::Stores::tasks` pairs one in the database), or else one
/// made in memory at install. Its by-id calls reach the tasks of both.
#[derive(Clone)]
pub struct Tasks {
    pub(crate) inner: Arc<TasksInner>,
}

pub(crate) struct TasksInner {
    pub(crate) config: TasksConfig,
    pub(crate) store: Arc<dyn TaskStore>,
    pub(crate) listen: ListenNotifier,
    pub(crate) clock: Arc<dyn Clock>,
    /// Workers waiting for input, by task id.
    pub(super) wakers: Mutex<HashMap<String, Arc<Notify>, IdBuild>>,
    /// Work running on this node, by task id.
    pub(super) running: Mutex<HashMap<Arc<str>, CancellationToken, IdBuild>>,
    pub(crate) shutdown: CancellationToken,
    pub(super) tracker: TaskTracker,
    pub(super) janitor: Once,
    pub(super) leases: Once,
    pub(super) resumable: std::sync::RwLock<HashMap<String, ResumableFn>>,
    /// When this handle was made: tasks leased to this node id before then
    /// belong to an earlier process with the same id.
    pub(crate) started_at_ms: u64,
    /// The legacy era's runtime, which by-id worker calls fall back to when
    /// this store has no such task (set by `drive_legacy`, or made in memory
    /// when the handle is installed in a server).
    pub(super) legacy: OnceLock<LegacyTasks>,
    /// Whether this is the legacy era's runtime (its ids say so).
    pub(super) legacy_ids: bool,
}

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tasks").field("store", &self.inner.store.name()).finish_non_exhaustive()
    }
}

impl Tasks {
    /// A handle for this configuration, on the system clock.
    pub fn new(config: TasksConfig) -> Result<Self, super::ConfigError> {
        Self::with_clock(config, Arc::new(SystemClock))
    }

    /// A handle on an injected clock (the default memory store uses it too).
    pub fn with_clock(config: TasksConfig, clock: Arc<dyn Clock>) -> Result<Self, super::ConfigError> {
        Self::build(config, clock, false)
    }

    /// A handle; `legacy_ids` for the legacy era's runtime.
    pub(super) fn build(
        config: TasksConfig,
        clock: Arc<dyn Clock>,
        legacy_ids: bool,
    ) -> Result<Self, super::ConfigError> {
        config.validate()?;
        Ok(Self::runtime(config, clock, legacy_ids))
    }

    /// A handle for a configuration already validated.
    fn runtime(config: TasksConfig, clock: Arc<dyn Clock>, legacy_ids: bool) -> Self {
        let store = config.store.clone().unwrap_or_else(|| Arc::new(MemoryStore::with_clock(clock.clone())));
        let started_at_ms = clock.now_ms();
        Self {
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
                legacy: OnceLock::new(),
                legacy_ids,
            }),
        }
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

    /// This node's id.
    pub fn node_id(&self) -> &str {
        &self.inner.config.node_id
    }

    /// Claims this node's id in the store for this process (see
    /// [`TaskStore::claim_node`]): refused when another live process holds
    /// it. Call it before serving; the janitor calls it again before it
    /// recovers this id's earlier tasks, and lease renewal keeps it held.
    pub async fn claim_node(&self) -> Result<(), super::store::StoreError> {
        self.inner.store.claim_node(&self.inner.config.node_id).await
    }

    /// The legacy era's runtime paired with this handle ([`drive_legacy`](Self::drive_legacy)),
    /// if any yet: installing the handle in a server pairs one in memory when
    /// it has none.
    pub fn legacy(&self) -> Option<&LegacyTasks> {
        self.inner.legacy.get()
    }

    /// Makes this handle's by-id worker calls (`status`, `cancelled`,
    /// `progress`, `complete`, `fail`, `require_input`) reach `legacy`'s
    /// tasks too, and tell `legacy`'s notifier and waiters about the change;
    /// installed in a server, this handle then serves the `2025-11-25` era's
    /// tasks over `legacy`. Set once, before the handle is installed; later
    /// calls, and a pairing that would loop, are ignored.
    ///
    /// A task's id says which era's store it was made in, and a call reads that
    /// store first (one read; no miss in the other store before it). Ids never
    /// repeat across the two stores (32 random bytes each), so trying the other
    /// store next — for ids minted before the mark — can only find the one task
    /// the id names.
    pub fn drive_legacy(&self, legacy: &LegacyTasks) {
        let target = legacy.tasks();
        // Never a loop: not onto itself, nor onto a handle that falls back itself.
        if Arc::ptr_eq(&self.inner, &target.inner) || target.inner.legacy.get().is_some() || self.inner.legacy_ids {
            return;
        }
        let _ = self.inner.legacy.set(legacy.clone());
    }

    /// The legacy twin to serve the `2025-11-25` era's tasks with: the paired
    /// one, or one made now in memory on this handle's clock and
    /// configuration (its own notifier only when that is the built-in one:
    /// a custom notifier carries this store's changes). `None` for a legacy
    /// runtime itself.
    pub(crate) fn legacy_twin(&self) -> Option<LegacyTasks> {
        if self.inner.legacy_ids {
            return None;
        }
        let twin = self.inner.legacy.get_or_init(|| {
            let mut config = self.inner.config.clone();
            if matches!(config.notifier, NotifierConfig::Custom(_)) {
                config.notifier = NotifierConfig::Listen;
            }
            let store = Arc::new(MemoryLegacyStore::with_clock(self.inner.clock.clone()));
            LegacyTasks::over(self.build_twin(config, store.clone()), store)
        });
        Some(twin.clone())
    }

    /// The runtime of a legacy twin over `store`; `config` is this handle's,
    /// valid already.
    fn build_twin(&self, config: TasksConfig, store: Arc<dyn super::legacy_store::LegacyTaskStore>) -> Tasks {
        let store: Arc<dyn TaskStore> = store;
        Self::runtime(config.store(store), self.inner.clock.clone(), true)
    }

    /// Forgets the waker of task `id` (once nothing can wake it any more).
    pub(crate) fn forget_waker(&self, id: &str) {
        if let Ok(mut w) = self.inner.wakers.lock() {
            w.remove(id);
        }
    }

    pub(crate) fn now(&self) -> u64 {
        self.inner.clock.now_ms()
    }

    /// Called after every successful store write: the configured notifier
    /// (panics swallowed), then the local consequences.
    pub(crate) fn after_write(&self, record: &TaskRecord) {
        match &self.inner.config.notifier {
            NotifierConfig::Listen => self.apply_change(record),
            NotifierConfig::None => self.local_change(record),
            NotifierConfig::Custom(n) => {
                let listen = &self.inner.listen;
                if std::panic::catch_unwind(AssertUnwindSafe(|| n.task_changed(record, listen))).is_err() {
                    tracing::error!("task notifier panicked; the change itself was stored");
                }
                self.local_change(record);
            }
        }
    }

    /// A task changed, here or on another node: delivers it to this node's
    /// listen streams (only those whose principal owns it), wakes workers
    /// waiting on it, and stops its local work if it was cancelled. Written
    /// changes come here through the notifier; a cross-node notifier (such as
    /// `PgNotifier`) calls it for changes made elsewhere.
    pub fn apply_change(&self, record: &TaskRecord) {
        let listen = &self.inner.listen;
        if std::panic::catch_unwind(AssertUnwindSafe(|| listen.task_changed(record))).is_err() {
            tracing::error!("listen delivery panicked; the change itself was stored");
        }
        self.local_change(record);
    }

    /// The local consequences of a change.
    fn local_change(&self, record: &TaskRecord) {
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
        let (first, next) = self.by_id(id);
        match (first.inner.store.get(id, Owner::Any).await, next) {
            (Err(StoreError::NotFound), Some(next)) => Ok(next.inner.store.get(id, Owner::Any).await?),
            (r, _) => Ok(r?),
        }
    }

    /// The runtime whose store a by-id call on `id` reads first (the one the id
    /// was minted for), and the paired one it tries when the first has no such task.
    fn by_id(&self, id: &str) -> (&Tasks, Option<&Tasks>) {
        match self.inner.legacy.get() {
            Some(legacy) if is_legacy_task_id(id) => (legacy.tasks(), Some(self)),
            Some(legacy) => (self, Some(legacy.tasks())),
            None => (self, None),
        }
    }

    /// Whether `tasks/cancel` ran; `false` for an unknown id.
    pub async fn cancelled(&self, id: &str) -> bool {
        self.status(id).await.is_ok_and(|t| t.status == TaskStatus::Cancelled)
    }

    /// Updates `statusMessage` and `lastUpdatedAt` without changing the status.
    pub async fn progress(&self, id: &str, message: impl Into<String>) -> Result<(), WorkerError> {
        let message = bound_status_message(message.into());
        let (first, next) = self.by_id(id);
        match (first.progress_here(id, &message).await, next) {
            (Err(WorkerError::NotFound), Some(next)) => next.progress_here(id, &message).await,
            (r, _) => r,
        }
    }

    /// [`progress`](Self::progress) in this runtime's store only.
    async fn progress_here(&self, id: &str, message: &str) -> Result<(), WorkerError> {
        let now = self.now();
        let rec = self
            .inner
            .store
            .update(id, Owner::Any, &|r: &TaskRecord| {
                if r.is_terminal() {
                    return Err(StoreError::Terminal);
                }
                let mut n = r.clone();
                n.status_message = Some(message.to_owned());
                n.touch(now);
                Ok(n)
            })
            .await?;
        self.after_write(&rec);
        Ok(())
    }

    async fn finish(&self, id: &str, status: TaskStatus, fields: StatusFields) -> Result<(), WorkerError> {
        let (first, next) = self.by_id(id);
        // The fields are copied only when there is a store to try next.
        let retry = next.map(|next| (next, fields.clone()));
        match (first.finish_here(id, status, fields).await, retry) {
            (Err(WorkerError::NotFound), Some((next, fields))) => next.finish_here(id, status, fields).await,
            (r, _) => r,
        }
    }

    /// [`finish`](Self::finish) in this runtime's store only.
    async fn finish_here(&self, id: &str, status: TaskStatus, fields: StatusFields) -> Result<(), WorkerError> {
        let rec = self.inner.store.put_status(id, status, fields).await.inspect_err(|e| {
            if matches!(e, StoreError::Backend { .. }) {
                crate::metrics::store_error("finish");
            }
        })?;
        match status {
            TaskStatus::Completed => crate::metrics::task_finished("completed"),
            TaskStatus::Failed => crate::metrics::task_finished("failed"),
            TaskStatus::Cancelled => crate::metrics::task_finished("cancelled"),
            _ => {}
        }
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
        let status_message = status_message.map(bound_status_message);
        if requests.is_empty() || requests.values().any(|r| r.kind().is_none()) {
            return Err(WorkerError::InvalidInputRequests);
        }
        let (first, next) = self.by_id(id);
        match (first.require_input_here(id, &requests, &status_message).await, next) {
            (Err(WorkerError::NotFound), Some(next)) => next.require_input_here(id, &requests, &status_message).await,
            (r, _) => r,
        }
    }

    /// [`require_input`](Self::require_input) in this runtime's store only.
    async fn require_input_here(
        &self,
        id: &str,
        requests: &BTreeMap<String, InputRequest>,
        status_message: &Option<String>,
    ) -> Result<(), WorkerError> {
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
                for req in requests.values() {
                    let kind = req.kind().unwrap_or(InputKind::ElicitForm);
                    if !r.client_capabilities.declares_input(kind) {
                        return refuse(WorkerError::UndeclaredCapability(crate::mrtr::required_capability(kind)));
                    }
                }
                let mut n = r.clone();
                for (k, v) in requests {
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
            Err(e) => Err(e.into()),
        }
    }

    /// Registers resumable work under `name` (see `TaskSpec::spawn_resumable`).
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

    /// Stops spawned work, this handle's and its [legacy twin](Self::legacy)'s:
    /// running tasks are marked failed as interrupted, then their work is
    /// cancelled (in that order, so what the client reads is why the work
    /// stopped, not how the cancelled work reacted).
    pub async fn shutdown(&self) {
        if let Some(twin) = self.inner.legacy.get() {
            // A twin has no twin of its own: this recursion is one level deep.
            Box::pin(twin.tasks().shutdown()).await;
        }
        self.inner.shutdown.cancel();
        let running: Vec<(String, CancellationToken)> = self
            .inner
            .running
            .lock()
            .map(|r| r.iter().map(|(k, t)| (k.to_string(), t.clone())).collect())
            .unwrap_or_default();
        for (id, _) in &running {
            let _ = self
                .fail(id, RpcError::internal(super::recovery::INTERRUPTED), Some(super::recovery::INTERRUPTED.into()))
                .await;
        }
        for (_, token) in running {
            token.cancel();
        }
        self.inner.tracker.close();
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), self.inner.tracker.wait()).await;
    }
}
