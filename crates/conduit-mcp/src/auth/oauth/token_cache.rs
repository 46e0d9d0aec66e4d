//! What is remembered of tokens already checked, keyed by the token's SHA-256
//! (never the token), each answer until its own expiry, oldest out first once
//! over a byte budget: verified JWTs' principals, active introspection answers
//! (their principals), refused opaque tokens (why).

use crate::auth::Principal;
use sha2::{Digest, Sha256};
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// A token's SHA-256: what the caches and the single flights key by.
pub(super) type TokenHash = [u8; 32];

/// The hash the caches key `token` by.
pub(super) fn token_hash(token: &str) -> TokenHash {
    Sha256::digest(token.as_bytes()).into()
}

/// What a cached principal is counted as: its text (id, scopes, claims as JSON) and
/// a fixed overhead for the entry and its allocations.
pub(super) fn principal_bytes(p: &Principal) -> usize {
    let claims: usize = p.claims.iter().map(|(k, v)| k.len() + crate::bounds::json_len(v) + 2).sum();
    96 + p.id.len() + p.scopes.iter().map(|s| s.len() + 24).sum::<usize>() + claims
}

/// What one refused token costs its cache: the key twice (map and queue), the
/// expiry, the reason's reference and the map's own overhead, rounded up.
pub(super) const REFUSED_ENTRY_BYTES: usize = 128;

struct Entry<V> {
    value: V,
    expires_ms: u64,
    bytes: usize,
}

/// Answers by token hash, bounded in bytes (see the module docs).
pub(super) struct ByHash<V> {
    inner: Mutex<State<V>>,
}

struct State<V> {
    entries: HashMap<TokenHash, Entry<V>>,
    order: VecDeque<TokenHash>,
    bytes: usize,
}

impl<V> Default for ByHash<V> {
    fn default() -> Self {
        Self { inner: Mutex::new(State { entries: HashMap::new(), order: VecDeque::new(), bytes: 0 }) }
    }
}

impl<V: Clone> ByHash<V> {
    /// The answer for `key`, unless it expired by `now`.
    pub(super) fn get(&self, key: &TokenHash, now: u64) -> Option<V> {
        let st = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        st.entries.get(key).filter(|e| e.expires_ms > now).map(|e| e.value.clone())
    }

    /// Keeps `value` for `key` until `expires_ms`, counted as `bytes` against `budget`;
    /// an answer larger than a sixteenth of the budget is not kept (it would crowd out the rest).
    pub(super) fn put(&self, key: TokenHash, value: V, expires_ms: u64, bytes: usize, budget: usize) {
        if bytes > budget / 16 {
            return;
        }
        let mut st = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(old) = st.entries.insert(key, Entry { value, expires_ms, bytes }) {
            st.bytes -= old.bytes;
        } else {
            st.order.push_back(key);
        }
        st.bytes += bytes;
        while st.bytes > budget {
            let Some(oldest) = st.order.pop_front() else { break };
            if let Some(e) = st.entries.remove(&oldest) {
                st.bytes -= e.bytes;
            }
        }
    }

    /// The bytes counted now (at most the budget of every `put`).
    #[cfg(test)]
    pub(super) fn bytes(&self) -> usize {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_in_bytes_oldest_out_and_expiring() {
        let cache = ByHash::<&'static str>::default();
        let budget = 16 * REFUSED_ENTRY_BYTES;
        for n in 0..100u8 {
            cache.put([n; 32], "not active", 1_000, REFUSED_ENTRY_BYTES, budget);
        }
        assert_eq!(cache.bytes(), budget);
        assert_eq!(cache.get(&[0; 32], 0), None, "the oldest went first");
        assert_eq!(cache.get(&[99; 32], 999), Some("not active"));
        assert_eq!(cache.get(&[99; 32], 1_000), None, "expired");
        cache.put([7; 32], "huge", 1_000, budget / 16 + 1, budget);
        assert_eq!(cache.get(&[7; 32], 0), None, "one answer may not crowd out the rest");
    }
}
