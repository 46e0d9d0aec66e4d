//! [`WebhookConfig`]: what turns webhook delivery on — a store every node
//! shares, a transport — and the rules of subscribing and delivering:
//! which origins may take plain `http://`, which skip the handshake, TTLs,
//! caps, the secret's grace window, retries and suspension.

use super::egress::WebhookTransport;
use super::record::WebhookCaps;
use super::store::WebhookStore;
use super::ttl::TtlPolicy;
use crate::config::ConfigError;
use std::sync::Arc;
use std::time::Duration;

/// How a failed delivery is tried again: `first_delay`, doubled each time up
/// to `max_delay`, at most `max_attempts` attempts in all; then it is dropped
/// (abandoned for the watermark). The defaults (5 attempts; 30 s, 1, 2, 4 min
/// apart) end within 15 minutes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Attempts in all, the first included (default 5).
    pub max_attempts: u32,
    /// The wait after the first failure (default 30 s).
    pub first_delay: Duration,
    /// The longest wait between attempts (default 5 min).
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self { max_attempts: 5, first_delay: Duration::from_secs(30), max_delay: Duration::from_secs(300) }
    }
}

impl RetryPolicy {
    /// The policy of these values.
    pub fn new(max_attempts: u32, first_delay: Duration, max_delay: Duration) -> Self {
        Self { max_attempts, first_delay, max_delay }
    }

    /// The wait after failed attempt number `attempt` (1 for the first).
    pub fn delay(&self, attempt: u32) -> Duration {
        let doubled = self.first_delay.saturating_mul(1u32 << attempt.saturating_sub(1).min(20));
        doubled.min(self.max_delay)
    }
}

/// When a subscription whose deliveries keep failing is suspended
/// (`deliveryStatus.active: false`) until its next refresh: every attempt
/// of this node failed for `after`, and there were at least `min_attempts`
/// of them (defaults: an hour, 100 attempts, after the extension's
/// guidance of mostly failures over a rolling hour).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SuspendPolicy {
    /// How long the failures last (default 60 min).
    pub after: Duration,
    /// The fewest failed attempts in that time (default 100).
    pub min_attempts: u32,
}

impl Default for SuspendPolicy {
    fn default() -> Self {
        Self { after: Duration::from_secs(3600), min_attempts: 100 }
    }
}

impl SuspendPolicy {
    /// The policy of these values.
    pub fn new(after: Duration, min_attempts: u32) -> Self {
        Self { after, min_attempts }
    }
}

/// Webhook delivery for [`EventsConfig::webhooks`](crate::ext::events::EventsConfig::webhooks()).
#[derive(Clone)]
#[non_exhaustive]
#[must_use]
pub struct WebhookConfig {
    /// Where subscriptions, verifications and the outbox live.
    pub store: Arc<dyn WebhookStore>,
    /// How deliveries leave.
    pub transport: Arc<dyn WebhookTransport>,
    /// Origins (`scheme://host[:port]`, exact) a callback may name with plain
    /// `http://` as well as `https://` (the operator's; default none).
    pub allow_origins: Vec<String>,
    /// Origins whose endpoints the operator vouches for: no handshake.
    pub verified_origins: Vec<String>,
    /// How long a subscription lives.
    pub ttl: TtlPolicy,
    /// Per-principal caps.
    pub caps: WebhookCaps,
    /// How long a replaced secret still signs (default 1 hour).
    pub secret_grace: Duration,
    /// Retries of a failed delivery.
    pub retry: RetryPolicy,
    /// Suspension after sustained failure.
    pub suspend: SuspendPolicy,
    /// This node's name in outbox leases (default: random).
    pub node: String,
    /// How long a claimed entry is this node's (default 60 s).
    pub lease: Duration,
    /// How often the worker and the feeder look again unasked (other nodes'
    /// subscriptions and entries, retries coming due; default 1 s).
    pub recheck: Duration,
    /// Most entries one claim takes, all posted at once (default 32).
    pub max_in_flight: usize,
}

impl std::fmt::Debug for WebhookConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookConfig")
            .field("allow_origins", &self.allow_origins)
            .field("verified_origins", &self.verified_origins)
            .field("ttl", &self.ttl)
            .field("caps", &self.caps)
            .field("retry", &self.retry)
            .field("suspend", &self.suspend)
            .finish_non_exhaustive()
    }
}

impl WebhookConfig {
    /// Delivery through `transport`, state in `store`, every rule at its default.
    pub fn new(store: Arc<dyn WebhookStore>, transport: Arc<dyn WebhookTransport>) -> Self {
        Self {
            store,
            transport,
            allow_origins: Vec::new(),
            verified_origins: Vec::new(),
            ttl: TtlPolicy::default(),
            caps: WebhookCaps::default(),
            secret_grace: Duration::from_secs(3600),
            retry: RetryPolicy::default(),
            suspend: SuspendPolicy::default(),
            node: format!("node-{:016x}", rand::random::<u64>()),
            lease: Duration::from_secs(60),
            recheck: Duration::from_secs(1),
            max_in_flight: 32,
        }
    }

    /// Lets callbacks at `origin` use plain `http://` (tests, a local relay).
    pub fn allow_origin(mut self, origin: impl Into<String>) -> Self {
        self.allow_origins.push(origin.into());
        self
    }

    /// Skips the handshake for callbacks at `origin`.
    pub fn verified_origin(mut self, origin: impl Into<String>) -> Self {
        self.verified_origins.push(origin.into());
        self
    }

    /// The TTL rules.
    pub fn ttl(mut self, ttl: TtlPolicy) -> Self {
        self.ttl = ttl;
        self
    }

    /// The per-principal caps.
    pub fn caps(mut self, caps: WebhookCaps) -> Self {
        self.caps = caps;
        self
    }

    /// How long a replaced secret still signs.
    pub fn secret_grace(mut self, grace: Duration) -> Self {
        self.secret_grace = grace;
        self
    }

    /// The retry rules.
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// The suspension rules.
    pub fn suspend(mut self, suspend: SuspendPolicy) -> Self {
        self.suspend = suspend;
        self
    }

    /// This node's name in leases (the same name on two nodes breaks takeover).
    pub fn node(mut self, node: impl Into<String>) -> Self {
        self.node = node.into();
        self
    }

    /// How long a claimed delivery stays this node's: another node takes it
    /// over only after it ends, so it must outlast an attempt.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// How often to look again unasked.
    pub fn recheck(mut self, every: Duration) -> Self {
        self.recheck = every;
        self
    }

    /// Checks the values; errors name the `events.webhooks` table and the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let table = "events.webhooks";
        if self.retry.max_attempts == 0 {
            return Err(ConfigError::new(table, "max_attempts", "must be a positive integer"));
        }
        if self.max_in_flight == 0 {
            return Err(ConfigError::new(table, "max_in_flight", "must be a positive integer"));
        }
        if self.lease.is_zero() || self.recheck.is_zero() {
            return Err(ConfigError::new(table, "lease", "lease and recheck must be more than 0"));
        }
        for o in self.allow_origins.iter().chain(&self.verified_origins) {
            if super::origin::normalise_origin(o).is_none() {
                return Err(ConfigError::new(table, "allow_origins", "an origin is scheme://host[:port]"));
            }
        }
        Ok(())
    }
}
