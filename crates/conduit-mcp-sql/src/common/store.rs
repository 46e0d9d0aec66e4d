//! [`SqlStore`]: the one [`TaskStore`] implementation both engines share —
//! `get`'s filter, `update`'s compare-and-swap loop, `cleanup`'s sweeps, the
//! per-task write queues — over the row operations an [`Engine`] supplies.

use super::{CLEANUP_BATCH, ms, rows_task_store};
use async_trait::async_trait;
use conduit_mcp::clock::Clock;
use conduit_mcp::ext::tasks::{
    CreateCaps, Owner, StoreError, TaskRecord, TaskStore, TerminalBound, TransactionHook, UpdateFn,
};
use std::sync::Arc;

/// The row operations of one database engine (SQLite, PostgreSQL): all a
/// [`SqlStore`] needs to meet the store contract.
///
/// Sealed: the trait is not reachable from outside this crate.
#[async_trait]
pub trait Engine: std::fmt::Debug + Send + Sync + 'static {
    /// The engine's name (`sqlite`, `postgres`): the store's name and the
    /// prefix of its error messages.
    const NAME: &'static str;

    /// Inserts `record` (already at version 1) under `caps`, committed
    /// before this returns.
    async fn insert(&self, record: TaskRecord, caps: CreateCaps) -> Result<(), StoreError>;

    /// Inserts `record` (version 1) under `caps` and runs `hook`, in one
    /// transaction of its own (never batched).
    async fn insert_with(
        &self,
        record: TaskRecord,
        caps: CreateCaps,
        hook: &dyn TransactionHook,
    ) -> Result<(), StoreError>;

    /// The row as it is now, if it exists (expired or not, anyone's).
    async fn read(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError>;

    /// Writes `next` if the row is still at `expected` version; `false` when
    /// another writer got there first (or the row is gone). With `hook`, the
    /// write and the hook share one transaction.
    async fn swap(
        &self,
        next: &TaskRecord,
        expected: u64,
        hook: Option<&dyn TransactionHook>,
    ) -> Result<bool, StoreError>;

    /// Deletes up to [`CLEANUP_BATCH`] rows of `sweep` below `bound` (epoch
    /// milliseconds), lowering the row counter with them; returns how many.
    async fn delete_batch(&self, sweep: Sweep, bound: i64) -> Result<u64, StoreError>;

    /// [`TaskStore::trim_terminal`].
    async fn trim_terminal(&self, owner: &str, bound: TerminalBound) -> Result<usize, StoreError>;

    /// [`TaskStore::evict_oldest_terminal`].
    async fn evict_oldest_terminal(&self, owner: &str) -> Result<bool, StoreError>;

    /// [`TaskStore::renew_leases`].
    async fn renew_leases(&self, node: &str, until_ms: u64) -> Result<usize, StoreError>;

    /// [`TaskStore::renew_leases_of`].
    async fn renew_leases_of(&self, node: &str, task_ids: &[String], until_ms: u64) -> Result<usize, StoreError>;

    /// [`TaskStore::claim_node`].
    async fn claim_node(&self, node: &str) -> Result<(), StoreError>;

    /// [`TaskStore::lapsed_leases`], judged at `now_ms`.
    async fn lapsed_leases(&self, now_ms: u64, limit: usize) -> Result<Vec<TaskRecord>, StoreError>;

    /// [`TaskStore::leased_to`], judged at `now_ms`.
    async fn leased_to(&self, node: &str, now_ms: u64, limit: usize) -> Result<Vec<TaskRecord>, StoreError>;
}

/// The two kinds of row `cleanup` deletes.
#[derive(Debug, Clone, Copy)]
pub enum Sweep {
    /// Rows whose TTL ran out: `expires_at_ms < bound`.
    Expired,
    /// Terminal rows with unlimited TTL: `expires_at_ms IS NULL AND terminal_at_ms < bound`.
    FinishedUnlimited,
}

/// A task store in a SQL database: the engine's rows, the injected clock,
/// and per-task write queues. Use it as [`SqliteStore`](crate::SqliteStore)
/// or [`PostgresStore`](crate::PostgresStore). Cheap to clone (the clones
/// share the connections).
pub struct SqlStore<E> {
    inner: Arc<Shared<E>>,
}

struct Shared<E> {
    engine: E,
    stripes: Stripes,
    clock: Arc<dyn Clock>,
}

impl<E> Clone for SqlStore<E> {
    fn clone(&self) -> Self {
        Self { inner: self.inner.clone() }
    }
}

impl<E: std::fmt::Debug> std::fmt::Debug for SqlStore<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlStore").field("engine", &self.inner.engine).finish_non_exhaustive()
    }
}

impl<E> SqlStore<E> {
    /// The store over `engine`, its time from `clock`.
    pub(crate) fn new(engine: E, clock: Arc<dyn Clock>) -> Self {
        Self { inner: Arc::new(Shared { engine, stripes: Stripes::new(1024), clock }) }
    }

    /// The engine's connections and statements.
    pub(crate) fn engine(&self) -> &E {
        &self.inner.engine
    }
}

rows_task_store! {
    impl[E: Engine] TaskStore for SqlStore<E> {
        fn name(&self) -> &'static str {
            E::NAME
        }

        fn now_ms(&self) -> u64 {
            self.inner.clock.now_ms()
        }

        async fn create_capped(&self, mut record: TaskRecord, caps: CreateCaps) -> Result<(), StoreError> {
            record.version = 1;
            self.inner.engine.insert(record, caps).await
        }

        async fn create_with(
            &self,
            mut record: TaskRecord,
            caps: CreateCaps,
            hook: &dyn TransactionHook,
        ) -> Result<(), StoreError> {
            record.version = 1;
            self.inner.engine.insert_with(record, caps, hook).await
        }

        async fn trim_terminal(&self, owner: &str, bound: TerminalBound) -> Result<usize, StoreError> {
            self.inner.engine.trim_terminal(owner, bound).await
        }

        async fn evict_oldest_terminal(&self, owner: &str) -> Result<bool, StoreError> {
            self.inner.engine.evict_oldest_terminal(owner).await
        }

        async fn renew_leases(&self, node: &str, until_ms: u64) -> Result<usize, StoreError> {
            self.inner.engine.renew_leases(node, until_ms).await
        }

        async fn renew_leases_of(&self, node: &str, task_ids: &[String], until_ms: u64) -> Result<usize, StoreError> {
            self.inner.engine.renew_leases_of(node, task_ids, until_ms).await
        }

        async fn claim_node(&self, node: &str) -> Result<(), StoreError> {
            self.inner.engine.claim_node(node).await
        }

        async fn lapsed_leases(&self, limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
            self.inner.engine.lapsed_leases(self.now_ms(), limit).await
        }

        async fn leased_to(&self, node: &str, limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
            self.inner.engine.leased_to(node, self.now_ms(), limit).await
        }
    }
}

#[async_trait]
impl<E: Engine> Rows for SqlStore<E> {
    async fn read(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        self.inner.engine.read(task_id).await
    }

    async fn swap(
        &self,
        next: &TaskRecord,
        expected: u64,
        hook: Option<&dyn TransactionHook>,
    ) -> Result<bool, StoreError> {
        self.inner.engine.swap(next, expected, hook).await
    }

    async fn delete_batch(&self, sweep: Sweep, bound: i64) -> Result<u64, StoreError> {
        self.inner.engine.delete_batch(sweep, bound).await
    }

    fn stripes(&self) -> &Stripes {
        &self.inner.stripes
    }
}

/// What the shared `get`, `update` and `cleanup` logic needs from an engine's store.
#[async_trait]
pub(crate) trait Rows: TaskStore {
    /// The row as it is now, if it exists (expired or not, anyone's).
    async fn read(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError>;

    /// Writes `next` if the row is still at `expected` version; `false` when
    /// another writer got there first (or the row is gone). With `hook`, the
    /// write and the hook share one transaction.
    async fn swap(
        &self,
        next: &TaskRecord,
        expected: u64,
        hook: Option<&dyn TransactionHook>,
    ) -> Result<bool, StoreError>;

    /// Deletes up to [`CLEANUP_BATCH`] rows of `sweep` below `bound` (epoch
    /// milliseconds), lowering the row counter with them; returns how many.
    async fn delete_batch(&self, sweep: Sweep, bound: i64) -> Result<u64, StoreError>;

    /// The store's per-task write queues.
    fn stripes(&self) -> &Stripes;
}

/// Per-task write queues inside one process: writers of the same task take
/// turns (by a hash of its id), so they do not all read the same version and
/// then collide on the compare-and-swap. Writers in other processes are still
/// kept apart by the compare-and-swap itself.
pub(crate) struct Stripes(Box<[tokio::sync::Mutex<()>]>);

impl std::fmt::Debug for Stripes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Stripes").field(&self.0.len()).finish()
    }
}

impl Stripes {
    pub(crate) fn new(n: usize) -> Self {
        Self((0..n.max(1)).map(|_| tokio::sync::Mutex::new(())).collect())
    }

    async fn lock(&self, task_id: &str) -> tokio::sync::MutexGuard<'_, ()> {
        use std::hash::{BuildHasher, BuildHasherDefault};
        let h = BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default().hash_one(task_id);
        self.0[(h % self.0.len() as u64) as usize].lock().await
    }
}

/// `get`: `NotFound` when the row is missing, another owner's, or expired.
pub(crate) async fn get<R: Rows + ?Sized>(
    store: &R,
    task_id: &str,
    owner: Owner<'_>,
) -> Result<TaskRecord, StoreError> {
    let now = store.now_ms();
    store.read(task_id).await?.filter(|r| owner.allows(r) && !r.is_expired(now)).ok_or(StoreError::NotFound)
}

/// `update`: an atomic read-modify-write by compare-and-swap on `version`.
///
/// `f` gets the current record and returns the new one or an error (a
/// refusal), which changes nothing. When another writer changed the row in
/// between, the read and `f` run again on the new state, so no acknowledged
/// write is ever overwritten. Terminal records are returned unchanged
/// whatever `f` returns. With `hook`, each write attempt and the hook share
/// one transaction (the hook runs only on the attempt that wins).
pub(crate) async fn modify<R: Rows + ?Sized>(
    store: &R,
    task_id: &str,
    owner: Owner<'_>,
    f: UpdateFn<'_>,
    hook: Option<&dyn TransactionHook>,
) -> Result<TaskRecord, StoreError> {
    let _turn = store.stripes().lock(task_id).await;
    loop {
        let cur = get(store, task_id, owner).await?;
        let mut next = f(&cur)?;
        if cur.is_terminal() {
            // Terminal records never change, whatever the function returned.
            return Ok(cur);
        }
        next.task_id.clone_from(&cur.task_id);
        next.version = cur.version + 1;
        if store.swap(&next, cur.version, hook).await? {
            return Ok(next);
        }
        // Lost the race: another write landed between our read and our swap.
        tracing::trace!("task write lost a compare-and-swap race; retrying");
    }
}

/// `cleanup`: rows expired before now, then terminal unlimited-TTL rows that
/// finished more than `terminal_ttl_ms` ago, each in batches until a batch
/// comes back short (so a large sweep never holds a lock for long). Returns
/// how many rows went.
pub(crate) async fn cleanup<R: Rows + ?Sized>(store: &R, terminal_ttl_ms: u64) -> Result<usize, StoreError> {
    let now = store.now_ms();
    let sweeps = [(Sweep::Expired, now), (Sweep::FinishedUnlimited, now.saturating_sub(terminal_ttl_ms))];
    let mut removed = 0usize;
    for (sweep, bound) in sweeps {
        loop {
            let gone = store.delete_batch(sweep, ms(bound)).await?;
            removed = removed.saturating_add(usize::try_from(gone).unwrap_or(usize::MAX));
            if gone < CLEANUP_BATCH as u64 {
                break;
            }
        }
    }
    Ok(removed)
}
