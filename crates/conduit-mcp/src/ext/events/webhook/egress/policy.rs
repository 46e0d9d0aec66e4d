//! [`EgressPolicy`]: what the operator lets webhook deliveries reach. Set in
//! the server's configuration only; nothing a request carries changes it.

use super::origin::{Destination, UrlRefusal, normalise_origin};
use crate::config::ConfigError;
use crate::ext::events::webhook::check_address;
use std::collections::BTreeSet;
use std::time::Duration;

/// The table and key prefix a refused policy is reported under.
const TABLE: &str = "ext_events";

/// The operator's egress rules for webhook deliveries and verification POSTs.
///
/// By default a callback must be `https://` and every address its host
/// resolves to must be globally routable (loopback included in the refused
/// set). Two ways open more, both for the operator only:
/// - [`allow_origins`](Self::allow_origins): exact `scheme://host:port`
///   origins that may be plain `http://` and may resolve to loopback (tests,
///   a relay on the same machine). Other special-purpose addresses stay refused.
/// - [`allow_loopback`](Self::allow_loopback): loopback addresses for every
///   `https://` callback.
#[derive(Clone)]
#[non_exhaustive]
#[must_use]
pub struct EgressPolicy {
    /// Origins exempt from the `https://` rule and allowed to resolve to
    /// loopback, each `scheme://host[:port]` (default: none). Compared
    /// exactly with the callback URL's origin, the port spelled out
    /// (`https://hook.test` is `https://hook.test:443`).
    pub allow_origins: Vec<String>,
    /// Whether any `https://` callback may resolve to a loopback address
    /// (default false).
    pub allow_loopback: bool,
    /// How long one attempt may take in all: resolving, connecting, TLS,
    /// the answer and its body (default 5 s).
    pub timeout: Duration,
    /// Certificates (PEM, one or more each) trusted as roots besides the
    /// built-in web PKI ones (default: none).
    pub root_certificates_pem: Vec<String>,
    /// Most bytes of an endpoint's answer body kept (default 4 KiB); the
    /// rest is never read.
    pub max_answer_bytes: usize,
}

impl Default for EgressPolicy {
    fn default() -> Self {
        Self {
            allow_origins: Vec::new(),
            allow_loopback: false,
            timeout: Duration::from_secs(5),
            root_certificates_pem: Vec::new(),
            max_answer_bytes: 4 * 1024,
        }
    }
}

impl EgressPolicy {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }
}

impl std::fmt::Debug for EgressPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EgressPolicy")
            .field("allow_origins", &self.allow_origins)
            .field("allow_loopback", &self.allow_loopback)
            .field("timeout", &self.timeout)
            .field("root_certificates", &self.root_certificates_pem.len())
            .field("max_answer_bytes", &self.max_answer_bytes)
            .finish()
    }
}

/// A policy checked once: origins written the one way, certificates parsed.
#[derive(Clone)]
pub(crate) struct Rules {
    origins: BTreeSet<String>,
    allow_loopback: bool,
    pub(crate) timeout: Duration,
    pub(crate) roots: Vec<reqwest::Certificate>,
    pub(crate) max_answer_bytes: usize,
}

/// What the rules let one callback URL do before its addresses are known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Admission {
    /// Whether its host may resolve to loopback.
    pub(crate) loopback: bool,
}

impl Rules {
    pub(crate) fn new(policy: &EgressPolicy) -> Result<Self, ConfigError> {
        let origins = policy
            .allow_origins
            .iter()
            .map(|o| normalise_origin(o))
            .collect::<Result<_, _>>()
            .map_err(|why| ConfigError::new(TABLE, "webhook_egress.allow_origins", why))?;
        if policy.timeout.is_zero() {
            return Err(ConfigError::new(TABLE, "webhook_egress.timeout", "must be more than 0"));
        }
        let mut roots = Vec::new();
        for pem in &policy.root_certificates_pem {
            match reqwest::Certificate::from_pem_bundle(pem.as_bytes()) {
                Ok(certs) if !certs.is_empty() => roots.extend(certs),
                _ => {
                    let why = "must be PEM certificates";
                    return Err(ConfigError::new(TABLE, "webhook_egress.root_certificates", why));
                }
            }
        }
        let max_answer_bytes = policy.max_answer_bytes;
        Ok(Self { origins, allow_loopback: policy.allow_loopback, timeout: policy.timeout, roots, max_answer_bytes })
    }

    /// Whether `d` may be tried at all, and with what allowance: https, or
    /// an allowlisted origin; a literal IP host checked here (no DNS).
    pub(crate) fn admit(&self, d: &Destination) -> Result<Admission, UrlRefusal> {
        let listed = self.origins.contains(&d.origin);
        if !d.is_https() && !listed {
            return Err(UrlRefusal::NotHttps);
        }
        let admission = Admission { loopback: self.allow_loopback || listed };
        if let super::origin::Host::Ip(ip) = d.host {
            check_address(ip, admission.loopback).map_err(UrlRefusal::Address)?;
        }
        Ok(admission)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ext::events::webhook::AddressRefusal;

    fn rules(origins: &[&str], allow_loopback: bool) -> Rules {
        let mut p = EgressPolicy::new();
        p.allow_origins = origins.iter().map(|s| s.to_string()).collect();
        p.allow_loopback = allow_loopback;
        Rules::new(&p).unwrap()
    }

    fn admit(r: &Rules, url: &str) -> Result<Admission, UrlRefusal> {
        r.admit(&Destination::parse(url).unwrap())
    }

    #[test]
    fn https_only_and_loopback_only_where_the_operator_opened_it() {
        let strict = rules(&[], false);
        assert_eq!(admit(&strict, "https://hook.test/h"), Ok(Admission { loopback: false }));
        assert_eq!(admit(&strict, "http://hook.test/h"), Err(UrlRefusal::NotHttps));
        assert_eq!(admit(&strict, "https://127.0.0.1:9/h"), Err(UrlRefusal::Address(AddressRefusal::Loopback)));
        assert_eq!(admit(&strict, "https://[::1]:9/h"), Err(UrlRefusal::Address(AddressRefusal::Loopback)));
        assert_eq!(admit(&strict, "https://10.0.0.1/h"), Err(UrlRefusal::Address(AddressRefusal::SpecialPurpose)));
        let mapped = admit(&strict, "https://[::ffff:127.0.0.1]/h");
        assert_eq!(mapped, Err(UrlRefusal::Address(AddressRefusal::Loopback)), "IPv4 in IPv6 judged as IPv4");
        let mapped = admit(&strict, "https://[::ffff:a9fe:a9fe]/h");
        assert_eq!(mapped, Err(UrlRefusal::Address(AddressRefusal::SpecialPurpose)), "169.254.169.254 in IPv6");
        let decimal = admit(&strict, "https://2130706433/h");
        assert_eq!(decimal, Err(UrlRefusal::Address(AddressRefusal::Loopback)), "127.0.0.1 spelled as one number");

        let listed = rules(&["http://127.0.0.1:9"], false);
        assert_eq!(admit(&listed, "http://127.0.0.1:9/h"), Ok(Admission { loopback: true }));
        assert_eq!(admit(&listed, "http://127.0.0.1:10/h"), Err(UrlRefusal::NotHttps), "the port is part of it");
        assert!(admit(&listed, "https://127.0.0.1:10/h").is_err());

        let lo = rules(&["http://10.0.0.1:80"], true);
        assert_eq!(admit(&lo, "https://127.0.0.1:9/h"), Ok(Admission { loopback: true }));
        assert_eq!(admit(&lo, "http://127.0.0.1:9/h"), Err(UrlRefusal::NotHttps));
        let private = admit(&lo, "http://10.0.0.1/h");
        assert_eq!(private, Err(UrlRefusal::Address(AddressRefusal::SpecialPurpose)), "listing lifts loopback only");
    }

    #[test]
    fn a_bad_policy_is_refused_by_key() {
        let mut p = EgressPolicy::new();
        p.allow_origins = vec!["https://hook.test/path".into()];
        assert_eq!(Rules::new(&p).err().unwrap().key(), "webhook_egress.allow_origins");
        let mut p = EgressPolicy::new();
        p.timeout = Duration::ZERO;
        assert_eq!(Rules::new(&p).err().unwrap().key(), "webhook_egress.timeout");
        let mut p = EgressPolicy::new();
        p.root_certificates_pem = vec!["not pem".into()];
        assert_eq!(Rules::new(&p).err().unwrap().key(), "webhook_egress.root_certificates");
    }
}
