//! One `subscriptions/listen` stream per client for every task it follows.
//!
//! A follower subscribes with its task id; the hub (re)opens the stream with
//! the whole set of ids (make before break: the new stream is acknowledged
//! before the old one is dropped), tells each follower whether the server
//! acknowledged its id, and routes each `notifications/tasks` to the
//! followers of that task. A server without listen, or one that does not
//! acknowledge an id, leaves that follower polling.
//!
//! Followers register before their first `tasks/get`, and the hub waits
//! while registrations keep arriving (5 ms steps, at most 100 ms) before it
//! opens: 1 000 tasks followed at once share one listen request. A stream
//! names at most 1 000 ids (the server's cap); followers past it poll.

use super::era::Dialect;
use super::wire::Replies;
use crate::protocol::jsonrpc::Incoming;
use crate::protocol::methods::{LISTEN, SUBSCRIPTIONS_ACKNOWLEDGED, TASKS_NOTIFICATION};
use crate::protocol::tasks::DetailedTask;
use serde_json::{Map, Value, json};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::sync::{Notify, mpsc, oneshot};
use tokio::task::AbortHandle;

/// The most task ids one listen request names (the server's cap).
const MAX_IDS: usize = 1000;
/// How long to wait for an acknowledgment.
const ACK_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the hub waits for more subscriptions before it opens a stream:
/// it waits in steps of [`GATHER`] while more keep arriving, up to this.
const MAX_GATHER: Duration = Duration::from_millis(100);
/// One step of the gathering wait.
const GATHER: Duration = Duration::from_millis(5);

type Follower = (u64, mpsc::UnboundedSender<DetailedTask>);

#[derive(Default)]
struct State {
    followers: HashMap<String, Vec<Follower>>,
    waiting: HashMap<String, Vec<oneshot::Sender<bool>>>,
    next_key: u64,
    unsupported: bool,
    running: bool,
}

/// The client's listen hub.
#[derive(Default)]
pub(crate) struct Hub {
    state: Arc<Mutex<State>>,
    wake: Arc<Notify>,
    /// Listen requests opened so far (shared with the hub's task).
    opened: Arc<AtomicU64>,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub").field("opened", &self.streams_opened()).finish_non_exhaustive()
    }
}

/// A follower's feed of pushed task states; dropping it unsubscribes.
pub(crate) struct Subscription {
    pub(crate) rx: mpsc::UnboundedReceiver<DetailedTask>,
    id: String,
    key: u64,
    state: Weak<Mutex<State>>,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(state) = self.state.upgrade() {
            let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(v) = st.followers.get_mut(&self.id) {
                v.retain(|(k, _)| *k != self.key);
                if v.is_empty() {
                    st.followers.remove(&self.id);
                }
            }
            // A follower that left before its acknowledgment no longer waits for one.
            if let Some(w) = st.waiting.get_mut(&self.id) {
                w.retain(|tx| !tx.is_closed());
                if w.is_empty() {
                    st.waiting.remove(&self.id);
                }
            }
        }
    }
}

/// A subscription the hub has taken but the server has not yet acknowledged.
///
/// Registering is synchronous, so followers started together (say 1 000 of
/// them) all join the same listen request; the follower reads the task while
/// the hub gathers and opens the stream, then waits here.
pub(crate) struct Pending {
    // Declared first so it closes before `sub` unsubscribes (see `Subscription::drop`).
    ack: oneshot::Receiver<bool>,
    sub: Subscription,
}

impl Pending {
    /// The subscription once the server acknowledged its task; `None` when it
    /// did not (or the server does not push): the follower polls.
    pub(crate) async fn acknowledged(self) -> Option<Subscription> {
        let Self { ack, sub } = self;
        match tokio::time::timeout(ACK_TIMEOUT + MAX_GATHER + Duration::from_secs(1), ack).await {
            Ok(Ok(true)) => Some(sub),
            _ => None,
        }
    }
}

impl Hub {
    /// How many listen requests this client has opened (for tests and benchmarks).
    pub(crate) fn streams_opened(&self) -> u64 {
        self.opened.load(Ordering::Relaxed)
    }

    /// Registers for pushes on `id` (the stream is opened or replaced shortly
    /// after, over `era`); `None` when this server is known not to push.
    pub(crate) fn register(&self, era: &Arc<dyn Dialect>, id: &str) -> Option<Pending> {
        let (tx, rx) = mpsc::unbounded_channel();
        let (ack_tx, ack_rx) = oneshot::channel();
        let key = {
            let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
            if st.unsupported {
                return None;
            }
            st.next_key += 1;
            let key = st.next_key;
            st.followers.entry(id.to_owned()).or_default().push((key, tx));
            st.waiting.entry(id.to_owned()).or_default().push(ack_tx);
            if !st.running {
                st.running = true;
                tokio::spawn(manage(Arc::downgrade(era), self.state.clone(), self.wake.clone(), self.opened.clone()));
            }
            key
        };
        let sub = Subscription { rx, id: id.to_owned(), key, state: Arc::downgrade(&self.state) };
        self.wake.notify_one();
        Some(Pending { ack: ack_rx, sub })
    }
}

/// Tells the followers waiting on ids the live stream asked for whether the
/// server acknowledged them; ids that came later wait for the next stream.
fn resolve(st: &mut State, requested: &HashSet<String>, acked: &HashSet<String>) {
    let ids: Vec<String> = st.waiting.keys().filter(|id| requested.contains(*id)).cloned().collect();
    for id in ids {
        let ok = acked.contains(&id);
        for w in st.waiting.remove(&id).unwrap_or_default() {
            let _ = w.send(ok);
        }
        if !ok {
            st.followers.remove(&id);
        }
    }
}

/// Hands one message of the listen stream to the followers of its task.
fn route(state: &Mutex<State>, msg: Incoming) {
    let Incoming::Notification { method, params: Some(mut p) } = msg else { return };
    if method != TASKS_NOTIFICATION {
        return;
    }
    if let Some(m) = p.as_object_mut() {
        m.remove("_meta");
    }
    let Ok(task) = serde_json::from_value::<DetailedTask>(p) else { return };
    let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(v) = st.followers.get_mut(&task.task.task_id) {
        v.retain(|(_, tx)| tx.send(task.clone()).is_ok());
    }
}

/// How many subscriptions wait for an acknowledgment.
fn waiting(state: &Mutex<State>) -> usize {
    state.lock().unwrap_or_else(|p| p.into_inner()).waiting.values().map(Vec::len).sum()
}

/// The ids the next stream asks for (those the live stream carries first, at
/// most [`MAX_IDS`]) and the followed ids left out.
fn choose<'a>(followed: impl Iterator<Item = &'a String>, live: &HashSet<String>) -> (Vec<String>, HashSet<String>) {
    let (mut ids, fresh): (Vec<String>, Vec<String>) = followed.cloned().partition(|id| live.contains(id));
    ids.extend(fresh);
    let left_out = if ids.len() > MAX_IDS { ids.split_off(MAX_IDS).into_iter().collect() } else { HashSet::new() };
    (ids, left_out)
}

/// Opens a listen request for `ids` and waits for its acknowledgment.
async fn open(era: &dyn Dialect, opened: &AtomicU64, ids: &[String]) -> Result<(Replies, HashSet<String>), ()> {
    let mut params = Map::new();
    params.insert("notifications".into(), json!({ "taskIds": ids }));
    let (_, mut replies) = era.open(LISTEN, params).await.map_err(drop)?;
    opened.fetch_add(1, Ordering::Relaxed);
    let first = tokio::time::timeout(ACK_TIMEOUT, async {
        loop {
            match replies.recv().await {
                Some(Incoming::Notification { method, params }) if method == SUBSCRIPTIONS_ACKNOWLEDGED => {
                    return Some(params.unwrap_or(Value::Null));
                }
                Some(Incoming::Notification { .. }) => continue,
                _ => return None,
            }
        }
    })
    .await;
    let Ok(Some(ack)) = first else { return Err(()) };
    let acked = ack
        .pointer("/notifications/taskIds")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    Ok((replies, acked))
}

/// How long a replaced stream stays open: what the server sent on it before
/// the new one was acknowledged is still on its way.
const OVERLAP: Duration = Duration::from_secs(2);

/// Forwards one stream into the merged channel, tagged with its number;
/// `None` says the stream ended.
fn forward(n: u64, mut replies: Replies, merged: mpsc::UnboundedSender<(u64, Option<Incoming>)>) -> AbortHandle {
    tokio::spawn(async move {
        while let Some(m) = replies.recv().await {
            if merged.send((n, Some(m))).is_err() {
                return;
            }
        }
        let _ = merged.send((n, None));
    })
    .abort_handle()
}

/// The hub's one task: keeps a stream matching the followed ids and routes pushes.
async fn manage(era: Weak<dyn Dialect>, state: Arc<Mutex<State>>, wake: Arc<Notify>, opened: Arc<AtomicU64>) {
    let (merged_tx, mut merged) = mpsc::unbounded_channel::<(u64, Option<Incoming>)>();
    // The live stream: its number, its forwarder, and what it asked for and got.
    let mut live: Option<(u64, AbortHandle)> = None;
    let mut streams = 0u64;
    let mut requested: HashSet<String> = HashSet::new();
    let mut acked: HashSet<String> = HashSet::new();
    loop {
        let reopen = {
            let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
            if st.followers.is_empty() && st.waiting.is_empty() {
                st.running = false;
                if let Some((_, h)) = live.take() {
                    h.abort();
                }
                return;
            }
            if !st.waiting.is_empty() {
                resolve(&mut st, &requested, &acked);
            }
            st.waiting.keys().any(|id| !requested.contains(id))
        };
        if reopen {
            // Let a burst of subscriptions gather into one request: wait while more arrive.
            let began = tokio::time::Instant::now();
            let mut seen = waiting(&state);
            loop {
                tokio::time::sleep(GATHER).await;
                let now = waiting(&state);
                if now == seen || began.elapsed() >= MAX_GATHER {
                    break;
                }
                seen = now;
            }
            let (ids, left_out) = {
                let st = state.lock().unwrap_or_else(|p| p.into_inner());
                choose(st.followers.keys(), &requested)
            };
            let Some(spoken) = era.upgrade() else { return };
            let answer = open(spoken.as_ref(), &opened, &ids).await;
            drop(spoken);
            match answer {
                Ok((replies, ack)) => {
                    streams += 1;
                    let handle = forward(streams, replies, merged_tx.clone());
                    if let Some((_, old)) = live.replace((streams, handle)) {
                        // Make before break: the old stream closes once what it carries has arrived.
                        tokio::spawn(async move {
                            tokio::time::sleep(OVERLAP).await;
                            old.abort();
                        });
                    }
                    requested = ids.into_iter().collect();
                    acked = ack;
                    let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
                    resolve(&mut st, &requested, &acked);
                    // Past the server's cap of ids per stream: those followers poll.
                    resolve(&mut st, &left_out, &HashSet::new());
                }
                Err(()) => {
                    // No push from this server: everyone polls from now on.
                    let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
                    st.unsupported = true;
                    let all: HashSet<String> = st.waiting.keys().cloned().collect();
                    resolve(&mut st, &all, &HashSet::new());
                    st.followers.clear();
                    st.running = false;
                    return;
                }
            }
            continue;
        }
        let next = tokio::select! {
            m = merged.recv() => m,
            () = wake.notified() => continue,
        };
        match next {
            Some((_, Some(m))) => route(&state, m),
            Some((n, None)) if live.as_ref().is_some_and(|(l, _)| *l == n) => {
                // The live stream ended: followers fall back to polling; a later subscriber reopens.
                live = None;
                requested.clear();
                acked.clear();
                state.lock().unwrap_or_else(|p| p.into_inner()).followers.clear();
            }
            _ => {}
        }
    }
}
