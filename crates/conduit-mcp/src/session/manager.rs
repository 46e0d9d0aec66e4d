//! `Sessions`: the store plus the sessions this node is serving.

use super::live::LegacySession;
use super::relay::ResponseRelay;
use super::store::{SessionError, SessionLimits, SessionRecord, SessionStore};
use super::{MemorySessionStore, events::DEFAULT_REPLAY};
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
    /// Carries a client's response to the node holding the call that waits for it, when the
    /// store is shared by several nodes (`None`: one node, or sticky routing).
    pub relay: Option<Arc<dyn ResponseRelay>>,
}

impl Default for SessionConfig {
    fn default() -> Self {
        Self {
            limits: SessionLimits::default(),
            store: Arc::new(MemorySessionStore::new()),
            replay_events: DEFAULT_REPLAY,
            relay: None,
        }
    }
}

impl std::fmt::Debug for SessionConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionConfig")
            .field("limits", &self.limits)
            .field("store", &self.store)
            .field("replay_events", &self.replay_events)
            .field("relay", &self.relay)
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

    /// Sets the per-session replay buffer size.
    pub fn replay_events(mut self, n: usize) -> Self {
        self.replay_events = n;
        self
    }
}

/// The sessions of one server: the store is the truth (existence, owner,
/// expiry); this node keeps the runtime half of those it serves.
pub(crate) struct Sessions {
    pub(crate) config: SessionConfig,
    clock: Arc<dyn Clock>,
    /// This node's tag in the request ids it sends (random per server).
    pub(super) node: Arc<str>,
    live: Mutex<HashMap<String, Arc<LegacySession>>>,
}

impl Sessions {
    pub(crate) fn new(config: SessionConfig, clock: Arc<dyn Clock>) -> Self {
        let node = Arc::from(format!("{:016x}", rand::random::<u64>()));
        Self { config, clock, node, live: Mutex::default() }
    }

    pub(super) fn live(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<LegacySession>>> {
        self.live.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn now(&self) -> u64 {
        self.clock.now_ms()
    }

    /// Stores a new HTTP session (the cap applies) and serves it here.
    pub(crate) async fn open(&self, record: SessionRecord) -> Result<Arc<LegacySession>, SessionError> {
        self.config.store.create(record.clone(), self.config.limits).await?;
        let now = self.now();
        let idle = self.config.limits.idle_ms;
        let s = Arc::new(LegacySession::http(record.clone(), self.config.replay_events, self.node.clone()));
        let mut live = self.live();
        live.retain(|_, s| {
            let keep = s.is_live(now, idle);
            if !keep {
                s.end();
            }
            keep
        });
        live.insert(record.id, s.clone());
        Ok(s)
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
                let s = Arc::new(LegacySession::http(record, self.config.replay_events, self.node.clone()));
                Ok(self.live().entry(id.to_owned()).or_insert(s).clone())
            }
        }
    }

    /// Drops expired sessions: from the store, and the runtime half this node holds.
    /// Returns how many the store removed.
    pub(crate) async fn sweep(&self) -> Result<usize, SessionError> {
        let (now, idle) = (self.now(), self.config.limits.idle_ms);
        let removed = self.config.store.sweep(now, idle).await?;
        let expired: Vec<Arc<LegacySession>> = {
            let mut live = self.live();
            let ids: Vec<String> =
                live.iter().filter(|(_, s)| !s.is_live(now, idle)).map(|(id, _)| id.clone()).collect();
            ids.iter().filter_map(|id| live.remove(id)).collect()
        };
        expired.iter().for_each(|s| s.end());
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
