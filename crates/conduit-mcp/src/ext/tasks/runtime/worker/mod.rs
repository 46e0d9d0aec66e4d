//! The worker side: a cloneable [`Tasks`] handle that drives tasks by id.
//! Not owner-scoped: the id is the capability. This module holds the handle
//! and its state (what wakes, what runs here, the legacy twin); `calls` the
//! by-id worker calls. What runs work (`runtime`), creates tasks
//! (`creation`), applies answers (`answers`) and sweeps (`janitor`) are free
//! functions over the handle in their own modules.

mod calls;

use super::changes::MemoryChanges;
use super::config::{NotifierConfig, TasksConfig};
use super::create_rate::CreateRates;
use super::legacy_tasks::LegacyTasks;
use super::notifier::ListenNotifier;
use crate::clock::{Clock, SystemClock};
use crate::ext::tasks::store::legacy_store::{LegacyTaskStore, MemoryLegacyStore};
use crate::ext::tasks::store::{IdBuild, MemoryStore, TaskChangeFeed, TaskRecord, TaskStore};
use crate::protocol::RpcError;
use crate::protocol::tasks::TaskStatus;
use crate::protocol::tools::CallToolResult;
use crate::task::{ResumableFn, StoreError, TaskContext};
use serde_json::Value;
use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, Once, OnceLock};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The message of a task failed because the node running it stopped (shut
/// down, or restarted under the same node id).
pub(crate) const INTERRUPTED: &str = "interrupted: the server running this task stopped";

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
    pub(crate) legacy_ids: bool,
    /// The per-client counts behind `create_rate` (made on first use; a
    /// legacy twin shares its pair's).
    create_rates: OnceLock<CreateRates>,
    /// The memory change log both eras' writes go to, once something reads
    /// it (the Events extension) and the store keeps no durable one; a legacy
    /// twin shares its pair's.
    changes: OnceLock<Arc<MemoryChanges>>,
    /// Bumped after every change, written here or reported by another node:
    /// what readers of the change log wait on (a legacy twin shares its pair's).
    changed: OnceLock<Arc<tokio::sync::watch::Sender<u64>>>,
}

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tasks").field("store", &self.inner.store.name()).finish_non_exhaustive()
    }
}

impl Tasks {
    /// A handle for this configuration, on the system clock.
    pub fn new(config: TasksConfig) -> Result<Self, crate::config::ConfigError> {
        Self::with_clock(config, Arc::new(SystemClock))
    }

    /// A handle on an injected clock (the default memory store uses it too).
    pub fn with_clock(config: TasksConfig, clock: Arc<dyn Clock>) -> Result<Self, crate::config::ConfigError> {
        Self::build(config, clock, false)
    }

    /// A handle; `legacy_ids` for the legacy era's runtime.
    pub(super) fn build(
        config: TasksConfig,
        clock: Arc<dyn Clock>,
        legacy_ids: bool,
    ) -> Result<Self, crate::config::ConfigError> {
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
                create_rates: OnceLock::new(),
                changes: OnceLock::new(),
                changed: OnceLock::new(),
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
    pub async fn claim_node(&self) -> Result<(), StoreError> {
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
        let _ = target.inner.create_rates.set(self.create_rates().clone());
        self.share_changes(target);
    }

    /// The change log of this handle and its twin: the store's durable feed,
    /// or else one kept in memory from now on (a handle keeps none until this
    /// is first called), bounded to `max_changes` changes and `max_bytes`
    /// bytes when this call makes it.
    pub(crate) fn changes(&self, max_changes: usize, max_bytes: usize) -> Arc<dyn TaskChangeFeed> {
        if let Some(feed) = self.inner.store.change_feed() {
            return feed;
        }
        let log = self.inner.changes.get_or_init(|| Arc::new(MemoryChanges::new(max_changes, max_bytes))).clone();
        if let Some(twin) = self.inner.legacy.get() {
            self.share_changes(twin.tasks());
        }
        log
    }

    /// Woken after every change of a task of this handle or its twin (written
    /// here, or reported by a cross-node notifier).
    pub(crate) fn change_watch(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changed().subscribe()
    }

    fn changed(&self) -> &Arc<tokio::sync::watch::Sender<u64>> {
        self.inner.changed.get_or_init(|| Arc::new(tokio::sync::watch::Sender::new(0)))
    }

    /// A task changed on another node: wakes this node's readers of the
    /// change log (`task.status_changed` push streams), which then read the
    /// store's durable feed. A cross-node notifier calls it for every change
    /// it hears of, without reading the task.
    pub fn changed_elsewhere(&self) {
        self.tick();
    }

    fn tick(&self) {
        self.changed().send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Makes `twin` write to this handle's change log, if it keeps one, and
    /// wake this handle's readers.
    fn share_changes(&self, twin: &Tasks) {
        let _ = twin.inner.changed.set(self.changed().clone());
        if let Some(log) = self.inner.changes.get() {
            let _ = twin.inner.changes.set(log.clone());
        }
    }

    /// The per-client counts of task creates, shared with the legacy twin.
    pub(crate) fn create_rates(&self) -> &CreateRates {
        self.inner.create_rates.get_or_init(CreateRates::default)
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
    fn build_twin(&self, config: TasksConfig, store: Arc<dyn LegacyTaskStore>) -> Tasks {
        let store: Arc<dyn TaskStore> = store;
        let twin = Self::runtime(config.store(store), self.inner.clock.clone(), true);
        let _ = twin.inner.create_rates.set(self.create_rates().clone());
        self.share_changes(&twin);
        twin
    }

    /// Forgets the waker of task `id` (once nothing can wake it any more).
    pub(crate) fn forget_waker(&self, id: &str) {
        if let Ok(mut w) = self.inner.wakers.lock() {
            w.remove(id);
        }
    }

    /// The waker of task `id`, made on first use (work waiting for input, a legacy
    /// `tasks/result`); [`forget_waker`](Self::forget_waker) drops it.
    pub(crate) fn waker(&self, id: &str) -> Arc<Notify> {
        let mut w = self.inner.wakers.lock().unwrap_or_else(|p| p.into_inner());
        w.entry(id.to_owned()).or_default().clone()
    }

    /// Wakes local workers waiting on task `id`.
    pub(crate) fn wake(&self, id: &str) {
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

    /// Whether this node runs the work of task `id` right now.
    pub(crate) fn is_running(&self, id: &str) -> bool {
        self.inner.running.lock().is_ok_and(|r| r.contains_key(id))
    }

    pub(crate) fn now(&self) -> u64 {
        self.inner.clock.now_ms()
    }

    /// Called after every successful store write: the configured notifier
    /// (panics swallowed), then the local consequences.
    pub(crate) fn after_write(&self, record: &TaskRecord) {
        if let Some(log) = self.inner.changes.get() {
            log.record(record);
        }
        self.tick();
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
        self.tick();
        let listen = &self.inner.listen;
        if std::panic::catch_unwind(AssertUnwindSafe(|| listen.task_changed(record))).is_err() {
            tracing::error!("listen delivery panicked; the change itself was stored");
        }
        self.local_change(record);
    }

    /// Cancels this node's work of task `id`, if it runs any.
    fn cancel_local(&self, id: &str) {
        let token = self.inner.running.lock().ok().and_then(|mut r| r.remove(id));
        if let Some(t) = token {
            t.cancel();
        }
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
            let _ = self.fail(id, RpcError::internal(INTERRUPTED), Some(INTERRUPTED.into())).await;
        }
        for (_, token) in running {
            token.cancel();
        }
        self.inner.tracker.close();
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), self.inner.tracker.wait()).await;
    }
}
