//! What the mixed soak knows: every acknowledged task (its kind and whether it
//! was seen terminal), the request counters, and every error, classified as
//! expected or not.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// After a database connection is killed, a `-32603` from a store failure
/// within this window is the kill's doing (and the request is retried).
pub const KILL_WINDOW: Duration = Duration::from_secs(5);

/// Which demo tool a task came from, and so how it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `build`: ends by itself after its steps.
    Build,
    /// `sleep`: ends when cancelled.
    Sleep,
    /// `deploy`: asks for a confirmation, ends once answered.
    Deploy,
    /// `job`: ends when `complete_job` completes it.
    Job,
}

impl Kind {
    /// The kind of create number `n`: 6 builds, 5 sleeps, 5 deploys and 4 jobs in every 20.
    pub fn nth(n: u64) -> Self {
        match n % 20 {
            0..6 => Self::Build,
            6..11 => Self::Sleep,
            11..16 => Self::Deploy,
            _ => Self::Job,
        }
    }
}

/// One acknowledged task.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Its id.
    pub id: String,
    /// Its tool.
    pub kind: Kind,
    /// When it was acknowledged, and its `ttlMs` (`None`: unlimited).
    pub acked: Instant,
    /// See `acked`.
    pub ttl_ms: Option<u64>,
    /// The terminal status it was seen in.
    pub terminal: Option<String>,
    /// Whether the soak has ended it (cancel, answer, complete) already.
    pub ended: bool,
}

/// Counters read once a minute.
#[derive(Debug, Default)]
pub struct Counters {
    /// Responses received (and transport failures).
    pub requests: AtomicU64,
    /// Creates acknowledged.
    pub created: AtomicU64,
    /// Creates refused by the cap (expected).
    pub refused: AtomicU64,
    /// Listen streams opened (and dropped).
    pub listens: AtomicU64,
    /// `tasks/cancel`, `tasks/update` and `complete_job` calls that ended a task.
    pub ended: AtomicU64,
    /// Idle sockets closed by the server's timeouts (expected).
    pub idle_closed: AtomicU64,
    /// Database connections killed.
    pub kills: AtomicU64,
    /// Expected errors (cap refusals included).
    pub expected: AtomicU64,
    /// Unexpected errors.
    pub unexpected: AtomicU64,
}

impl Counters {
    /// Adds one to `c`.
    pub fn bump(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }
}

/// The soak's shared state.
#[derive(Debug, Default)]
pub struct Ledger {
    /// The counters.
    pub n: Counters,
    tasks: Mutex<Vec<Entry>>,
    errors: Mutex<BTreeMap<(bool, String), u64>>,
    first_unexpected: Mutex<Vec<String>>,
    last_kill: Mutex<Option<Instant>>,
    /// Creates in flight (for classifying a cap refusal).
    pub inflight_creates: AtomicU64,
    /// Creates that failed inside a kill window (each may hold a row nobody acknowledged).
    pub orphan_allowance: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Ledger {
    /// Records an acknowledged task.
    pub fn add(&self, id: String, kind: Kind, ttl_ms: Option<u64>) {
        Counters::bump(&self.n.created);
        lock(&self.tasks).push(Entry { id, kind, acked: Instant::now(), ttl_ms, terminal: None, ended: false });
    }

    /// Acknowledged tasks so far.
    pub fn len(&self) -> usize {
        lock(&self.tasks).len()
    }

    /// Whether no task was acknowledged.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A pseudo-random task (by `pick`), optionally only one not seen terminal.
    pub fn pick(&self, pick: u64, live_only: bool) -> Option<Entry> {
        let t = lock(&self.tasks);
        let live: Vec<&Entry> = t.iter().filter(|e| !live_only || e.terminal.is_none()).collect();
        (!live.is_empty()).then(|| live[(pick % live.len() as u64) as usize].clone())
    }

    /// A task the soak may end now: not ended yet, of a kind it ends (not `build`).
    pub fn pick_to_end(&self, pick: u64) -> Option<Entry> {
        let t = lock(&self.tasks);
        let open: Vec<&Entry> =
            t.iter().filter(|e| !e.ended && e.terminal.is_none() && e.kind != Kind::Build).collect();
        (!open.is_empty()).then(|| open[(pick % open.len() as u64) as usize].clone())
    }

    /// Every task not seen terminal.
    pub fn unresolved(&self) -> Vec<Entry> {
        lock(&self.tasks).iter().filter(|e| e.terminal.is_none()).cloned().collect()
    }

    /// Every task.
    pub fn all(&self) -> Vec<Entry> {
        lock(&self.tasks).clone()
    }

    /// Marks `id` ended by the soak.
    pub fn mark_ended(&self, id: &str) {
        if let Some(e) = lock(&self.tasks).iter_mut().find(|e| e.id == id) {
            e.ended = true;
        }
    }

    /// Records the status `id` was seen in (terminal ones stick).
    pub fn saw(&self, id: &str, status: &str) {
        if matches!(status, "completed" | "failed" | "cancelled")
            && let Some(e) = lock(&self.tasks).iter_mut().find(|e| e.id == id)
        {
            e.terminal = Some(status.to_owned());
        }
    }

    /// Notes a database connection kill now.
    pub fn killed(&self, n: u64) {
        *lock(&self.last_kill) = Some(Instant::now());
        self.n.kills.fetch_add(n, Ordering::Relaxed);
    }

    /// Whether a kill happened within [`KILL_WINDOW`].
    pub fn in_kill_window(&self) -> bool {
        lock(&self.last_kill).is_some_and(|t| t.elapsed() <= KILL_WINDOW)
    }

    /// Records an error under `what`, expected or not.
    pub fn error(&self, expected: bool, what: String) {
        Counters::bump(if expected { &self.n.expected } else { &self.n.unexpected });
        if !expected {
            let mut f = lock(&self.first_unexpected);
            if f.len() < 10 {
                f.push(what.clone());
            }
        }
        *lock(&self.errors).entry((expected, what)).or_insert(0) += 1;
    }

    /// Every error kind with its count, expected ones first.
    pub fn error_table(&self) -> Vec<(bool, String, u64)> {
        let mut v: Vec<_> = lock(&self.errors).iter().map(|((e, w), n)| (*e, w.clone(), *n)).collect();
        v.sort_by(|a, b| b.0.cmp(&a.0).then(b.2.cmp(&a.2)));
        v
    }

    /// The first unexpected errors, verbatim.
    pub fn first_unexpected(&self) -> Vec<String> {
        lock(&self.first_unexpected).clone()
    }
}
