//! Time as the library sees it, injectable so TTL tests never sleep.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A source of wall-clock time in milliseconds since the Unix epoch.
pub trait Clock: Send + Sync + std::fmt::Debug + 'static {
    /// Now, in milliseconds since the epoch.
    fn now_ms(&self) -> u64;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
    }
}

/// A clock that moves only when told to (for tests).
#[derive(Debug, Default, Clone)]
pub struct ManualClock(Arc<AtomicU64>);

impl ManualClock {
    /// A clock reading `start_ms`.
    pub fn new(start_ms: u64) -> Self {
        Self(Arc::new(AtomicU64::new(start_ms)))
    }

    /// Moves the clock forward.
    pub fn advance(&self, ms: u64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }

    /// Sets the clock.
    pub fn set(&self, ms: u64) {
        self.0.store(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// A UTC instant's calendar fields (proleptic Gregorian).
struct Civil {
    year: u64,
    month: u64,
    day: u64,
    /// Seconds into the day.
    second_of_day: u64,
    millis: u64,
}

impl Civil {
    /// The fields of epoch milliseconds `ms` (civil-from-days, days since 1970-01-01).
    fn of(ms: u64) -> Self {
        let secs = ms / 1000;
        let z = secs / 86_400 + 719_468;
        let (era, doe) = (z / 146_097, z % 146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = doy - (153 * mp + 2) / 5 + 1;
        let month = if mp < 10 { mp + 3 } else { mp - 9 };
        let year = yoe + era * 400 + u64::from(month <= 2);
        Self { year, month, day, second_of_day: secs % 86_400, millis: ms % 1000 }
    }

    /// The text through `format!`: any width of year.
    fn formatted(&self) -> String {
        let (y, mo, d, s, ms) = (self.year, self.month, self.day, self.second_of_day, self.millis);
        format!("{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}.{ms:03}Z", s / 3600, s % 3600 / 60, s % 60)
    }
}

/// Formats epoch milliseconds as RFC 3339 UTC with milliseconds, e.g. `2026-10-17T12:00:00.000Z`.
///
/// It runs on every task creation and read, so a four-digit year's text is written
/// straight into a fixed buffer, without the formatting machinery.
pub fn format_rfc3339_ms(ms: u64) -> String {
    let c = Civil::of(ms);
    if c.year > 9999 {
        return c.formatted();
    }
    let mut b = *b"0000-00-00T00:00:00.000Z";
    let mut put = |at: usize, width: usize, mut v: u64| {
        for i in (at..at + width).rev() {
            b[i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    put(0, 4, c.year);
    put(5, 2, c.month);
    put(8, 2, c.day);
    put(11, 2, c.second_of_day / 3600);
    put(14, 2, c.second_of_day % 3600 / 60);
    put(17, 2, c.second_of_day % 60);
    put(20, 3, c.millis);
    // Every byte is an ASCII digit or separator.
    std::str::from_utf8(&b).map_or_else(|_| c.formatted(), str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(format_rfc3339_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_rfc3339_ms(1_792_238_400_123), "2026-10-17T12:00:00.123Z");
        assert_eq!(format_rfc3339_ms(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(format_rfc3339_ms(253_402_300_800_000), "10000-01-01T00:00:00.000Z");
    }

    #[test]
    fn the_buffer_writes_what_format_writes() {
        let mut ms = 0u64;
        while ms < 253_402_300_800_000 {
            assert_eq!(format_rfc3339_ms(ms), Civil::of(ms).formatted(), "{ms}");
            ms = ms * 3 / 2 + 86_399_999;
        }
        for ms in [951_782_400_000, 951_868_799_999, 4_107_542_400_000, 253_402_300_799_999] {
            assert_eq!(format_rfc3339_ms(ms), Civil::of(ms).formatted(), "{ms}");
        }
    }

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::new(5);
        assert_eq!(c.now_ms(), 5);
        c.advance(10);
        assert_eq!(c.now_ms(), 15);
    }
}
