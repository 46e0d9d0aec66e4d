//! [`WebhookRules`]: the operator's webhook settings that are plain values —
//! what a configuration file or flags can say (the `[events.webhooks]`
//! table) — laid over a [`WebhookConfig`] once the server has its store and
//! its transport. The egress's own rules (`allow_loopback`, the origins
//! allowed plain `http://`) are here too, for the server to hand its egress.

#[cfg(feature = "webhooks")]
use super::config::WebhookConfig;
use std::time::Duration;

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
        cfg
    }
}
