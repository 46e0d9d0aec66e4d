//! One `events/stream` of `task.status_changed` per client for every task it
//! follows by events.
//!
//! A follower registers its task id; the first registration opens the
//! stream (every status of every task the caller may see, no `taskId`
//! filter), and later ones join it. Each occurrence is routed by its
//! `data.taskId` to that task's followers as a bare hint (they read the task
//! with `tasks/get`), so what a task holds here is at most one pending hint,
//! never the occurrence itself: a flood of changes for one task costs no
//! memory. At most [`MAX_TASKS`] task ids are routed at once; followers past
//! that poll. When the stream breaks it is reopened from the last cursor it
//! gave (a `truncated` restart hints every task, since changes were
//! skipped); when it cannot be reopened, or the server refuses the event
//! type, the followers' feeds close and they poll. The stream is closed when
//! the last follower leaves.

use super::era::Dialect;
use super::error::ClientError;
use super::event_stream::{EventStream, StreamEvent};
use super::events::EventQuery;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::sync::{Notify, mpsc, oneshot};

/// The built-in event type a server announces task changes with.
pub(crate) const TASK_STATUS_CHANGED: &str = "task.status_changed";
/// The most task ids routed at once (a follower past it polls).
pub(crate) const MAX_TASKS: usize = 1000;
/// How long a stream may take to become active.
const ACTIVE_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest a follower waits for the stream to become active (opening or reopening).
const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// How many times in a row a broken stream is reopened before the followers poll.
const REOPEN_ATTEMPTS: u32 = 3;
/// The pause before the n-th reopen attempt is n times this.
const REOPEN_BACKOFF: Duration = Duration::from_millis(200);

/// A follower: its key and where its hints go (room for one).
type Route = (u64, mpsc::Sender<()>);

#[derive(Default)]
struct State {
    routes: HashMap<String, Vec<Route>>,
    /// Followers waiting for the stream to become active.
    waiting: Vec<(u64, oneshot::Sender<bool>)>,
    next_key: u64,
    /// The server refused `task.status_changed` on a stream: nobody asks again.
    refused: bool,
    running: bool,
    active: bool,
    /// Which manager owns the state: one that finds another number here has been retired.
    generation: u64,
    /// Wakes the running manager.
    wake: Arc<Notify>,
}

impl State {
    /// Retires the running manager (it drops its stream when it sees this).
    fn retire(&mut self) {
        self.running = false;
        self.active = false;
        self.generation += 1;
        self.wake.notify_one();
    }

    /// Whether a follower of `id` may join: the server has not refused the
    /// type, and `id` is routed already or there is room for one more task.
    fn admits(&self, id: &str) -> bool {
        !self.refused && (self.routes.contains_key(id) || self.routes.len() < MAX_TASKS)
    }
}

/// The client's `task.status_changed` hub.
pub(crate) struct EventHub {
    /// Whether following by events is on and the server advertised the extension.
    enabled: bool,
    state: Arc<Mutex<State>>,
    /// Streams opened so far (shared with the hub's task).
    opened: Arc<AtomicU64>,
}

impl std::fmt::Debug for EventHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventHub").field("enabled", &self.enabled).field("opened", &self.streams_opened()).finish()
    }
}

/// A follower's hints that its task changed; dropping it unregisters.
pub(crate) struct EventFeed {
    rx: mpsc::Receiver<()>,
    id: String,
    key: u64,
    state: Weak<Mutex<State>>,
}

impl EventFeed {
    /// Waits for the next hint: `true` for one (read the task), `false` when
    /// the hub stopped following by events (poll from now on).
    pub(crate) async fn changed(&mut self) -> bool {
        self.rx.recv().await.is_some()
    }
}

impl Drop for EventFeed {
    fn drop(&mut self) {
        let Some(state) = self.state.upgrade() else { return };
        let mut st = lock(&state);
        if let Some(v) = st.routes.get_mut(&self.id) {
            v.retain(|(k, _)| *k != self.key);
            if v.is_empty() {
                st.routes.remove(&self.id);
            }
        }
        st.waiting.retain(|(k, _)| *k != self.key);
        if st.routes.is_empty() && st.running {
            // The last follower left: the stream closes now, and the next follower opens another.
            st.retire();
        }
    }
}

fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl EventHub {
    /// A hub that follows by events only when `enabled`.
    pub(crate) fn new(enabled: bool) -> Self {
        Self { enabled, state: Arc::default(), opened: Arc::default() }
    }

    /// How many `events/stream` requests this hub has opened.
    pub(crate) fn streams_opened(&self) -> u64 {
        self.opened.load(Ordering::Relaxed)
    }

    /// Registers task `id` and waits for the shared stream to be active;
    /// `None` when the server does not offer it, it could not be opened, or
    /// [`MAX_TASKS`] tasks are routed already (the follower polls).
    pub(crate) async fn follow(&self, era: &Arc<dyn Dialect>, id: &str) -> Option<EventFeed> {
        if !self.enabled {
            return None;
        }
        let (tx, rx) = mpsc::channel(1);
        let (ready_tx, ready_rx) = oneshot::channel();
        let (key, active) = {
            let mut st = lock(&self.state);
            if !st.admits(id) {
                return None;
            }
            st.next_key += 1;
            let key = st.next_key;
            st.routes.entry(id.to_owned()).or_default().push((key, tx));
            if !st.active {
                st.waiting.push((key, ready_tx));
            }
            if !st.running {
                st.running = true;
                st.wake = Arc::new(Notify::new());
                let run = Run { era: Arc::downgrade(era), state: self.state.clone(), generation: st.generation };
                tokio::spawn(manage(run, st.wake.clone(), self.opened.clone()));
            }
            (key, st.active)
        };
        let feed = EventFeed { rx, id: id.to_owned(), key, state: Arc::downgrade(&self.state) };
        let ready = active || matches!(tokio::time::timeout(READY_TIMEOUT, ready_rx).await, Ok(Ok(true)));
        ready.then_some(feed)
    }
}

/// The stream's subscription: every status of every task the caller may see, from `cursor`.
fn query(cursor: Option<String>) -> EventQuery {
    let arguments: Map<String, Value> =
        json!({ "statuses": ["working", "input_required", "completed", "failed", "cancelled"] })
            .as_object()
            .cloned()
            .unwrap_or_default();
    EventQuery::new(TASK_STATUS_CHANGED).arguments(arguments).cursor(cursor)
}

/// Why a stream could not be had.
enum OpenError {
    /// The server refused the subscription.
    Refused,
    /// Anything else (transport, timeout, the client gone).
    Failed,
}

/// Opens the stream from `cursor` and waits for it to become active;
/// returns it and whether the server skipped changes.
async fn open(
    era: &Weak<dyn Dialect>,
    opened: &AtomicU64,
    cursor: Option<String>,
) -> Result<(EventStream, bool), OpenError> {
    let Some(spoken) = era.upgrade() else { return Err(OpenError::Failed) };
    let answer = EventStream::open(spoken.as_ref(), &query(cursor)).await;
    drop(spoken);
    let mut stream = match answer {
        Ok(s) => s,
        Err(ClientError::Rpc(e)) => {
            tracing::debug!(code = e.code, "task.status_changed is not offered on a push stream; polling");
            return Err(OpenError::Refused);
        }
        Err(e) => {
            tracing::debug!("could not open task.status_changed: {e}; polling");
            return Err(OpenError::Failed);
        }
    };
    opened.fetch_add(1, Ordering::Relaxed);
    match tokio::time::timeout(ACTIVE_TIMEOUT, stream.next()).await {
        Ok(Some(Ok(StreamEvent::Active { truncated, .. }))) => Ok((stream, truncated)),
        Ok(Some(Ok(StreamEvent::Terminated(e)))) => {
            tracing::debug!(code = e.code, "task.status_changed stream refused; polling");
            Err(OpenError::Refused)
        }
        _ => Err(OpenError::Failed),
    }
}

/// Hints the followers of the task an occurrence names (all of them when `None`).
fn hint(state: &Mutex<State>, task_id: Option<&str>) {
    let st = lock(state);
    let hint_all = |v: &Vec<Route>| {
        for (_, tx) in v {
            // Full: a hint is already pending, which says the same.
            let _ = tx.try_send(());
        }
    };
    match task_id {
        Some(id) => st.routes.get(id).into_iter().for_each(hint_all),
        None => st.routes.values().for_each(hint_all),
    }
}

/// What one manager works with: the era it opens streams on, the state, and its generation.
struct Run {
    era: Weak<dyn Dialect>,
    state: Arc<Mutex<State>>,
    generation: u64,
}

impl Run {
    /// The state, while this manager still owns it.
    fn owned(&self) -> Option<std::sync::MutexGuard<'_, State>> {
        let st = lock(&self.state);
        (st.generation == self.generation).then_some(st)
    }

    /// Ends following by events: waiting followers hear `false`, feeds close.
    fn stop(&self, refused: bool) {
        let Some(mut st) = self.owned() else { return };
        for (_, w) in st.waiting.drain(..) {
            let _ = w.send(false);
        }
        st.routes.clear();
        st.refused |= refused;
        st.retire();
    }
}

/// The hub's task: keeps the stream open while tasks are routed and routes its occurrences.
async fn manage(run: Run, wake: Arc<Notify>, opened: Arc<AtomicU64>) {
    let state = &run.state;
    let mut cursor: Option<String> = None;
    let mut attempt = 0u32;
    loop {
        if attempt > 0 {
            tokio::time::sleep(REOPEN_BACKOFF * attempt).await;
        }
        let (mut stream, truncated) = match open(&run.era, &opened, cursor.clone()).await {
            Ok(s) => s,
            Err(OpenError::Refused) => return run.stop(true),
            Err(OpenError::Failed) if attempt > 0 && attempt < REOPEN_ATTEMPTS => {
                attempt += 1;
                continue;
            }
            Err(OpenError::Failed) => return run.stop(false),
        };
        {
            let Some(mut st) = run.owned() else { return };
            st.active = true;
            for (_, w) in st.waiting.drain(..) {
                let _ = w.send(true);
            }
        }
        if truncated {
            hint(state, None);
        }
        loop {
            // Retired (nobody follows by events): dropping the stream cancels it.
            if run.owned().is_none() {
                return;
            }
            let next = tokio::select! {
                n = stream.next() => n,
                () = wake.notified() => continue,
            };
            match next {
                Some(Ok(StreamEvent::Event(o))) => hint(state, o.data.get("taskId").and_then(Value::as_str)),
                Some(Ok(StreamEvent::Active { truncated: true, .. })) => hint(state, None),
                Some(Ok(StreamEvent::Terminated(e))) => {
                    tracing::debug!(code = e.code, "task.status_changed stream terminated; reopening");
                    break;
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => tracing::debug!("a task.status_changed message was unreadable: {e}"),
                None => break,
            }
        }
        match run.owned() {
            Some(mut st) => st.active = false,
            None => return,
        }
        // Reopen where the broken stream stopped; with no cursor, from now, and re-read every task.
        cursor = stream.cursor().map(str::to_owned);
        if cursor.is_none() {
            hint(state, None);
        }
        attempt = 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_max_tasks_are_routed() {
        let mut st = State::default();
        for i in 0..MAX_TASKS {
            assert!(st.admits(&format!("t{i}")));
            st.routes.insert(format!("t{i}"), vec![(0, mpsc::channel(1).0)]);
        }
        assert!(!st.admits("one-more"), "past the cap a follower polls");
        assert!(st.admits("t7"), "another follower of a routed task joins it");
        st.refused = true;
        assert!(!st.admits("t7"), "nobody joins once the server refused the type");
    }

    #[tokio::test]
    async fn a_task_holds_at_most_one_pending_hint() {
        let state = Mutex::new(State::default());
        let (tx, mut rx) = mpsc::channel(1);
        lock(&state).routes.insert("a".into(), vec![(1, tx)]);
        for _ in 0..100 {
            hint(&state, Some("a"));
            hint(&state, Some("b"));
            hint(&state, None);
        }
        assert_eq!(rx.try_recv(), Ok(()));
        assert!(rx.try_recv().is_err(), "a hundred changes leave one hint");
    }
}
