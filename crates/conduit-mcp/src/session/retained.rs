//! The bytes all legacy sessions of a node retain together, under one
//! ceiling ([`SessionConfig::max_retained_bytes`](super::SessionConfig)).
//!
//! Every per-session and per-client bound (replay buffers, the oversize pool,
//! waiting requests) holds for one client; clients with many addresses are many
//! clients, so those bounds alone let a node's memory grow with the number of
//! addresses. This account adds up what every session keeps: a replay buffer's
//! messages (larger ones in the oversize pool included) and the requests waiting
//! on clients. What would pass the ceiling is not kept: a message still goes to
//! its stream's open connection but is not kept for replay, a request that would
//! wait on its client is refused, and a new session is admitted only while one
//! more session's replay budget fits.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Default ceiling: 1 024 sessions' default replay budgets (256 MiB).
pub const DEFAULT_RETAINED_BYTES: usize = 1024 * super::DEFAULT_REPLAY_BYTES;

/// The node's account of retained bytes.
#[derive(Debug)]
pub(crate) struct Retained {
    used: AtomicUsize,
    ceiling: usize,
}

impl Retained {
    /// An empty account under `ceiling` bytes.
    pub(crate) fn new(ceiling: usize) -> Self {
        Self { used: AtomicUsize::new(0), ceiling }
    }

    /// Bytes retained now.
    pub(crate) fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }

    /// Takes `n` more bytes if they fit under the ceiling.
    pub(crate) fn take(&self, n: usize) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(n).filter(|after| *after <= self.ceiling)
            })
            .is_ok()
    }

    /// Gives `n` bytes back.
    pub(crate) fn give(&self, n: usize) {
        let _ = self.used.fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| Some(used.saturating_sub(n)));
    }

    /// Whether a new session, which may keep `room` bytes for replay, fits now (an empty
    /// node always admits one).
    pub(crate) fn has_room(&self, room: usize) -> bool {
        let used = self.used();
        used == 0 || used.saturating_add(room) <= self.ceiling
    }
}

/// Bytes taken from the account, given back when dropped (a waiting request's).
#[derive(Debug)]
pub(crate) struct Taken {
    from: Arc<Retained>,
    n: usize,
}

impl Taken {
    /// Takes `n` bytes of `from`, when they fit.
    pub(crate) fn new(from: &Arc<Retained>, n: usize) -> Option<Self> {
        from.take(n).then(|| Self { from: from.clone(), n })
    }
}

impl Drop for Taken {
    fn drop(&mut self) {
        self.from.give(self.n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_only_what_fits_and_gives_back() {
        let r = Arc::new(Retained::new(100));
        assert!(r.has_room(1_000), "an empty node admits a session");
        let a = Taken::new(&r, 60).expect("fits");
        assert!(Taken::new(&r, 41).is_none(), "past the ceiling");
        assert!(r.has_room(40) && !r.has_room(41));
        assert!(r.take(40));
        assert_eq!(r.used(), 100);
        drop(a);
        r.give(40);
        assert_eq!(r.used(), 0);
        r.give(5);
        assert_eq!(r.used(), 0, "never below zero");
    }
}
