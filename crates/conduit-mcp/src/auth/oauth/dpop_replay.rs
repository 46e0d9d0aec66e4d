//! The `jti`s of DPoP proofs seen within the acceptance window, so a proof
//! is taken once (RFC 9449 §11.1). Bounded in bytes: when the window holds
//! as many live entries as its budget allows, a new proof is refused rather
//! than an old entry forgotten (forgetting would let a captured proof in again).

use sha2::{Digest, Sha256};
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// What one remembered proof costs: its key in the map and in the expiry queue, and the map's slot.
const ENTRY_BYTES: usize = 32 + 8 + 32 + 8 + 16;

/// Proofs seen, each until its window closes.
#[derive(Debug)]
pub(super) struct ReplayWindow {
    max_entries: usize,
    seen: Mutex<Seen>,
}

#[derive(Debug, Default)]
struct Seen {
    until: HashMap<[u8; 32], u64>,
    /// Expiry order (a proof's window closes `window` after it was first seen).
    queue: VecDeque<([u8; 32], u64)>,
}

/// Why a proof was not admitted by the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refusal {
    /// This key's proof with this `jti` was seen within the window.
    Replayed,
    /// The window is full of live proofs.
    Full,
}

impl ReplayWindow {
    /// A window holding at most `max_bytes` of proofs.
    pub(super) fn new(max_bytes: usize) -> Self {
        Self { max_entries: (max_bytes / ENTRY_BYTES).max(1), seen: Mutex::default() }
    }

    /// Admits the proof `jti` of the key `jkt`, remembered until `until_ms`.
    pub(super) fn admit(&self, jkt: &str, jti: &str, now_ms: u64, until_ms: u64) -> Result<(), Refusal> {
        let mut h = Sha256::new();
        h.update(jkt.as_bytes());
        h.update([0]);
        h.update(jti.as_bytes());
        let id: [u8; 32] = h.finalize().into();
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
            return Err(Refusal::Replayed);
        }
        if s.until.len() >= self.max_entries {
            return Err(Refusal::Full);
        }
        s.until.insert(id, until_ms);
        s.queue.push_back((id, until_ms));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn once_per_window_and_bounded() {
        let w = ReplayWindow::new(2 * ENTRY_BYTES);
        assert_eq!(w.admit("k", "a", 0, 100), Ok(()));
        assert_eq!(w.admit("k", "a", 50, 150), Err(Refusal::Replayed));
        assert_eq!(w.admit("other", "a", 50, 150), Ok(()), "another key's jti is another proof");
        assert_eq!(w.admit("k", "b", 60, 160), Err(Refusal::Full));
        // The first window closed: its slot is free, and the proof is too old to matter anyway.
        assert_eq!(w.admit("k", "b", 100, 200), Ok(()));
        assert_eq!(w.admit("k", "b", 120, 220), Err(Refusal::Replayed));
    }
}
