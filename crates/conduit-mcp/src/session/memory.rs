//! `MemorySessionStore`: sessions in one process, bounded by the caps.

use super::relay::session_digest;
use super::store::{Created, SessionError, SessionLimits, SessionRecord, SessionStore};
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::Mutex;

/// The default session store: a map under one short lock.
///
/// Eviction at a cap scans for the least recently seen session; it runs only
/// when a cap is reached, so its cost is paid by the request that needs room.
#[derive(Debug, Default)]
pub struct MemorySessionStore {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    sessions: HashMap<String, Box<SessionRecord>>,
    /// Sessions stored per client key (live or not yet swept).
    per_client: HashMap<String, usize>,
}

impl Inner {
    /// How many sessions `key` has stored.
    fn held_by(&self, key: &str) -> usize {
        self.per_client.get(key).copied().unwrap_or(0)
    }

    fn remove(&mut self, id: &str) -> Option<Box<SessionRecord>> {
        let gone = self.sessions.remove(id)?;
        if let Some(n) = self.per_client.get_mut(&gone.client_key) {
            *n -= 1;
            if *n == 0 {
                self.per_client.remove(&gone.client_key);
            }
        }
        Some(gone)
    }

    /// Removes the sessions `drop` selects; returns their digests.
    fn remove_where(&mut self, drop: impl Fn(&SessionRecord) -> bool) -> Vec<[u8; 32]> {
        let ids: Vec<String> = self.sessions.values().filter(|s| drop(s)).map(|s| s.id.clone()).collect();
        ids.iter().filter_map(|id| self.remove(id)).map(|s| session_digest(&s.id)).collect()
    }

    /// The least recently seen session `candidate` selects that is idle at least `evict_idle_ms`.
    fn oldest_idle(&self, now: u64, evict_idle_ms: u64, candidate: impl Fn(&SessionRecord) -> bool) -> Option<String> {
        self.sessions
            .values()
            .filter(|s| candidate(s) && now.saturating_sub(s.last_seen_ms) >= evict_idle_ms)
            .min_by_key(|s| s.last_seen_ms)
            .map(|s| s.id.clone())
    }
}

impl MemorySessionStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Session `id` of `owner` with `last_seen_ms` moved to `now_ms`; an expired one is removed.
fn touched<'a>(
    m: &'a mut Inner,
    id: &str,
    owner: Option<&str>,
    now_ms: u64,
    idle_ms: u64,
) -> Result<&'a mut SessionRecord, SessionError> {
    let live = match m.sessions.get(id) {
        None => return Err(SessionError::NotFound),
        Some(s) if s.owner.as_deref() != owner => return Err(SessionError::NotFound),
        Some(s) => s.is_live(now_ms, idle_ms),
    };
    if !live {
        m.remove(id);
        return Err(SessionError::NotFound);
    }
    let s = m.sessions.get_mut(id).ok_or(SessionError::NotFound)?;
    s.last_seen_ms = s.last_seen_ms.max(now_ms);
    Ok(s)
}

#[async_trait]
impl SessionStore for MemorySessionStore {
    async fn create(&self, record: SessionRecord, limits: SessionLimits) -> Result<Created, SessionError> {
        let now = record.last_seen_ms;
        let mut m = self.lock();
        if m.sessions.contains_key(&record.id) {
            return Err(SessionError::Duplicate);
        }
        let (key, idle, evict_idle) = (record.client_key.as_str(), limits.idle_ms, limits.evict_idle_ms);
        let mut removed = Vec::new();
        let mut evict: Vec<String> = Vec::new();
        let per_client = limits.per_client();
        if m.held_by(key) >= per_client {
            removed.extend(m.remove_where(|s| s.client_key == key && !s.is_live(now, idle)));
            if m.held_by(key) >= per_client {
                let Some(id) = m.oldest_idle(now, evict_idle, |s| s.client_key == key) else {
                    return Err(SessionError::ClientLimitReached);
                };
                evict.push(id);
            }
        }
        if m.sessions.len() - evict.len() >= limits.max_sessions {
            // What is evicted is live (the client's expired sessions went above), so it stays in `evict`.
            removed.extend(m.remove_where(|s| !s.is_live(now, idle)));
            while m.sessions.len() - evict.len() >= limits.max_sessions {
                let Some(id) = m.oldest_idle(now, evict_idle, |s| !evict.contains(&s.id)) else {
                    return Err(SessionError::LimitReached);
                };
                evict.push(id);
            }
        }
        for id in &evict {
            if m.remove(id).is_some() {
                removed.push(session_digest(id));
            }
        }
        *m.per_client.entry(record.client_key.clone()).or_insert(0) += 1;
        m.sessions.insert(record.id.clone(), Box::new(record));
        Ok(Created { removed })
    }

    async fn touch(
        &self,
        id: &str,
        owner: Option<&str>,
        now_ms: u64,
        idle_ms: u64,
    ) -> Result<SessionRecord, SessionError> {
        touched(&mut self.lock(), id, owner, now_ms, idle_ms).map(|s| SessionRecord::clone(s))
    }

    async fn touch_seen(&self, id: &str, owner: Option<&str>, now_ms: u64, idle_ms: u64) -> Result<u64, SessionError> {
        touched(&mut self.lock(), id, owner, now_ms, idle_ms).map(|s| s.last_seen_ms)
    }

    async fn update(&self, record: &SessionRecord) -> Result<(), SessionError> {
        let mut m = self.lock();
        match m.sessions.get_mut(&record.id) {
            Some(s) if s.owner == record.owner => {
                s.client_capabilities = record.client_capabilities.clone();
                s.log_level = record.log_level.clone();
                s.initialized = record.initialized;
                s.last_seen_ms = s.last_seen_ms.max(record.last_seen_ms);
                Ok(())
            }
            _ => Err(SessionError::NotFound),
        }
    }

    async fn delete(&self, id: &str, owner: Option<&str>) -> Result<(), SessionError> {
        let mut m = self.lock();
        match m.sessions.get(id) {
            Some(s) if s.owner.as_deref() == owner => {
                m.remove(id);
                Ok(())
            }
            _ => Err(SessionError::NotFound),
        }
    }

    async fn sweep(&self, now_ms: u64, idle_ms: u64) -> Result<usize, SessionError> {
        Ok(self.lock().remove_where(|s| !s.is_live(now_ms, idle_ms)).len())
    }

    async fn count(&self) -> Result<usize, SessionError> {
        Ok(self.lock().sessions.len())
    }
}
