//! How long a webhook subscription lives (events.md §2.7 W9): `ttlMs`
//! absent takes the server's default, a number is clamped into the server's
//! range (up to its floor, down to its ceiling; never refused), and `null`
//! asks for no expiry, granted only where the operator allows subscriptions
//! that never expire (they are then kept until unsubscribed). `refreshBefore`
//! is `null` only when `null` was asked and granted.

use std::time::Duration;

/// What the client asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TtlAsk {
    /// `ttlMs` absent: the server's default.
    Default,
    /// `ttlMs: n`.
    Millis(u64),
    /// `ttlMs: null`: no expiry, if the server grants it.
    NoExpiry,
}

/// The server's TTL rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TtlPolicy {
    /// Granted when `ttlMs` is absent (default 1 hour).
    pub default: Duration,
    /// The shortest grant (default 1 minute): a smaller ask is raised to it.
    pub min: Duration,
    /// The longest grant (default 7 days): a larger ask, and a refused
    /// `null`, get it.
    pub max: Duration,
    /// Whether `ttlMs: null` is granted (default no).
    pub allow_no_expiry: bool,
}

impl Default for TtlPolicy {
    fn default() -> Self {
        Self {
            default: Duration::from_secs(3600),
            min: Duration::from_secs(60),
            max: Duration::from_secs(7 * 24 * 3600),
            allow_no_expiry: false,
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl TtlPolicy {
    /// The `refreshBefore` (Unix ms) granted at `now_ms` for `ask`; `None`
    /// is no expiry.
    pub fn grant(&self, ask: TtlAsk, now_ms: u64) -> Option<u64> {
        let ttl = match ask {
            TtlAsk::NoExpiry if self.allow_no_expiry => return None,
            TtlAsk::NoExpiry => millis(self.max),
            TtlAsk::Default => millis(self.default),
            TtlAsk::Millis(ms) => ms.clamp(millis(self.min), millis(self.max)),
        };
        Some(now_ms.saturating_add(ttl))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_takes_the_default_numbers_are_clamped_and_null_only_when_allowed() {
        let p = TtlPolicy::default();
        let now = 1_000;
        assert_eq!(p.grant(TtlAsk::Default, now), Some(now + 3_600_000));
        assert_eq!(p.grant(TtlAsk::Millis(120_000), now), Some(now + 120_000), "at most the suggestion");
        assert_eq!(p.grant(TtlAsk::Millis(1), now), Some(now + 60_000), "raised to the floor, not refused");
        assert_eq!(p.grant(TtlAsk::Millis(u64::MAX), now), Some(now + 7 * 24 * 3_600_000));
        assert_eq!(p.grant(TtlAsk::NoExpiry, now), Some(now + 7 * 24 * 3_600_000), "not granted: the longest");
        let open = TtlPolicy { allow_no_expiry: true, ..p };
        assert_eq!(open.grant(TtlAsk::NoExpiry, now), None);
        assert_eq!(open.grant(TtlAsk::Default, now), Some(now + 3_600_000), "null only when asked");
    }
}
