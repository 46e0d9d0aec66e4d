//! What both engines' DPoP replay stores share: their statements and when
//! they sweep.

use std::sync::atomic::{AtomicU64, Ordering};

/// The least time between two sweeps by one node.
const SWEEP_EVERY_MS: u64 = 10_000;

/// Takes a proof: inserts its row, or revives a row whose window closed; a row comes
/// back only then (a live row is left alone and nothing comes back: a replay).
pub(crate) const ADMIT_SQL_POSTGRES: &str = "INSERT INTO conduit_dpop_jti (proof_key, expires_at_ms) VALUES ($1, $3) \
     ON CONFLICT (proof_key) DO UPDATE SET expires_at_ms = EXCLUDED.expires_at_ms \
     WHERE conduit_dpop_jti.expires_at_ms <= $2 RETURNING 1";
/// [`ADMIT_SQL_POSTGRES`] in SQLite's words.
pub(crate) const ADMIT_SQL_SQLITE: &str = "INSERT INTO conduit_dpop_jti (proof_key, expires_at_ms) VALUES (?1, ?3) \
     ON CONFLICT (proof_key) DO UPDATE SET expires_at_ms = excluded.expires_at_ms \
     WHERE conduit_dpop_jti.expires_at_ms <= ?2 RETURNING 1";

/// Deletes a batch of rows whose window closed (1000 at most; the next sweep takes
/// the rest), by range on the expiry index.
pub(crate) const SWEEP_SQL_POSTGRES: &str = "DELETE FROM conduit_dpop_jti WHERE proof_key IN \
     (SELECT proof_key FROM conduit_dpop_jti WHERE expires_at_ms <= $1 ORDER BY expires_at_ms LIMIT 1000)";
/// [`SWEEP_SQL_POSTGRES`] in SQLite's words.
pub(crate) const SWEEP_SQL_SQLITE: &str = "DELETE FROM conduit_dpop_jti WHERE proof_key IN \
     (SELECT proof_key FROM conduit_dpop_jti WHERE expires_at_ms <= ?1 ORDER BY expires_at_ms LIMIT 1000)";

/// When this node last swept.
#[derive(Debug, Default)]
pub(crate) struct Sweeps {
    last_ms: AtomicU64,
}

impl Sweeps {
    /// Whether a sweep is due at `now_ms` (and, if so, it is counted as made: one
    /// caller sweeps).
    pub(crate) fn due(&self, now_ms: u64) -> bool {
        let last = self.last_ms.load(Ordering::Relaxed);
        now_ms.saturating_sub(last) >= SWEEP_EVERY_MS
            && self.last_ms.compare_exchange(last, now_ms, Ordering::Relaxed, Ordering::Relaxed).is_ok()
    }
}
