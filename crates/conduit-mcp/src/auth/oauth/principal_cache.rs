//! Principals of tokens already checked, by the token's SHA-256 (never the
//! token), each until its own limit, bounded in bytes: the oldest entries go
//! first when the budget is full, and one entry may take at most a sixteenth.

use crate::auth::Principal;
use sha2::{Digest, Sha256};
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// A token's SHA-256: what the caches keep instead of the token.
pub(super) type TokenHash = [u8; 32];

/// The hash a cache keys `token` by.
pub(super) fn token_hash(token: &str) -> TokenHash {
    Sha256::digest(token.as_bytes()).into()
}

struct Entry {
    principal: Principal,
    until_ms: u64,
    bytes: usize,
}

/// A byte-bounded cache of checked principals.
#[derive(Default)]
pub(super) struct PrincipalCache {
    inner: Mutex<CacheState>,
}

#[derive(Default)]
struct CacheState {
    entries: HashMap<TokenHash, Entry>,
    order: VecDeque<TokenHash>,
    bytes: usize,
}

/// What an entry is counted as: its principal's text and a fixed overhead.
fn size_of(p: &Principal) -> usize {
    let claims: usize = p.claims.iter().map(|(k, v)| k.len() + crate::bounds::json_len(v)).sum();
    96 + p.id.len() + p.scopes.iter().map(|s| s.len() + 24).sum::<usize>() + claims
}

impl PrincipalCache {
    /// The principal cached for `key`, while `now_ms` is before its limit.
    pub(super) fn get(&self, key: &TokenHash, now_ms: u64) -> Option<Principal> {
        let st = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        st.entries.get(key).filter(|e| e.until_ms > now_ms).map(|e| e.principal.clone())
    }

    /// Keeps `principal` for `key` until `until_ms`, within `budget` bytes in all.
    pub(super) fn put(&self, key: TokenHash, principal: Principal, until_ms: u64, budget: usize) {
        let bytes = size_of(&principal);
        if bytes > budget / 16 {
            return; // one answer may not crowd out the rest
        }
        let mut st = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(old) = st.entries.insert(key, Entry { principal, until_ms, bytes }) {
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

    /// Bytes held now (as counted against the budget).
    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_end_at_their_limit_and_the_budget_holds() {
        let cache = PrincipalCache::default();
        let p = Principal::new("https://as.example#alice").scopes(["mcp:read"]);
        let one = size_of(&p);
        let budget = one * 16;
        cache.put(token_hash("a"), p.clone(), 1_000, budget);
        assert_eq!(cache.get(&token_hash("a"), 999), Some(p.clone()));
        assert_eq!(cache.get(&token_hash("a"), 1_000), None);
        assert_eq!(cache.get(&token_hash("b"), 0), None);
        for i in 0..100 {
            cache.put(token_hash(&i.to_string()), p.clone(), 1_000, budget);
            assert!(cache.bytes() <= budget);
        }
        // The oldest went first; the newest is there.
        assert_eq!(cache.get(&token_hash("a"), 0), None);
        assert!(cache.get(&token_hash("99"), 0).is_some());
        // An entry over a sixteenth of the budget is not kept.
        let big = Principal::new("x".repeat(budget));
        cache.put(token_hash("big"), big, 1_000, budget);
        assert_eq!(cache.get(&token_hash("big"), 0), None);
    }
}
