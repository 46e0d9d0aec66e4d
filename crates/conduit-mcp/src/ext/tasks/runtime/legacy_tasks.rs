//! [`LegacyTasks`]: the legacy era's task runtime, the extension's machinery
//! over a listable store of its own.

use super::config::TasksConfig;
use super::worker::Tasks;
use crate::clock::{Clock, SystemClock};
use crate::config::ConfigError;
use crate::ext::tasks::store::legacy_store::{LegacyTaskStore, MemoryLegacyStore, TaskPage};
use crate::ext::tasks::store::{Owner, TaskRecord, TaskStore};
use crate::task::StoreError;
use std::sync::Arc;
use std::time::Duration;

/// How often a waiting [`LegacyTasks::wait`] re-reads the task even without
/// a wake-up: a backstop only, since local writes and a cross-node notifier
/// (`PgNotifier`) wake it at once.
const WAIT_RECHECK: Duration = Duration::from_secs(10);

/// The legacy era's tasks (the seed's `ConduitMcp.Tasks`): a [`Tasks`] runtime
/// — the same worker calls, spawned work, leases, janitor, notifier and
/// wake-ups as the extension — over a [`LegacyTaskStore`], plus the two
/// things only the legacy wire needs: [`list`](Self::list) and
/// [`wait`](Self::wait) (for `tasks/result`).
///
/// Most servers never name it: a [`Tasks`] handle installed in a server
/// serves this era's tasks over its twin, made in memory unless one was
/// paired ([`Tasks::drive_legacy`]; `conduit_mcp_sql::Stores::tasks` pairs
/// one in the database). Build one yourself to keep legacy tasks in a store
/// of your own, or to serve them alone (`ServerBuilder::extension(legacy)`
/// installs the `2025-11-25` tasks wire only).
///
/// It dereferences to its [`Tasks`], so a worker drives a legacy task with
/// the calls it already knows (`complete`, `fail`, `progress`,
/// `require_input`, `status`), by id; the paired extension's handle does the
/// same, so a worker needs no branch per era.
///
/// ```
/// use conduit_mcp::prelude::*;
///
/// let tasks = Tasks::new(TasksConfig::enabled()).expect("valid config");
/// let legacy = LegacyTasks::new(TasksConfig::enabled()).expect("valid config");
/// tasks.drive_legacy(&legacy); // `tasks.complete(id, ..)` now finds legacy tasks too
/// let server = Server::builder("both", "1.0.0").extension(tasks).build().expect("valid server");
/// # let _ = server;
/// ```
#[derive(Clone)]
pub struct LegacyTasks {
    tasks: Tasks,
    store: Arc<dyn LegacyTaskStore>,
}

impl std::fmt::Debug for LegacyTasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LegacyTasks").field("store", &self.store.name()).finish_non_exhaustive()
    }
}

impl std::ops::Deref for LegacyTasks {
    type Target = Tasks;

    fn deref(&self) -> &Tasks {
        &self.tasks
    }
}

impl LegacyTasks {
    /// Legacy tasks in memory ([`MemoryLegacyStore`]), on the system clock.
    ///
    /// `config` is validated as the extension's is; its `store` is ignored
    /// (a legacy store must list: use [`with_store`](Self::with_store)), and
    /// `enabled` too (the legacy era's tasks are always routed).
    pub fn new(config: TasksConfig) -> Result<Self, ConfigError> {
        Self::with_clock(config, Arc::new(SystemClock))
    }

    /// Legacy tasks in memory on an injected clock.
    pub fn with_clock(config: TasksConfig, clock: Arc<dyn Clock>) -> Result<Self, ConfigError> {
        let store = Arc::new(MemoryLegacyStore::with_clock(clock.clone()));
        Self::with_store(config, store, clock)
    }

    /// Legacy tasks in `store`, on `clock`.
    ///
    /// With a SQL store beside the extension's (`store.legacy()`), give
    /// `config` the same `node_id` as the extension's `Tasks`: the database
    /// holds one node claim per store, which then covers both runtimes. For
    /// several nodes, attach a `PgNotifier` of its own channel to the handle.
    /// `conduit_mcp_sql::Stores::tasks` does all of this.
    pub fn with_store(
        config: TasksConfig,
        store: Arc<dyn LegacyTaskStore>,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, ConfigError> {
        let as_tasks: Arc<dyn TaskStore> = store.clone();
        let tasks = Tasks::build(config.store(as_tasks), clock, true)?;
        Ok(Self::over(tasks, store))
    }

    /// The handle of `tasks`, a legacy runtime over `store`.
    pub(crate) fn over(tasks: Tasks, store: Arc<dyn LegacyTaskStore>) -> Self {
        Self { tasks, store }
    }

    /// The runtime (also reachable through `Deref`).
    pub fn tasks(&self) -> &Tasks {
        &self.tasks
    }

    /// The listable store.
    pub fn legacy_store(&self) -> &Arc<dyn LegacyTaskStore> {
        &self.store
    }

    /// Stores a new task under the configured caps (the row cap, where it
    /// may take a terminal task's place, and the per-principal cap on live
    /// tasks), then tells the notifier, as a tool's task is stored.
    pub async fn create(&self, record: TaskRecord) -> Result<TaskRecord, StoreError> {
        let record = super::terminal::store_new(&self.tasks, record, None).await?;
        self.tasks.after_write(&record);
        super::terminal::ended(&self.tasks, &record).await;
        Ok(record)
    }

    /// One page of `owner`'s tasks, terminal ones included until their TTL
    /// (see [`LegacyTaskStore::list`]).
    pub async fn list(&self, owner: Option<&str>, cursor: Option<&str>, limit: usize) -> Result<TaskPage, StoreError> {
        self.store.list(owner, cursor, limit).await
    }

    /// Waits until task `id` (of `owner`) satisfies `until` — for
    /// `tasks/result`, until it is terminal or needs input — and returns it.
    /// Returns at once when it already does; `NotFound` when it is missing,
    /// foreign or expires meanwhile.
    ///
    /// It wakes on every change written on this node, and on changes written
    /// on other nodes when a cross-node notifier (`PgNotifier`, on its own
    /// channel for the legacy store) is attached to this handle.
    pub async fn wait(
        &self,
        id: &str,
        owner: Owner<'_>,
        until: impl Fn(&TaskRecord) -> bool + Send + Sync,
    ) -> Result<TaskRecord, StoreError> {
        let notify = self.tasks.waker(id);
        let result = loop {
            let notified = notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            match self.store.get(id, owner).await {
                Ok(rec) if until(&rec) || rec.is_terminal() => break Ok(rec),
                Ok(_) => {}
                Err(e) => break Err(e),
            }
            tokio::select! {
                _ = notified => {}
                _ = tokio::time::sleep(WAIT_RECHECK) => {}
            }
        };
        if !matches!(&result, Ok(r) if !r.is_terminal()) {
            // No change will come to remove the waker of a finished or missing task.
            self.tasks.forget_waker(id);
        }
        result
    }
}
