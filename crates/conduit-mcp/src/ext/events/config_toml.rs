//! The `[events]` TOML table ([`ConfigFile`](crate::config_file::ConfigFile)
//! reads it); today its one part is webhook delivery, off unless the
//! `[events.webhooks]` table is there.
//!
//! ```toml
//! [events.webhooks]
//! allow_origins = ["http://127.0.0.1:9000"]   # plain http (and loopback) at these origins only
//! verified_origins = ["https://hooks.example"] # no handshake for these origins
//! allow_loopback = false        # any https callback may resolve to loopback
//! max_per_principal = 100       # live subscriptions of one principal
//! max_bytes_per_principal = 1048576
//! default_ttl_ms = 3600000      # granted when ttlMs is absent
//! max_ttl_ms = 604800000        # the longest grant
//! allow_no_expiry = false       # grant ttlMs: null
//! max_attempts = 5              # per delivery, the first included
//! suspend_after_ms = 3600000    # all failing this long: suspended until refreshed
//! retry_first_delay_ms = 30000  # the wait after a first failure, doubled after each (>= 100)
//! retry_max_delay_ms = 300000   # the longest wait between attempts (>= 100)
//! lease_ms = 60000              # a claimed delivery is one node's this long (>= 1000, > attempt_timeout_ms)
//! attempt_timeout_ms = 5000     # one attempt in all: resolve, connect, TLS, answer (>= 100)
//! ```
//!
//! Roots for a receiver with a private certificate authority are given by
//! `serve --webhook-root-cert FILE`.

use super::webhook::WebhookRules;
use crate::config::ConfigError;
use crate::config::shape::{Positive, Words};
use std::time::Duration;

/// The `[events]` table as written.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EventsTable {
    webhooks: Option<WebhooksTable>,
}

/// The `[events.webhooks]` table as written.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct WebhooksTable {
    allow_origins: Option<Words>,
    verified_origins: Option<Words>,
    allow_loopback: Option<bool>,
    max_per_principal: Option<Positive>,
    max_bytes_per_principal: Option<Positive>,
    default_ttl_ms: Option<Positive>,
    max_ttl_ms: Option<Positive>,
    allow_no_expiry: Option<bool>,
    max_attempts: Option<Positive>,
    suspend_after_ms: Option<Positive>,
    retry_first_delay_ms: Option<Positive>,
    retry_max_delay_ms: Option<Positive>,
    lease_ms: Option<Positive>,
    attempt_timeout_ms: Option<Positive>,
}

impl EventsTable {
    /// The webhook rules (`None`: webhooks off), validated.
    pub(crate) fn webhooks(&self) -> Result<Option<WebhookRules>, ConfigError> {
        let Some(w) = &self.webhooks else { return Ok(None) };
        let words = |v: &Option<Words>| v.as_ref().map(|w| w.0.clone()).unwrap_or_default();
        let ms = |v: Option<Positive>| v.map(|p| Duration::from_millis(p.0));
        let rules = WebhookRules {
            allow_origins: words(&w.allow_origins),
            verified_origins: words(&w.verified_origins),
            allow_loopback: w.allow_loopback.unwrap_or(false),
            max_per_principal: w.max_per_principal.map(Positive::count),
            max_bytes_per_principal: w.max_bytes_per_principal.map(Positive::count),
            default_ttl: ms(w.default_ttl_ms),
            max_ttl: ms(w.max_ttl_ms),
            allow_no_expiry: w.allow_no_expiry,
            max_attempts: w.max_attempts.map(|p| u32::try_from(p.0).unwrap_or(u32::MAX)),
            suspend_after: ms(w.suspend_after_ms),
            retry_first_delay: ms(w.retry_first_delay_ms),
            retry_max_delay: ms(w.retry_max_delay_ms),
            lease: ms(w.lease_ms),
            attempt_timeout: ms(w.attempt_timeout_ms),
            root_certificates_pem: Vec::new(),
        };
        rules.check()?;
        for o in rules.allow_origins.iter().chain(&rules.verified_origins) {
            if super::webhook::origin::normalise_origin(o).is_none() {
                let why = format!("{o:?} is not an origin (scheme://host[:port])");
                return Err(ConfigError::new("events.webhooks", "allow_origins", why));
            }
        }
        if let (Some(d), Some(m)) = (rules.default_ttl, rules.max_ttl)
            && d > m
        {
            return Err(ConfigError::new("events.webhooks", "default_ttl_ms", "must be at most max_ttl_ms"));
        }
        Ok(Some(rules))
    }
}

#[cfg(test)]
mod tests {
    use crate::config_file::ConfigFile;

    #[test]
    fn the_table_turns_webhooks_on_and_refuses_what_is_not_an_origin() {
        assert!(ConfigFile::parse("").unwrap().events_webhooks.is_none(), "off by default");
        let file = ConfigFile::parse(
            "[events.webhooks]\nallow_origins = [\"http://127.0.0.1:9000\"]\nmax_attempts = 3\nallow_loopback = true\n",
        )
        .unwrap();
        let rules = file.events_webhooks.unwrap();
        assert_eq!(rules.allow_origins, ["http://127.0.0.1:9000"]);
        assert_eq!(rules.max_attempts, Some(3));
        assert!(rules.allow_loopback);
        let e = ConfigFile::parse("[events.webhooks]\nallow_origins = [\"http://h/path\"]\n").unwrap_err();
        assert_eq!(e.key(), "allow_origins");
        let e = ConfigFile::parse("[events.webhooks]\nlease_ms = 2000\n").unwrap_err();
        assert_eq!(e.key(), "lease_ms", "a lease within the default attempt timeout");
        let fast = "[events.webhooks]\nlease_ms = 2000\nattempt_timeout_ms = 1000\nretry_first_delay_ms = 200\n";
        let rules = ConfigFile::parse(fast).unwrap().events_webhooks.unwrap();
        assert_eq!(rules.lease, Some(std::time::Duration::from_secs(2)));
        assert_eq!(rules.retry_first_delay, Some(std::time::Duration::from_millis(200)));
        let e = ConfigFile::parse("[events.webhooks]\nbogus = 1\n").unwrap_err();
        assert!(e.to_string().contains("bogus"), "{e}");
    }
}
