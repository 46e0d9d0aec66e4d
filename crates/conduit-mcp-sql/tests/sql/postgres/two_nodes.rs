//! Two `PostgresStore` instances on one schema, as two nodes of a service
//! share one database: the whole store contract (the row cap, and the CAS
//! race at 10 000 tasks × 64 writers) through both at once, and group commit
//! under the cap across both (creates batched per node, each batch taking
//! its room from a shard of the sharded counter). Needs `DATABASE_URL`.

use crate::support;

use async_trait::async_trait;
use conduit_mcp::clock::{Clock, ManualClock};
use conduit_mcp::ext::tasks::{CreateCaps, Owner, TaskRecord, TaskStore, TerminalBound, UpdateFn, new_task_id};
use conduit_mcp::task::StoreError;
use conduit_mcp::testing::{ContractOptions, store_contract};
use conduit_mcp_sql::PostgresStore;
use futures_util::future::join_all;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

const START: u64 = 1_800_000_000_000;

/// One store over two nodes: each operation goes to the next node in turn,
/// so a task created on one is read, raced over and swept on both.
#[derive(Debug, Clone)]
struct TwoNodes {
    nodes: [PostgresStore; 2],
    next: Arc<AtomicUsize>,
}

impl TwoNodes {
    async fn connect(url: &str, schema: &str, clock: Arc<dyn Clock>) -> Self {
        let a = PostgresStore::with_schema(url, schema, clock.clone()).await.expect("connect node a");
        let b = PostgresStore::with_schema(url, schema, clock).await.expect("connect node b");
        Self { nodes: [a, b], next: Arc::new(AtomicUsize::new(0)) }
    }

    fn node(&self) -> &PostgresStore {
        &self.nodes[self.next.fetch_add(1, Ordering::Relaxed) % 2]
    }
}

#[async_trait]
impl TaskStore for TwoNodes {
    fn name(&self) -> &'static str {
        "postgres (two nodes)"
    }

    fn now_ms(&self) -> u64 {
        self.nodes[0].now_ms()
    }

    async fn create(&self, record: TaskRecord, caps: CreateCaps) -> Result<TaskRecord, StoreError> {
        self.node().create(record, caps).await
    }

    async fn get(&self, task_id: &str, owner: Owner<'_>) -> Result<TaskRecord, StoreError> {
        self.node().get(task_id, owner).await
    }

    async fn update(&self, task_id: &str, owner: Owner<'_>, f: UpdateFn<'_>) -> Result<TaskRecord, StoreError> {
        self.node().update(task_id, owner, f).await
    }

    async fn cleanup(&self, terminal_ttl_ms: u64) -> Result<usize, StoreError> {
        self.node().cleanup(terminal_ttl_ms).await
    }

    async fn trim_terminal(&self, owner: &str, bound: TerminalBound) -> Result<usize, StoreError> {
        self.node().trim_terminal(owner, bound).await
    }

    async fn evict_oldest_terminal(&self, owner: &str) -> Result<bool, StoreError> {
        self.node().evict_oldest_terminal(owner).await
    }

    async fn renew_leases(&self, node: &str, until_ms: u64) -> Result<usize, StoreError> {
        self.node().renew_leases(node, until_ms).await
    }

    async fn renew_leases_of(&self, node: &str, task_ids: &[String], until_ms: u64) -> Result<usize, StoreError> {
        self.node().renew_leases_of(node, task_ids, until_ms).await
    }

    async fn lapsed_leases(&self, limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
        self.node().lapsed_leases(limit).await
    }

    async fn leased_to(&self, node: &str, limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
        self.node().leased_to(node, limit).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_on_one_database_meet_the_contract() {
    let Some(url) = support::pg_url("two_nodes_on_one_database_meet_the_contract") else { return };
    let schemas = support::Schemas::new(&url);
    let tasks = support::race_tasks(10_000);
    let t = std::time::Instant::now();
    store_contract(
        |clock| {
            let (url, schema) = (url.clone(), schemas.fresh());
            async move { TwoNodes::connect(&url, &schema, clock).await }
        },
        ContractOptions::race(tasks, 64),
    )
    .await;
    eprintln!("postgres contract suite on two nodes, race {tasks} tasks x 64 writers: {:?}", t.elapsed());
}

fn task(clock: &ManualClock, id: &str) -> TaskRecord {
    TaskRecord::new(id.to_owned(), Some("alice".into()), clock.now_ms(), None)
}

/// The counter is exactly `n`: a create under `n` is refused, one under `n + 1` fits.
async fn assert_count(store: &dyn TaskStore, clock: &ManualClock, n: usize) {
    let r = store.create(task(clock, &new_task_id()), CreateCaps::rows(Some(n))).await;
    assert_eq!(r, Err(StoreError::TaskLimitReached), "the counter should be {n}");
    store
        .create(task(clock, &new_task_id()), CreateCaps::rows(Some(n + 1)))
        .await
        .expect("the counter should be below n + 1");
}

/// 400 creates from two nodes at once race for 100 slots: exactly 100 win,
/// each winner readable on both nodes, each loser on neither, counter 100.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn group_commit_keeps_the_cap_across_nodes() {
    let Some(url) = support::pg_url("group_commit_keeps_the_cap_across_nodes") else { return };
    let schemas = support::Schemas::new(&url);
    let clock = ManualClock::new(START);
    let two = TwoNodes::connect(&url, &schemas.fresh(), Arc::new(clock.clone())).await;
    let ids: Vec<String> = (0..400).map(|_| new_task_id()).collect();
    let handles: Vec<_> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let (store, t) = (two.nodes[i % 2].clone(), task(&clock, id));
            tokio::spawn(async move { store.create(t, CreateCaps::rows(Some(100))).await })
        })
        .collect();
    let results: Vec<_> = join_all(handles).await.into_iter().map(|r| r.expect("create task")).collect();
    let ok = results.iter().filter(|r| r.is_ok()).count();
    let refused = results.iter().filter(|r| matches!(r, Err(StoreError::TaskLimitReached))).count();
    assert_eq!((ok, refused), (100, 300), "{results:?}");
    for (id, r) in ids.iter().zip(&results) {
        for node in &two.nodes {
            let got = node.get(id, Owner::Any).await;
            assert_eq!(got.is_ok(), r.is_ok(), "create said {r:?}, get says {got:?}");
        }
    }
    assert_count(&two, &clock, 100).await;
}

/// In a batch, a duplicate id — of a stored row, or of another create in the
/// same batch — fails alone, and the slot it did not take goes to a create
/// the cap would otherwise have refused.
#[tokio::test]
async fn a_duplicate_in_a_batch_fails_alone() {
    let Some(url) = support::pg_url("a_duplicate_in_a_batch_fails_alone") else { return };
    let schemas = support::Schemas::new(&url);
    let clock = ManualClock::new(START);
    let store = PostgresStore::with_schema(&url, &schemas.fresh(), Arc::new(clock.clone())).await.expect("connect");
    let old = new_task_id();
    store.create(task(&clock, &old), CreateCaps::default()).await.expect("first create");
    let (a, b, c) = (new_task_id(), new_task_id(), new_task_id());
    // Joined on one thread: the first runs alone, the other four queue into a batch.
    let batch = [&a, &old, &b, &a, &c];
    let results = join_all(batch.iter().map(|id| store.create(task(&clock, id), CreateCaps::rows(Some(4))))).await;
    assert_eq!(results[1], Err(StoreError::Duplicate), "the stored id");
    let a_wins = [&results[0], &results[3]].iter().filter(|r| r.is_ok()).count();
    assert_eq!(a_wins, 1, "one of the two creates of one id wins: {results:?}");
    // The loser is a duplicate, or refused by the cap when it came after the
    // batch had filled it (the create alone and the batch commit side by side).
    let loser = if results[0].is_ok() { &results[3] } else { &results[0] };
    assert!(matches!(loser, Err(StoreError::Duplicate | StoreError::TaskLimitReached)), "{results:?}");
    assert_eq!((results[2].is_ok(), results[4].is_ok()), (true, true), "under the cap: {results:?}");
    for id in [&old, &a, &b, &c] {
        store.get(id, Owner::Any).await.expect("stored");
    }
    assert_count(&store, &clock, 4).await;
}

/// 200 creates of one principal from two nodes at once, under a per-principal
/// cap of 20: exactly 20 win, the rest are `OwnerLimitReached`, and another
/// principal still creates.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_per_principal_cap_holds_across_nodes() {
    let Some(url) = support::pg_url("the_per_principal_cap_holds_across_nodes") else { return };
    let schemas = support::Schemas::new(&url);
    let clock = ManualClock::new(START);
    let two = TwoNodes::connect(&url, &schemas.fresh(), Arc::new(clock.clone())).await;
    let caps = CreateCaps::new(Some(1_000), Some(20));
    let handles: Vec<_> = (0..200)
        .map(|i| {
            let (store, t) = (two.nodes[i % 2].clone(), task(&clock, &new_task_id()));
            tokio::spawn(async move { store.create(t, caps).await })
        })
        .collect();
    let results: Vec<_> = join_all(handles).await.into_iter().map(|r| r.expect("create task")).collect();
    let ok = results.iter().filter(|r| r.is_ok()).count();
    let refused = results.iter().filter(|r| matches!(r, Err(StoreError::OwnerLimitReached))).count();
    assert_eq!((ok, refused), (20, 180), "{results:?}");
    let bob = TaskRecord::new(new_task_id(), Some("bob".into()), clock.now_ms(), None);
    two.create(bob, caps).await.expect("another principal");
}
