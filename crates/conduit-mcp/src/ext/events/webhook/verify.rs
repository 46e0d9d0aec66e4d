//! Endpoint verification before the first delivery (events.md §3.4): the
//! challenge handshake ([`verify_endpoint`], path 1) and the operator's list
//! of origins taken as verified ([`VerifiedOrigins`], path 2).
//!
//! The two lists of the operator stay apart (our choice): an origin in
//! [`VerifiedOrigins`] is spared the handshake and nothing else, and every
//! delivery to it still goes through the egress rules; only
//! [`EgressPolicy::allow_origins`](super::egress::EgressPolicy::allow_origins)
//! lifts those.

use super::DeliveryFailure;
use super::egress::{Destination, WebhookTransport, normalise_origin};
use crate::config::ConfigError;
use crate::protocol::webhook_signature::{
    SUBSCRIPTION_ID_HEADER, WEBHOOK_ID_HEADER, WEBHOOK_SIGNATURE_HEADER, WEBHOOK_TIMESTAMP_HEADER, WebhookSecret,
    signature_header,
};
use std::collections::BTreeSet;

/// The start of a verification envelope's `webhook-id` (`msg_<type>_<random>`, events.md H2).
pub const VERIFICATION_ID_PREFIX: &str = "msg_verification_";

/// Random bytes in hex: a challenge or an envelope id.
fn random_hex() -> String {
    rand::random::<[u8; 16]>().iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `a` and `b` hold the same bytes, in time that depends on their
/// lengths only.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Asks the endpoint at `url` whether it wants this subscription's
/// deliveries: POSTs the signed `{"type":"verification","challenge":…}`
/// envelope (a fresh random challenge; `webhook-id` `msg_verification_…`,
/// `webhook-timestamp` from `now_ms`, signed by each of `secrets` — the
/// current one first — and `X-MCP-Subscription-Id: subscription_id`)
/// through `transport`, so the egress rules hold for it as for any delivery.
///
/// `Ok` only for a `2xx` answer whose body is JSON with `"challenge"` equal
/// to the one sent (compared in constant time). A reachable endpoint that
/// answers anything else fails with `challenge_failed`; an unreachable one
/// with the transport's category. The endpoint's answer is never part of the
/// error.
pub async fn verify_endpoint(
    transport: &dyn WebhookTransport,
    url: &str,
    subscription_id: &str,
    secrets: &[WebhookSecret],
    now_ms: u64,
) -> Result<(), DeliveryFailure> {
    let challenge = random_hex();
    let id = format!("{VERIFICATION_ID_PREFIX}{}", random_hex());
    let timestamp = i64::try_from(now_ms / 1000).unwrap_or(i64::MAX);
    // Serialised once: the bytes signed are the bytes sent (H10).
    let body = bytes::Bytes::from(serde_json::json!({"type": "verification", "challenge": challenge}).to_string());
    let headers = [
        (WEBHOOK_ID_HEADER, id.clone()),
        (WEBHOOK_TIMESTAMP_HEADER, timestamp.to_string()),
        (WEBHOOK_SIGNATURE_HEADER, signature_header(secrets, &id, timestamp, &body)),
        (SUBSCRIPTION_ID_HEADER, subscription_id.to_owned()),
    ];
    let answer = transport.post(url, &headers, body).await?;
    #[derive(serde::Deserialize)]
    struct Echo {
        challenge: String,
    }
    let echoed = answer.is_success()
        && serde_json::from_slice::<Echo>(&answer.body)
            .is_ok_and(|echo| same_bytes(echo.challenge.as_bytes(), challenge.as_bytes()));
    if echoed {
        Ok(())
    } else {
        tracing::debug!("webhook endpoint did not echo the verification challenge");
        Err(DeliveryFailure::ChallengeFailed)
    }
}

/// Origins the operator vouches for (verification path 2): a callback URL
/// of one of them needs no handshake. Entries are exact `scheme://host[:port]`
/// origins, compared with the port spelled out. Never set by a request, and
/// no exemption from the egress rules.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifiedOrigins {
    origins: BTreeSet<String>,
}

impl VerifiedOrigins {
    /// The operator's list; an entry that is not a bare origin is refused.
    pub fn new<S: AsRef<str>>(entries: impl IntoIterator<Item = S>) -> Result<Self, ConfigError> {
        let origins = entries
            .into_iter()
            .map(|e| normalise_origin(e.as_ref()))
            .collect::<Result<_, _>>()
            .map_err(|why| ConfigError::new("ext_events", "webhook_verified_origins", why))?;
        Ok(Self { origins })
    }

    /// Whether `url`'s origin is on the list (a URL that does not parse is not).
    pub fn covers(&self, url: &str) -> bool {
        Destination::parse(url).is_ok_and(|d| self.origins.contains(&d.origin))
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.origins.is_empty()
    }
}

/// Verification by either path: an origin the operator vouches for passes
/// without a request; any other endpoint must answer the handshake
/// ([`verify_endpoint`]).
pub async fn ensure_verified(
    verified: &VerifiedOrigins,
    transport: &dyn WebhookTransport,
    url: &str,
    subscription_id: &str,
    secrets: &[WebhookSecret],
    now_ms: u64,
) -> Result<(), DeliveryFailure> {
    if verified.covers(url) {
        return Ok(());
    }
    verify_endpoint(transport, url, subscription_id, secrets, now_ms).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_comparison_needs_equal_lengths_and_bytes() {
        assert!(same_bytes(b"abc", b"abc"));
        assert!(!same_bytes(b"abc", b"abd"));
        assert!(!same_bytes(b"abc", b"abcd"));
        assert!(same_bytes(b"", b""));
    }

    #[test]
    fn verified_origins_match_exact_origins_only() {
        let v = VerifiedOrigins::new(["https://rebind.test", "http://127.0.0.1:9000"]).unwrap();
        assert!(v.covers("https://rebind.test/hooks/1"));
        assert!(v.covers("https://REBIND.test:443/x"));
        assert!(v.covers("http://127.0.0.1:9000/h"));
        assert!(!v.covers("https://rebind.test:8443/hooks"));
        assert!(!v.covers("http://rebind.test/hooks"));
        assert!(!v.covers("https://sub.rebind.test/"));
        assert!(!v.covers("not a url"));
        assert!(VerifiedOrigins::new(["https://rebind.test/hooks"]).is_err());
        assert!(VerifiedOrigins::default().is_empty());
    }
}
