//! What one issuer's introspection endpoint is asked at once: at most
//! `max_concurrent_introspections` questions (one more is refused at once,
//! never queued); after a failure (an error answer, a timeout, no answer) none
//! for `introspection_backoff`, then one probe at a time until one succeeds.
//! A request refused here gets 503 without waiting on the authorization server.

use std::sync::Mutex;
use tokio::sync::{Semaphore, SemaphorePermit};

/// One issuer's gate (see the module docs).
pub(super) struct Gate {
    permits: Semaphore,
    health: Mutex<Health>,
}

#[derive(Default)]
struct Health {
    /// When the last question failed (ms), until one succeeds.
    failed_ms: Option<u64>,
    /// Whether a probe is out (after the backoff, one question at a time).
    probing: bool,
}

/// Leave to ask one question; report how it went with [`succeeded`](Self::succeeded)
/// or [`failed`](Self::failed). Dropped without a report (the request went away), it
/// decides nothing.
pub(super) struct Pass<'a> {
    gate: &'a Gate,
    _permit: SemaphorePermit<'a>,
    probe: bool,
}

impl Gate {
    /// A gate letting `cap` questions out at once (at least one).
    pub(super) fn new(cap: usize) -> Self {
        Self { permits: Semaphore::new(cap.clamp(1, Semaphore::MAX_PERMITS)), health: Mutex::default() }
    }

    fn health(&self) -> std::sync::MutexGuard<'_, Health> {
        self.health.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Leave to ask now, or why not (the request is then answered 503 at once).
    pub(super) fn enter(&self, now_ms: u64, backoff_ms: u64) -> Result<Pass<'_>, &'static str> {
        let mut h = self.health();
        let probe = match h.failed_ms {
            None => false,
            Some(at) if now_ms < at.saturating_add(backoff_ms) => {
                return Err("introspection failed moments ago; not asked again before the backoff");
            }
            Some(_) if h.probing => return Err("introspection failed; one request is checking it again"),
            Some(_) => true,
        };
        let permit = self.permits.try_acquire().map_err(|_| "too many introspections in flight at this issuer")?;
        h.probing |= probe;
        Ok(Pass { gate: self, _permit: permit, probe })
    }
}

impl Pass<'_> {
    /// The issuer answered: it is healthy.
    pub(super) fn succeeded(self) {
        let mut h = self.gate.health();
        h.failed_ms = None;
        h.probing &= !self.probe;
    }

    /// The question failed at `now_ms`: no more for the backoff.
    pub(super) fn failed(self, now_ms: u64) {
        let mut h = self.gate.health();
        h.failed_ms = Some(now_ms);
        h.probing &= !self.probe;
    }
}

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        if self.probe {
            // Reported or abandoned, the probe is no longer out.
            self.gate.health().probing = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cap_then_a_backoff_then_one_probe() {
        let gate = Gate::new(2);
        let (a, b) = (gate.enter(0, 5_000).expect("one"), gate.enter(0, 5_000).expect("two"));
        assert!(gate.enter(0, 5_000).is_err(), "the cap, at once");
        drop(b);
        a.failed(100);
        assert!(gate.enter(5_099, 5_000).is_err(), "within the backoff");
        let probe = gate.enter(5_100, 5_000).expect("the probe");
        assert!(gate.enter(5_100, 5_000).is_err(), "one probe at a time");
        drop(probe);
        let probe = gate.enter(5_100, 5_000).expect("an abandoned probe frees its turn");
        probe.succeeded();
        let (a, b) = (gate.enter(5_100, 5_000).expect("healthy"), gate.enter(5_100, 5_000).expect("healthy"));
        drop((a, b));
    }
}
