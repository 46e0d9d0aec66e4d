//! `MemorySessionStore`: sessions in one process, bounded by the cap.

use super::store::{SessionError, SessionLimits, SessionRecord, SessionStore};
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::Mutex;

/// The default session store: a map under one short lock.
///
/// Eviction at the cap scans for the least recently seen session; it runs only
/// when the cap is reached, so its cost is paid by the request that needs room.
#[derive(Debug, Default)]
pub struct MemorySessionStore {
    sessions: Mutex<HashMap<String, Box<SessionRecord>>>,
}

impl MemorySessionStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Box<SessionRecord>>> {
        self.sessions.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Session `id` of `owner` with `last_seen_ms` moved to `now_ms`; an expired one is removed.
fn touched<'a>(
    m: &'a mut HashMap<String, Box<SessionRecord>>,
    id: &str,
    owner: Option<&str>,
    now_ms: u64,
    idle_ms: u64,
) -> Result<&'a mut SessionRecord, SessionError> {
    let live = match m.get(id) {
        None => return Err(SessionError::NotFound),
        Some(s) if s.owner.as_deref() != owner => return Err(SessionError::NotFound),
        Some(s) => s.is_live(now_ms, idle_ms),
    };
    if !live {
        m.remove(id);
        return Err(SessionError::NotFound);
    }
    let s = m.get_mut(id).ok_or(SessionError::NotFound)?;
    s.last_seen_ms = s.last_seen_ms.max(now_ms);
    Ok(s)
}

#[async_trait]
impl SessionStore for MemorySessionStore {
    async fn create(&self, record: SessionRecord, limits: SessionLimits) -> Result<(), SessionError> {
        let now = record.last_seen_ms;
        let mut m = self.lock();
        if m.contains_key(&record.id) {
            return Err(SessionError::Duplicate);
        }
        if m.len() >= limits.max_sessions {
            m.retain(|_, s| s.is_live(now, limits.idle_ms));
        }
        while m.len() >= limits.max_sessions {
            let oldest = m
                .values()
                .filter(|s| now.saturating_sub(s.last_seen_ms) >= limits.evict_idle_ms)
                .min_by_key(|s| s.last_seen_ms)
                .map(|s| s.id.clone());
            match oldest {
                Some(id) => {
                    m.remove(&id);
                }
                None => return Err(SessionError::LimitReached),
            }
        }
        m.insert(record.id.clone(), Box::new(record));
        Ok(())
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
        match m.get_mut(&record.id) {
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
        match m.get(id) {
            Some(s) if s.owner.as_deref() == owner => {
                m.remove(id);
                Ok(())
            }
            _ => Err(SessionError::NotFound),
        }
    }

    async fn sweep(&self, now_ms: u64, idle_ms: u64) -> Result<usize, SessionError> {
        let mut m = self.lock();
        let before = m.len();
        m.retain(|_, s| s.is_live(now_ms, idle_ms));
        Ok(before - m.len())
    }

    async fn count(&self) -> Result<usize, SessionError> {
        Ok(self.lock().len())
    }
}
