//! Rates per client: [`RateLimit`] (how many per period, and the burst) and
//! [`Rates`], governor's GCRA keyed by client in a map bounded in bytes.
//!
//! A client is kept by a 64-bit keyed hash of its [`ClientKey`], not the key
//! itself, so an entry has a fixed size whatever a principal id's length; at
//! most [`MAX_TRACKED_CLIENTS`] are kept. Entries whose state no longer differs
//! from a fresh one are pruned once a minute, and at once when the map is full;
//! a client that finds it still full shares one overflow entry with every other
//! such client (a flood of new addresses is limited together, not let through).

use super::ClientKey;
use governor::clock::{Clock, DefaultClock, Reference};
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::StateStore;
use governor::state::keyed::ShrinkableKeyedStateStore;
use governor::{Quota, RateLimiter};
use std::collections::HashMap;
use std::fmt;
use std::hash::BuildHasher;
use std::num::NonZeroU32;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// The most clients one rate limiter keeps apart (a map of 16-byte entries: about
/// 2.2 MiB at most with the hash table's spare room).
pub const MAX_TRACKED_CLIENTS: usize = 65_536;

/// The entry every client shares once the map is full.
const OVERFLOW: u64 = 0;

/// The top bit of a store key asks to look without counting ([`Rates::peek`]);
/// no client's key has it.
const PEEK: u64 = 1 << 63;

/// How often idle entries are pruned while the map is not full.
const PRUNE_EVERY: Duration = Duration::from_secs(60);

/// A rate: `count` per `per` sustained, and up to `burst` at once.
///
/// Its text form is `COUNT/s`, `COUNT/min` or `COUNT/h`, optionally followed by
/// `,burst=N` (without it the burst is `COUNT`): `"50/s"`, `"600/min,burst=20"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    count: NonZeroU32,
    per: Duration,
    burst: NonZeroU32,
}

impl RateLimit {
    /// `count` per `per`, with a burst of `count`; `None` when either is zero.
    pub fn new(count: u32, per: Duration) -> Option<Self> {
        let count = NonZeroU32::new(count)?;
        (!per.is_zero()).then_some(Self { count, per, burst: count })
    }

    /// `count` per second (`None` when zero).
    pub fn per_second(count: u32) -> Option<Self> {
        Self::new(count, Duration::from_secs(1))
    }

    /// `count` per minute (`None` when zero).
    pub fn per_minute(count: u32) -> Option<Self> {
        Self::new(count, Duration::from_secs(60))
    }

    /// The same rate allowing up to `burst` at once (at least one).
    #[must_use]
    pub fn burst(mut self, burst: u32) -> Self {
        self.burst = NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN);
        self
    }

    /// How many per [`period`](Self::period).
    pub fn count(&self) -> u32 {
        self.count.get()
    }

    /// The period `count` is over.
    pub fn period(&self) -> Duration {
        self.per
    }

    /// How many at once.
    pub fn burst_size(&self) -> u32 {
        self.burst.get()
    }

    fn quota(&self) -> Quota {
        let one_per = (self.per / self.count.get()).max(Duration::from_nanos(1));
        Quota::with_period(one_per).expect("a positive period").allow_burst(self.burst)
    }
}

impl fmt::Display for RateLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = match self.per.as_secs() {
            3600 => "h",
            60 => "min",
            _ => "s",
        };
        let count =
            if unit == "s" { self.count.get() as f64 / self.per.as_secs_f64() } else { self.count.get() as f64 };
        write!(f, "{count}/{unit}")?;
        if self.burst != self.count {
            write!(f, ",burst={}", self.burst)?;
        }
        Ok(())
    }
}

/// Why a rate's text was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?}: expected COUNT/s, COUNT/min or COUNT/h with a positive COUNT, optionally ,burst=N (N positive)")]
pub struct RateLimitError(pub String);

impl FromStr for RateLimit {
    type Err = RateLimitError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || RateLimitError(s.to_owned());
        let (rate, burst) = match s.split_once(',') {
            Some((rate, b)) => {
                let n = b.trim().strip_prefix("burst=").ok_or_else(bad)?;
                (rate, Some(n.trim().parse::<u32>().ok().filter(|n| *n > 0).ok_or_else(bad)?))
            }
            None => (s, None),
        };
        let (count, unit) = rate.trim().split_once('/').ok_or_else(bad)?;
        let per = match unit.trim() {
            "s" => Duration::from_secs(1),
            "min" => Duration::from_secs(60),
            "h" => Duration::from_secs(3600),
            _ => return Err(bad()),
        };
        let limit = Self::new(count.trim().parse().map_err(|_| bad())?, per).ok_or_else(bad)?;
        Ok(match burst {
            Some(b) => limit.burst(b),
            None => limit,
        })
    }
}

/// The state of each client's rate: a fixed-size entry per client (its keyed hash and the
/// GCRA's theoretical arrival time), at most `max` of them.
#[derive(Debug)]
struct Bounded {
    map: Mutex<HashMap<u64, u64>>,
    max: usize,
}

impl Bounded {
    fn lock(&self) -> MutexGuard<'_, HashMap<u64, u64>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The limiter's handle on the state, which [`Rates`] also reads (its size).
#[derive(Debug, Clone)]
struct Shared(Arc<Bounded>);

impl StateStore for Shared {
    type Key = u64;

    fn measure_and_replace<T, F, E>(&self, key: &u64, f: F) -> Result<T, E>
    where
        F: Fn(Option<Nanos>) -> Result<(T, Nanos), E>,
    {
        let mut map = self.0.lock();
        let (key, peek) = (key & !PEEK, key & PEEK != 0);
        let key = if map.contains_key(&key) || map.len() < self.0.max { key } else { OVERFLOW };
        let (answer, next) = f(map.get(&key).map(|t| Nanos::from(*t)))?;
        if !peek {
            map.insert(key, next.as_u64());
        }
        Ok(answer)
    }
}

impl ShrinkableKeyedStateStore<u64> for Shared {
    fn retain_recent(&self, drop_below: Nanos) {
        let below = drop_below.as_u64();
        let mut map = self.0.lock();
        map.retain(|_, t| *t > below);
        if map.capacity() > 4 * map.len().max(64) {
            map.shrink_to_fit();
        }
    }

    fn len(&self) -> usize {
        self.0.lock().len()
    }

    fn is_empty(&self) -> bool {
        self.0.lock().is_empty()
    }
}

/// One rate per client (see the module docs), on clock `C`.
pub(crate) struct Rates<C: Clock = DefaultClock> {
    limiter: RateLimiter<u64, Shared, C, NoOpMiddleware<C::Instant>>,
    store: Arc<Bounded>,
    hasher: std::hash::RandomState,
    /// When entries were last pruned, in the clock's nanoseconds since `start`.
    pruned: AtomicU64,
    start: C::Instant,
    limit: RateLimit,
}

impl<C: Clock> fmt::Debug for Rates<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rates").field("limit", &self.limit).field("tracked", &self.tracked()).finish()
    }
}

impl Rates<DefaultClock> {
    /// Rates of `limit` per client, for at most [`MAX_TRACKED_CLIENTS`] clients apart.
    pub(crate) fn new(limit: RateLimit) -> Self {
        Self::with_clock(limit, MAX_TRACKED_CLIENTS, DefaultClock::default())
    }
}

impl<C: Clock> Rates<C> {
    /// Rates of `limit` per client on `clock`, for at most `max` clients apart.
    pub(crate) fn with_clock(limit: RateLimit, max: usize, clock: C) -> Self {
        let store = Arc::new(Bounded { map: Mutex::new(HashMap::new()), max: max.max(1) });
        let start = clock.now();
        Self {
            limiter: RateLimiter::new(limit.quota(), Shared(store.clone()), clock),
            store,
            hasher: std::hash::RandomState::new(),
            pruned: AtomicU64::new(0),
            start,
            limit,
        }
    }

    /// Counts one for `client`: `Ok`, or how long until it may try again.
    pub(crate) fn check(&self, client: &ClientKey) -> Result<(), Duration> {
        self.prune_if_due();
        self.decide(self.key_of(client))
    }

    /// Whether one more for `client` would be allowed now, without counting it: `Ok`,
    /// or how long until it would be (for a budget checked before and charged after).
    pub(crate) fn peek(&self, client: &ClientKey) -> Result<(), Duration> {
        self.decide(self.key_of(client) | PEEK)
    }

    /// The store key of `client`: 0 is the shared overflow entry and the top bit means
    /// [`PEEK`], so no client's key is either.
    fn key_of(&self, client: &ClientKey) -> u64 {
        (self.hasher.hash_one(client) & !PEEK).max(1)
    }

    fn decide(&self, key: u64) -> Result<(), Duration> {
        self.limiter.check_key(&key).map_err(|not_until| not_until.wait_time_from(self.limiter.clock().now()))
    }

    /// How many clients are kept apart now.
    pub(crate) fn tracked(&self) -> usize {
        self.store.lock().len()
    }

    /// Prunes entries no different from fresh ones: once per [`PRUNE_EVERY`], or when full.
    fn prune_if_due(&self) {
        let now = self.limiter.clock().now().duration_since(self.start).as_u64();
        let last = self.pruned.load(Ordering::Relaxed);
        let full = self.tracked() >= self.store.max;
        // When full, at most once a second: a flood must not make every request walk the map.
        let due = now.saturating_sub(last) >= PRUNE_EVERY.as_nanos() as u64
            || (full && now.saturating_sub(last) >= Duration::from_secs(1).as_nanos() as u64);
        if due && self.pruned.compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed).is_ok() {
            self.limiter.retain_recent();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use governor::clock::FakeRelativeClock;
    use std::net::IpAddr;

    fn ip(n: u32) -> ClientKey {
        ClientKey::of(None, Some(IpAddr::from(n.to_be_bytes())))
    }

    #[test]
    fn text_forms() {
        let r: RateLimit = "600/min,burst=20".parse().expect("valid");
        assert_eq!((r.count(), r.period(), r.burst_size()), (600, Duration::from_secs(60), 20));
        assert_eq!(r.to_string(), "600/min,burst=20");
        assert_eq!("50/s".parse::<RateLimit>().expect("valid"), RateLimit::per_second(50).expect("rate"));
        for bad in ["", "50", "0/s", "50/day", "50/s,burst=0", "50/s,bust=3", "-1/s", "x/min"] {
            assert!(bad.parse::<RateLimit>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_client_gets_its_burst_then_waits_and_others_are_apart() {
        let clock = FakeRelativeClock::default();
        let rates = Rates::with_clock(RateLimit::per_second(2).expect("rate"), 100, clock.clone());
        let (a, b) = (ip(1), ip(2));
        assert!(rates.check(&a).is_ok() && rates.check(&a).is_ok());
        let wait = rates.check(&a).expect_err("past the burst");
        assert!(wait > Duration::ZERO && wait <= Duration::from_millis(500), "{wait:?}");
        assert!(rates.check(&b).is_ok(), "another client has its own budget");
        clock.advance(wait);
        assert!(rates.check(&a).is_ok(), "after the wait");
    }

    #[test]
    fn a_peek_decides_like_a_check_but_counts_nothing() {
        let clock = FakeRelativeClock::default();
        let rates = Rates::with_clock(RateLimit::per_second(2).expect("rate"), 100, clock.clone());
        let a = ip(1);
        for _ in 0..10 {
            assert!(rates.peek(&a).is_ok(), "looking costs nothing");
        }
        assert_eq!(rates.tracked(), 0, "a peek keeps no entry");
        assert!(rates.check(&a).is_ok() && rates.check(&a).is_ok());
        let wait = rates.peek(&a).expect_err("the burst is spent");
        assert_eq!(rates.check(&a).expect_err("and a check agrees"), wait);
        clock.advance(wait);
        assert!(rates.peek(&a).is_ok() && rates.peek(&a).is_ok() && rates.check(&a).is_ok());
        assert!(rates.peek(&a).is_err(), "only the check counted");
    }

    #[test]
    fn a_flood_of_clients_is_bounded_and_shares_one_entry_past_the_cap() {
        let clock = FakeRelativeClock::default();
        let rates = Rates::with_clock(RateLimit::per_second(1).expect("rate"), 8, clock.clone());
        for n in 0..8 {
            assert!(rates.check(&ip(n)).is_ok());
        }
        assert_eq!(rates.tracked(), 8);
        // Full: new clients share the overflow entry, so together they get one.
        assert!(rates.check(&ip(100)).is_ok());
        assert!(rates.check(&ip(101)).is_err(), "the overflow entry is spent");
        assert_eq!(rates.tracked(), 9, "the map holds the cap and the overflow entry, no more");
        for n in 200..10_000 {
            let _ = rates.check(&ip(n));
        }
        assert_eq!(rates.tracked(), 9);
        // Once their state is no different from a fresh one, entries are pruned.
        clock.advance(PRUNE_EVERY + Duration::from_secs(1));
        assert!(rates.check(&ip(5000)).is_ok());
        assert_eq!(rates.tracked(), 1, "only the client just seen");
    }
}
