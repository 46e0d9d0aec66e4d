//! [`WebhookRules`]: the operator's webhook settings that are plain values —
//! what a configuration file or flags can say (the `[events.webhooks]`
//! table) — laid over a [`WebhookConfig`] once the server has its store and
//! its transport. The egress's own rules (`allow_loopback`, the origins
//! allowed plain `http://`, extra roots, the attempt timeout) are here too,
//! for the server to hand its egress.

#[cfg(feature = "webhooks")]
use super::config::WebhookConfig;
use crate::config::ConfigError;
use std::time::Duration;

/// The shortest outbox lease a deployment may set (`lease_ms`).
pub const MIN_LEASE: Duration = Duration::from_secs(1);
/// The shortest wait before a retry (`retry_first_delay_ms`).
pub const MIN_RETRY_DELAY: Duration = Duration::from_millis(100);
/// The shortest attempt timeout (`attempt_timeout_ms`).
pub const MIN_ATTEMPT_TIMEOUT: Duration = Duration::from_millis(100);
/// The attempt timeout when none is set (the egress's default).
const DEFAULT_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(5);
/// The outbox lease when none is set (the [`WebhookConfig`](super::WebhookConfig) default).
const DEFAULT_LEASE: Duration = Duration::from_secs(60);

/// The operator's webhook settings; `None` keeps the default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WebhookRules {
    /// Origins a callback may name with plain `http://` (and that may be loopback).
    pub allow_origins: Vec<String>,
    /// Origins spared the handshake.
    pub verified_origins: Vec<String>,
    /// Whether any `https://` callback may resolve to loopback (the egress's).
    pub allow_loopback: bool,
    /// Most subscriptions per principal.
    pub max_per_principal: Option<usize>,
    /// Most bytes of subscriptions per principal.
    pub max_bytes_per_principal: Option<usize>,
    /// The TTL granted when none is asked.
    pub default_ttl: Option<Duration>,
    /// The longest TTL granted.
    pub max_ttl: Option<Duration>,
    /// Whether `ttlMs: null` (no expiry) is granted.
    pub allow_no_expiry: Option<bool>,
    /// Attempts per delivery, the first included.
    pub max_attempts: Option<u32>,
    /// How long deliveries must all fail before a subscription is suspended.
    pub suspend_after: Option<Duration>,
    /// The wait after a first failed attempt (doubled after each further one).
    pub retry_first_delay: Option<Duration>,
    /// The longest wait between attempts.
    pub retry_max_delay: Option<Duration>,
    /// How long a node holds a claimed delivery before another may take it over.
    pub lease: Option<Duration>,
    /// How long one attempt may take in all (the egress's).
    pub attempt_timeout: Option<Duration>,
    /// Roots (PEM) trusted besides the web PKI ones (the egress's).
    pub root_certificates_pem: Vec<String>,
}

impl WebhookRules {
    /// `cfg` with these settings laid over it.
    #[cfg(feature = "webhooks")]
    pub fn apply(&self, mut cfg: WebhookConfig) -> WebhookConfig {
        cfg.allow_origins.extend(self.allow_origins.iter().cloned());
        cfg.verified_origins.extend(self.verified_origins.iter().cloned());
        if let Some(n) = self.max_per_principal {
            cfg.caps.max_per_principal = n;
        }
        if let Some(n) = self.max_bytes_per_principal {
            cfg.caps.max_bytes_per_principal = n;
        }
        if let Some(d) = self.default_ttl {
            cfg.ttl.default = d;
        }
        if let Some(d) = self.max_ttl {
            cfg.ttl.max = d;
        }
        if let Some(b) = self.allow_no_expiry {
            cfg.ttl.allow_no_expiry = b;
        }
        if let Some(n) = self.max_attempts {
            cfg.retry.max_attempts = n;
        }
        if let Some(d) = self.suspend_after {
            cfg.suspend.after = d;
        }
        if let Some(d) = self.retry_first_delay {
            cfg.retry.first_delay = d;
            cfg.retry.max_delay = cfg.retry.max_delay.max(d);
        }
        if let Some(d) = self.retry_max_delay {
            cfg.retry.max_delay = d;
        }
        if let Some(d) = self.lease {
            cfg.lease = d;
        }
        cfg
    }

    /// The attempt timeout these rules give the egress.
    pub fn attempt_timeout(&self) -> Duration {
        self.attempt_timeout.unwrap_or(DEFAULT_ATTEMPT_TIMEOUT)
    }

    /// Checks the timings: each at least its minimum ([`MIN_LEASE`],
    /// [`MIN_RETRY_DELAY`], [`MIN_ATTEMPT_TIMEOUT`]), the longest retry wait
    /// at least the first, and the lease longer than an attempt (else a
    /// second node could take over a delivery still in flight). Errors name
    /// the `events.webhooks` key.
    pub fn check(&self) -> Result<(), ConfigError> {
        let table = "events.webhooks";
        let at_least = |v: Option<Duration>, min: Duration, key: &'static str| match v {
            Some(d) if d < min => Err(ConfigError::new(table, key, format!("must be at least {} ms", min.as_millis()))),
            _ => Ok(()),
        };
        at_least(self.lease, MIN_LEASE, "lease_ms")?;
        at_least(self.retry_first_delay, MIN_RETRY_DELAY, "retry_first_delay_ms")?;
        at_least(self.retry_max_delay, MIN_RETRY_DELAY, "retry_max_delay_ms")?;
        at_least(self.attempt_timeout, MIN_ATTEMPT_TIMEOUT, "attempt_timeout_ms")?;
        if let (Some(first), Some(max)) = (self.retry_first_delay, self.retry_max_delay)
            && max < first
        {
            return Err(ConfigError::new(table, "retry_max_delay_ms", "must be at least retry_first_delay_ms"));
        }
        if self.lease.unwrap_or(DEFAULT_LEASE) <= self.attempt_timeout() {
            return Err(ConfigError::new(table, "lease_ms", "must be longer than attempt_timeout_ms (default 5000)"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timings_below_their_minimum_or_a_lease_within_an_attempt_are_refused() {
        let ok = WebhookRules {
            lease: Some(Duration::from_millis(1_500)),
            attempt_timeout: Some(Duration::from_millis(1_000)),
            retry_first_delay: Some(Duration::from_millis(100)),
            ..WebhookRules::default()
        };
        ok.check().unwrap();
        let key = |r: WebhookRules| r.check().unwrap_err().key().to_owned();
        assert_eq!(key(WebhookRules { lease: Some(Duration::from_millis(999)), ..ok.clone() }), "lease_ms");
        assert_eq!(key(WebhookRules { lease: Some(Duration::from_secs(2)), ..WebhookRules::default() }), "lease_ms");
        let fast = WebhookRules { retry_first_delay: Some(Duration::from_millis(99)), ..ok.clone() };
        assert_eq!(key(fast), "retry_first_delay_ms");
        let inverted = WebhookRules { retry_max_delay: Some(Duration::from_millis(100)), ..ok.clone() };
        assert_eq!(
            key(WebhookRules { retry_first_delay: Some(Duration::from_millis(200)), ..inverted }),
            "retry_max_delay_ms"
        );
        assert_eq!(key(WebhookRules { attempt_timeout: Some(Duration::from_millis(50)), ..ok }), "attempt_timeout_ms");
    }

    #[cfg(feature = "webhooks")]
    #[test]
    fn the_timings_reach_the_config() {
        use crate::ext::events::webhook::MemoryWebhookStore;
        use crate::ext::events::webhook::egress::{Egress, EgressPolicy};
        use std::sync::Arc;
        let rules = WebhookRules {
            lease: Some(Duration::from_secs(2)),
            retry_first_delay: Some(Duration::from_millis(200)),
            ..WebhookRules::default()
        };
        let egress = Arc::new(Egress::new(&EgressPolicy::new()).unwrap());
        let cfg = rules.apply(WebhookConfig::new(Arc::new(MemoryWebhookStore::new()), egress));
        assert_eq!(cfg.lease, Duration::from_secs(2));
        assert_eq!(cfg.retry.delay(1), Duration::from_millis(200));
        assert_eq!(cfg.retry.delay(2), Duration::from_millis(400));
        assert_eq!(cfg.retry.max_delay, Duration::from_secs(300), "the default cap is kept");
    }
}
