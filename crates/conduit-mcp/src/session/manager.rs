//! `Sessions`: the store plus the sessions this node is serving.

use super::MemorySessionStore;
use super::events::{
    DEFAULT_OVERSIZE_REPLAY_BYTES_PER_CLIENT, DEFAULT_REPLAY, DEFAULT_REPLAY_BYTES, OversizePool, ReplayBounds,
    ReplayPolicy,
};
use super::live::LegacySession;
use super::relay::ResponseRelay;
use super::retained::{DEFAULT_RETAINED_BYTES, Retained};
use super::store::{SessionError, SessionLimits, SessionRecord, SessionStore};
use super::waits::{
    DEFAULT_ABANDON_AFTER, DEFAULT_WAITING_BYTES_PER_CLIENT, DEFAULT_WAITING_BYTES_PER_SESSION,
    DEFAULT_WAITING_PER_CLIENT, DEFAULT_WAITING_PER_SESSION, WaitPolicy,
};
use crate::clock::Clock;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// How legacy sessions are kept (builder option, or the `[sessions]` TOML table).
#[derive(Clone)]
#[non_exhaustive]
#[must_use]
pub struct SessionConfig {
    /// The cap, idle timeout and eviction rule.
    pub limits: SessionLimits,
    /// Where session records live (default: [`MemorySessionStore`]).
    pub store: Arc<dyn SessionStore>,
    /// Events kept per session for `Last-Event-ID` replay.
    pub replay_events: usize,
    /// Bytes of messages (as JSON) kept per session for replay; the newest message is
    /// kept even when larger, within [`oversize_replay_bytes_per_client`](Self::oversize_replay_bytes_per_client).
    pub replay_bytes: usize,
    /// Bytes of messages larger than [`replay_bytes`](Self::replay_bytes) by themselves (large
    /// answers) that one client's sessions on this node keep for replay together. A message
    /// that does not fit still goes to its stream's connection but is not kept: a client that
    /// left before it arrived does not get it by `Last-Event-ID`.
    pub oversize_replay_bytes_per_client: usize,
    /// Carries a client's response to the node holding the call that waits for it, when the
    /// store is shared by several nodes (`None`: one node, or sticky routing).
    pub relay: Option<Arc<dyn ResponseRelay>>,
    /// Server→client requests one session may have awaiting answers at once.
    pub max_waiting_per_session: usize,
    /// Server→client requests one client (principal, or address) may have awaiting
    /// answers at once, over its sessions on this node.
    pub max_waiting_per_client: usize,
    /// Bytes one session's waiting requests may keep (each its params and `_meta`, as
    /// JSON, to resume with the answers).
    pub max_waiting_bytes_per_session: usize,
    /// Bytes one client's waiting requests may keep, over its sessions on this node.
    pub max_waiting_bytes_per_client: usize,
    /// A request waiting on the client's answer whose stream has had no connection this
    /// long (the client left and did not resume) stops waiting.
    pub abandon_after: std::time::Duration,
    /// Bytes all sessions on this node retain together at most: their replay buffers (large
    /// messages included) and the requests waiting on their clients, each counted with 64 KiB
    /// for its call and stream (default 256 MiB, 1 024 sessions' default replay budgets). What would pass it is not kept (a message still
    /// reaches its open connection; a request that would wait on its client is refused),
    /// and `initialize` is refused with `-32000` unless one more session's
    /// [`replay_bytes`](Self::replay_bytes) fits under it.
    pub max_retained_bytes: usize,
}

impl Default for SessionConfig {
    fn default() -> Self {
        Self {
            limits: SessionLimits::default(),
            store: Arc::new(MemorySessionStore::new()),
            replay_events: DEFAULT_REPLAY,
            replay_bytes: DEFAULT_REPLAY_BYTES,
            oversize_replay_bytes_per_client: DEFAULT_OVERSIZE_REPLAY_BYTES_PER_CLIENT,
            relay: None,
            max_waiting_per_session: DEFAULT_WAITING_PER_SESSION,
            max_waiting_per_client: DEFAULT_WAITING_PER_CLIENT,
            max_waiting_bytes_per_session: DEFAULT_WAITING_BYTES_PER_SESSION,
            max_waiting_bytes_per_client: DEFAULT_WAITING_BYTES_PER_CLIENT,
            abandon_after: DEFAULT_ABANDON_AFTER,
            max_retained_bytes: DEFAULT_RETAINED_BYTES,
        }
    }
}

impl std::fmt::Debug for SessionConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionConfig")
            .field("limits", &self.limits)
            .field("store", &self.store)
            .field("replay_events", &self.replay_events)
            .field("replay_bytes", &self.replay_bytes)
            .field("oversize_replay_bytes_per_client", &self.oversize_replay_bytes_per_client)
            .field("relay", &self.relay)
            .field("max_waiting_per_session", &self.max_waiting_per_session)
            .field("max_waiting_per_client", &self.max_waiting_per_client)
            .field("max_waiting_bytes_per_session", &self.max_waiting_bytes_per_session)
            .field("max_waiting_bytes_per_client", &self.max_waiting_bytes_per_client)
            .field("abandon_after", &self.abandon_after)
            .field("max_retained_bytes", &self.max_retained_bytes)
            .finish()
    }
}

impl SessionConfig {
    /// Sets the idle timeout.
    pub fn idle_timeout(mut self, d: std::time::Duration) -> Self {
        self.limits.idle_ms = d.as_millis() as u64;
        self
    }

    /// Sets the cap on live sessions.
    pub fn max_sessions(mut self, n: usize) -> Self {
        self.limits.max_sessions = n;
        self
    }

    /// Sets the cap on one client's live sessions (the principal's, or without
    /// authentication the address's).
    pub fn max_sessions_per_client(mut self, n: usize) -> Self {
        self.limits.max_per_client = n;
        self
    }

    /// Sets how long a session must be idle before the cap may evict it.
    pub fn evict_idle_after(mut self, d: std::time::Duration) -> Self {
        self.limits.evict_idle_ms = d.as_millis() as u64;
        self
    }

    /// Sets the store.
    pub fn store(mut self, store: impl SessionStore) -> Self {
        self.store = Arc::new(store);
        self
    }

    /// Sets the relay that forwards a client's response to the node holding the call
    /// (with a store shared by several nodes; see `conduit_mcp_sql::PgNotifier`).
    pub fn relay(mut self, relay: impl ResponseRelay) -> Self {
        self.relay = Some(Arc::new(relay));
        self
    }

    /// Sets the per-session replay buffer size, in events.
    pub fn replay_events(mut self, n: usize) -> Self {
        self.replay_events = n;
        self
    }

    /// Sets the caps on requests waiting on the client: per session, and per client
    /// over its sessions on this node.
    pub fn max_waiting(mut self, per_session: usize, per_client: usize) -> Self {
        self.max_waiting_per_session = per_session;
        self.max_waiting_per_client = per_client;
        self
    }

    /// Sets the caps on the bytes requests waiting on the client keep (their params
    /// and `_meta`): per session, and per client over its sessions on this node.
    pub fn max_waiting_bytes(mut self, per_session: usize, per_client: usize) -> Self {
        self.max_waiting_bytes_per_session = per_session;
        self.max_waiting_bytes_per_client = per_client;
        self
    }

    /// Sets how long a waiting request's stream may stay without a connection.
    pub fn abandon_after(mut self, d: std::time::Duration) -> Self {
        self.abandon_after = d;
        self
    }

    /// Sets the per-session replay buffer size, in bytes.
    pub fn replay_bytes(mut self, n: usize) -> Self {
        self.replay_bytes = n;
        self
    }

    /// Sets the bytes of messages larger than a session's replay budget that one client's
    /// sessions on this node keep for replay together.
    pub fn oversize_replay_bytes_per_client(mut self, n: usize) -> Self {
        self.oversize_replay_bytes_per_client = n;
        self
    }

    /// Sets the bytes all sessions on this node retain together at most (see
    /// [`max_retained_bytes`](Self::max_retained_bytes)).
    pub fn max_retained_bytes(mut self, n: usize) -> Self {
        self.max_retained_bytes = n;
        self
    }
}

/// What a node holds for the legacy sessions it serves ([`Server::session_stats`](crate::Server::session_stats)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionStats {
    /// Sessions this node holds (their streams, replay buffers and waiting requests).
    pub held: usize,
    /// Bytes of messages in their replay buffers.
    pub replay_bytes: usize,
    /// Server→client requests awaiting the clients' answers.
    pub waiting: usize,
    /// Bytes their callers keep meanwhile (params and `_meta`, as JSON).
    pub waiting_bytes: usize,
    /// Bytes counted against [`SessionConfig::max_retained_bytes`]: the replay buffers',
    /// and the waiting requests' (each also counts 64 KiB for its call and stream).
    pub retained_bytes: usize,
}

/// The sessions of one server: the store is the truth (existence, owner,
/// expiry); this node keeps the runtime half of those it serves.
pub(crate) struct Sessions {
    pub(crate) config: SessionConfig,
    clock: Arc<dyn Clock>,
    /// This node's tag in the request ids it sends (random per server).
    pub(super) node: Arc<str>,
    live: Mutex<HashMap<String, Arc<LegacySession>>>,
    /// The bounds on requests waiting on clients, shared by every session held here.
    waits: Arc<WaitPolicy>,
    /// The clients' messages kept for replay beyond their sessions' budgets.
    oversize: Arc<OversizePool>,
    /// What all sessions here retain, under `config.max_retained_bytes`.
    retained: Arc<Retained>,
    /// What each session keeps for replay, shared by this node's sessions.
    replay: Arc<ReplayPolicy>,
}

impl Sessions {
    pub(crate) fn new(config: SessionConfig, clock: Arc<dyn Clock>) -> Self {
        let node = Arc::from(format!("{:016x}", rand::random::<u64>()));
        let retained = Arc::new(Retained::new(config.max_retained_bytes));
        let waits = Arc::new(WaitPolicy {
            per_session: config.max_waiting_per_session,
            per_client: config.max_waiting_per_client,
            abandon_after: config.abandon_after,
            bytes_per_session: config.max_waiting_bytes_per_session,
            bytes_per_client: config.max_waiting_bytes_per_client,
            counts: Default::default(),
            bytes: Default::default(),
            retained: Some(retained.clone()),
        });
        let oversize = Arc::new(OversizePool::new(config.oversize_replay_bytes_per_client));
        let replay = Arc::new(ReplayPolicy {
            events: config.replay_events,
            bytes: config.replay_bytes,
            oversize: Some(oversize.clone()),
            retained: Some(retained.clone()),
        });
        Self { config, clock, node, live: Mutex::default(), waits, oversize, retained, replay }
    }

    pub(super) fn live(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<LegacySession>>> {
        self.live.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The replay bounds of a session of `record`'s client.
    fn replay(&self, record: &SessionRecord) -> ReplayBounds {
        ReplayBounds { policy: self.replay.clone(), client: self.oversize.client(&record.client_key) }
    }

    pub(crate) fn now(&self) -> u64 {
        self.clock.now_ms()
    }

    /// Stores a new HTTP session (the caps apply) and serves it here. What the store
    /// removed to make room, and what expired, leaves this node at once. Refused while the
    /// node's sessions retain so much that one more session's replay budget would not fit.
    /// The sessions in use here are marked seen first, so none of them is evicted for it.
    pub(crate) async fn open(&self, record: SessionRecord) -> Result<Arc<LegacySession>, SessionError> {
        if !self.retained.has_room(self.config.replay_bytes) {
            crate::metrics::limited("session_bytes");
            return Err(SessionError::RetainedBytesReached);
        }
        self.keep_in_use_seen().await;
        let created = self.config.store.create(record.clone(), self.config.limits).await?;
        let now = self.now();
        let idle = self.config.limits.idle_ms;
        let s =
            Arc::new(LegacySession::http(record.clone(), self.replay(&record), self.waits.clone(), self.node.clone()));
        let gone: Vec<Arc<LegacySession>> = {
            let mut live = self.live();
            let ids: Vec<String> = live
                .iter()
                .filter(|(_, s)| !s.is_live(now, idle) || created.removed.contains(s.digest()))
                .map(|(id, _)| id.clone())
                .collect();
            let gone = ids.iter().filter_map(|id| live.remove(id)).collect();
            live.insert(record.id, s.clone());
            gone
        };
        gone.iter().for_each(|s| s.end());
        Ok(s)
    }

    /// An open stream of session `s` is activity: its last-seen time moves (in the store
    /// too) once a quarter of the eviction and idle windows has passed since the last
    /// move, so a session with a stream open is never idle long enough to be evicted or
    /// expire, while keep-alives cost the store one write per window, not one each.
    pub(crate) async fn stream_alive(&self, s: &LegacySession) {
        if self.seen_due(s, self.now()) {
            self.mark_seen(s).await;
        }
    }

    /// How often an open stream wakes to keep its session seen (real time): a quarter of the
    /// shorter of the eviction and idle windows, at least 250 ms.
    pub(crate) fn seen_every(&self) -> std::time::Duration {
        let limits = self.config.limits;
        std::time::Duration::from_millis((limits.evict_idle_ms.min(limits.idle_ms) / 4).max(250))
    }

    /// Whether session `s`'s last-seen time is due to move (a quarter window old).
    fn seen_due(&self, s: &LegacySession, now: u64) -> bool {
        let limits = self.config.limits;
        s.persisted && now.saturating_sub(s.last_seen_ms()) >= limits.evict_idle_ms.min(limits.idle_ms) / 4
    }

    /// Moves session `s`'s last-seen time to now, in the store too.
    async fn mark_seen(&self, s: &LegacySession) {
        let r = s.record();
        match self.config.store.touch_seen(&r.id, r.owner.as_deref(), self.now(), self.config.limits.idle_ms).await {
            Ok(seen) => s.edit(|r| r.last_seen_ms = seen),
            Err(e) => tracing::debug!(error = %e, "a session in use could not be marked as used"),
        }
    }

    /// Marks every session in use here (a stream open, a request in flight) as seen when it
    /// is due, before a decision that evicts or expires idle sessions: a session in use is
    /// not idle, however long since its last request or frame.
    async fn keep_in_use_seen(&self) {
        let now = self.now();
        let due: Vec<Arc<LegacySession>> =
            self.live().values().filter(|s| s.in_use() && self.seen_due(s, now)).cloned().collect();
        futures_util::future::join_all(due.iter().map(|s| self.mark_seen(s))).await;
    }

    /// What this node holds for the sessions it serves.
    pub(crate) fn stats(&self) -> SessionStats {
        let live = self.live();
        let replay_bytes = live.values().map(|s| s.events.bytes()).sum();
        SessionStats {
            held: live.len(),
            replay_bytes,
            waiting: self.waits.counts.total(),
            waiting_bytes: self.waits.bytes.total(),
            retained_bytes: self.retained.used(),
        }
    }

    /// The live session `id` of `owner`, touched; `NotFound` for unknown, expired and foreign ones.
    ///
    /// A session this node already holds is only touched in the store (its record is here);
    /// one it does not (opened on another node, or before a restart) is read from the store.
    pub(crate) async fn resolve(&self, id: &str, owner: Option<&str>) -> Result<Arc<LegacySession>, SessionError> {
        let (now, idle) = (self.now(), self.config.limits.idle_ms);
        let held = self.live().get(id).cloned();
        let store = &self.config.store;
        match held {
            // Another principal presenting the id: unknown to it, and nothing changes.
            Some(s) if !s.owned_by(owner) => Err(SessionError::NotFound),
            Some(s) => match store.touch_seen(id, owner, now, idle).await {
                Ok(seen) => {
                    s.edit(|r| r.last_seen_ms = seen);
                    Ok(s)
                }
                Err(e) => {
                    // Expired, or deleted by another node: this node's half goes too.
                    if self.live().remove(id).is_some() {
                        s.end();
                    }
                    Err(e)
                }
            },
            None => {
                let record = store.touch(id, owner, now, idle).await?;
                let replay = self.replay(&record);
                let s = Arc::new(LegacySession::http(record, replay, self.waits.clone(), self.node.clone()));
                Ok(self.live().entry(id.to_owned()).or_insert(s).clone())
            }
        }
    }

    /// Drops expired sessions: from the store, and the runtime half this node holds.
    /// A session held here that another node sharing the store may have evicted (one idle
    /// at least the eviction window) is looked up, and dropped here when it is gone.
    /// Returns how many the store removed.
    pub(crate) async fn sweep(&self) -> Result<usize, SessionError> {
        self.keep_in_use_seen().await;
        let (now, limits) = (self.now(), self.config.limits);
        let removed = self.config.store.sweep(now, limits.idle_ms).await?;
        let (mut gone, evictable): (Vec<_>, Vec<_>) = {
            let mut live = self.live();
            let ids: Vec<String> =
                live.iter().filter(|(_, s)| !s.is_live(now, limits.idle_ms)).map(|(id, _)| id.clone()).collect();
            let gone = ids.iter().filter_map(|id| live.remove(id)).collect();
            let old = |s: &LegacySession| now.saturating_sub(s.last_seen_ms()) >= limits.evict_idle_ms;
            (gone, live.values().filter(|s| s.persisted && old(s)).cloned().collect())
        };
        for s in evictable {
            let r = s.record();
            // `now` = its own last-seen time: an existence check that moves nothing.
            if let Err(SessionError::NotFound) =
                self.config.store.touch_seen(&r.id, r.owner.as_deref(), r.last_seen_ms, limits.idle_ms).await
                && let Some(s) = self.live().remove(&r.id)
            {
                gone.push(s);
            }
        }
        gone.iter().for_each(|s| s.end());
        Ok(removed)
    }

    /// Sweeps every `every` until `stop` fires (started once with the server).
    pub(crate) fn spawn_sweeper(
        self: &Arc<Self>,
        every: std::time::Duration,
        stop: tokio_util::sync::CancellationToken,
    ) {
        let me = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.tick().await;
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = stop.cancelled() => return,
                }
                let Some(s) = me.upgrade() else { return };
                match s.sweep().await {
                    Ok(n) if n > 0 => tracing::debug!(removed = n, "expired sessions swept"),
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "session sweep failed"),
                }
            }
        });
    }

    /// Writes a session's changed record to the store.
    pub(crate) async fn save(&self, s: &LegacySession) -> Result<(), SessionError> {
        if !s.persisted {
            return Ok(());
        }
        self.config.store.update(&s.record()).await
    }

    /// Ends session `id` of `owner` (DELETE).
    pub(crate) async fn close(&self, id: &str, owner: Option<&str>) -> Result<(), SessionError> {
        self.config.store.delete(id, owner).await?;
        if let Some(s) = self.live().remove(id) {
            s.end();
        }
        Ok(())
    }
}
