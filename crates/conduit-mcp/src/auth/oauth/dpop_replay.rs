//! Where the `jti`s of DPoP proofs seen within the acceptance window are
//! remembered, so a proof is taken once (RFC 9449 §11.1): a
//! [`DpopReplayStore`]. The default, [`MemoryDpopReplay`], is this process's
//! and bounded in bytes: when it holds as many live entries as its budget
//! allows, a new proof is refused rather than an old entry forgotten
//! (forgetting would let a captured proof in again). Behind a load balancer,
//! give every node one shared store (`conduit-mcp-sql` has one for SQLite and
//! PostgreSQL), or a proof taken by one node is taken again by the next.

use async_trait::async_trait;
use sha2::{Digest, Sha256};
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// What a [`DpopReplayStore`] says of a proof.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReplayVerdict {
    /// First seen within its window: remembered now, taken.
    Fresh,
    /// This key's proof with this `jti` was seen within the window.
    Replayed,
    /// The store holds as many live proofs as it may: refused, not remembered.
    Full,
}

/// A [`DpopReplayStore`] that could not answer (its database is unreachable):
/// the request is answered 503, as when an authorization server is down.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the DPoP replay store failed: {0}")]
pub struct ReplayStoreError(pub String);

/// Remembers each DPoP proof (its key's thumbprint and its `jti`) until its
/// window closes, and says whether it was seen before; shared by every node
/// that must take a proof once between them.
#[async_trait]
pub trait DpopReplayStore: Send + Sync + std::fmt::Debug + 'static {
    /// Records the proof `jti` of the key `jkt` until `until_ms` unless a record of it
    /// lives at `now_ms` already, in one atomic step (two nodes given one proof at once:
    /// one of them gets [`ReplayVerdict::Fresh`]). Records past their `until_ms` are
    /// dead and may be dropped at any time.
    async fn admit(&self, jkt: &str, jti: &str, now_ms: u64, until_ms: u64) -> Result<ReplayVerdict, ReplayStoreError>;
}

/// The key of a proof in a replay store: SHA-256 of `jkt`, a zero byte, `jti`
/// (fixed size, whatever the `jti`; neither can be read back from it).
pub fn replay_key(jkt: &str, jti: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(jkt.as_bytes());
    h.update([0]);
    h.update(jti.as_bytes());
    h.finalize().into()
}

/// What one remembered proof costs: its key in the map and in the expiry queue, and the map's slot.
const ENTRY_BYTES: usize = 32 + 8 + 32 + 8 + 16;

/// Proofs seen by this process, each until its window closes, in at most a
/// given number of bytes (the default [`DpopReplayStore`]).
#[derive(Debug)]
pub struct MemoryDpopReplay {
    max_entries: usize,
    seen: Mutex<Seen>,
}

#[derive(Debug, Default)]
struct Seen {
    until: HashMap<[u8; 32], u64>,
    /// Expiry order (a proof's window closes `window` after it was first seen).
    queue: VecDeque<([u8; 32], u64)>,
}

impl MemoryDpopReplay {
    /// A store holding at most `max_bytes` of proofs.
    pub fn new(max_bytes: usize) -> Self {
        Self { max_entries: (max_bytes / ENTRY_BYTES).max(1), seen: Mutex::default() }
    }

    /// Admits the proof `jti` of the key `jkt`, remembered until `until_ms`.
    fn admit_now(&self, jkt: &str, jti: &str, now_ms: u64, until_ms: u64) -> ReplayVerdict {
        let id = replay_key(jkt, jti);
        let mut s = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        while let Some(&(old, at)) = s.queue.front() {
            if at > now_ms {
                break;
            }
            s.queue.pop_front();
            if s.until.get(&old) == Some(&at) {
                s.until.remove(&old);
            }
        }
        if s.until.get(&id).is_some_and(|&at| at > now_ms) {
            return ReplayVerdict::Replayed;
        }
        if s.until.len() >= self.max_entries {
            return ReplayVerdict::Full;
        }
        s.until.insert(id, until_ms);
        s.queue.push_back((id, until_ms));
        ReplayVerdict::Fresh
    }
}

#[async_trait]
impl DpopReplayStore for MemoryDpopReplay {
    async fn admit(&self, jkt: &str, jti: &str, now_ms: u64, until_ms: u64) -> Result<ReplayVerdict, ReplayStoreError> {
        Ok(self.admit_now(jkt, jti, now_ms, until_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn once_per_window_and_bounded() {
        use ReplayVerdict::{Fresh, Full, Replayed};
        let w = MemoryDpopReplay::new(2 * ENTRY_BYTES);
        assert_eq!(w.admit_now("k", "a", 0, 100), Fresh);
        assert_eq!(w.admit_now("k", "a", 50, 150), Replayed);
        assert_eq!(w.admit_now("other", "a", 50, 150), Fresh, "another key's jti is another proof");
        assert_eq!(w.admit_now("k", "b", 60, 160), Full);
        // The first window closed: its slot is free, and the proof is too old to matter anyway.
        assert_eq!(w.admit_now("k", "b", 100, 200), Fresh);
        assert_eq!(w.admit_now("k", "b", 120, 220), Replayed);
    }
}
