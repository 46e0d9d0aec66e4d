//! [`WebhookVerifier`]: the receiving side of Events webhook deliveries,
//! for any HTTP app (axum's `HeaderMap` is the one taken here): the
//! Standard Webhooks signature over the raw body, the timestamp within a
//! tolerance of a clock the caller passes in, and each `webhook-id` accepted
//! once, remembered in a store bounded in bytes (oldest forgotten first).
//! Signing itself is [`protocol::webhook_signature`](crate::protocol::webhook_signature).

use crate::protocol::webhook_signature::{
    SUBSCRIPTION_ID_HEADER, WEBHOOK_ID_HEADER, WEBHOOK_SIGNATURE_HEADER, WEBHOOK_TIMESTAMP_HEADER, WebhookSecret,
};
use reqwest::header::HeaderMap;
use std::collections::{HashSet, VecDeque};
use std::sync::Mutex;

/// The tolerance the Standard Webhooks libraries use, in seconds.
pub const DEFAULT_TOLERANCE_S: i64 = 300;
/// How many bytes of `webhook-id`s a verifier remembers by default.
pub const DEFAULT_SEEN_BYTES: usize = 1 << 20;
/// The longest `webhook-id` accepted, in bytes.
pub const MAX_WEBHOOK_ID_BYTES: usize = 256;

/// Why a delivery was refused (answer it with a 4xx; process nothing).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Rejection {
    /// A required header is missing, not text, or too long.
    #[error("missing or malformed header {0}")]
    Header(&'static str),
    /// The timestamp is further than the tolerance from now.
    #[error("webhook-timestamp is outside the tolerance")]
    Stale,
    /// No signature verifies with any secret.
    #[error("no webhook-signature verifies")]
    Signature,
    /// This `webhook-id` was accepted before.
    #[error("webhook-id already delivered")]
    Duplicate,
}

/// A delivery that verified.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Verified {
    /// Its `webhook-id` (the `eventId` of an event).
    pub id: String,
    /// Its `webhook-timestamp`.
    pub timestamp: i64,
    /// Its `X-MCP-Subscription-Id`, when sent.
    pub subscription_id: Option<String>,
}

/// The `webhook-id`s accepted so far, at most `cap` bytes of them.
#[derive(Debug, Default)]
struct Seen {
    order: VecDeque<String>,
    ids: HashSet<String>,
    bytes: usize,
    cap: usize,
}

impl Seen {
    /// Remembers `id`; false when it was there already.
    fn insert(&mut self, id: &str) -> bool {
        if self.ids.contains(id) {
            return false;
        }
        self.bytes += id.len();
        self.ids.insert(id.to_owned());
        self.order.push_back(id.to_owned());
        while self.bytes > self.cap {
            let Some(old) = self.order.pop_front() else { break };
            self.bytes -= old.len();
            self.ids.remove(&old);
        }
        true
    }
}

/// Checks webhook deliveries against a set of secrets (old and new while one rotates).
#[derive(Debug)]
pub struct WebhookVerifier {
    secrets: Vec<WebhookSecret>,
    tolerance_s: i64,
    seen: Mutex<Seen>,
}

impl WebhookVerifier {
    /// A verifier of `secrets`, with the default tolerance and dedupe store.
    pub fn new(secrets: Vec<WebhookSecret>) -> Self {
        Self {
            secrets,
            tolerance_s: DEFAULT_TOLERANCE_S,
            seen: Mutex::new(Seen { cap: DEFAULT_SEEN_BYTES, ..Seen::default() }),
        }
    }

    /// Accepting timestamps within `seconds` of now (either side).
    pub fn tolerance_s(mut self, seconds: i64) -> Self {
        self.tolerance_s = seconds;
        self
    }

    /// Remembering at most `bytes` of accepted `webhook-id`s (an id
    /// forgotten before its timestamp leaves the tolerance could be replayed:
    /// size it for the deliveries of one tolerance window).
    pub fn remember_bytes(self, bytes: usize) -> Self {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).cap = bytes;
        self
    }

    /// Verifies one delivery: `headers` and the raw `body` bytes as
    /// received, `now_s` the current Unix time in seconds. The id is
    /// remembered only when everything else verified.
    pub fn verify(&self, headers: &HeaderMap, body: &[u8], now_s: i64) -> Result<Verified, Rejection> {
        let text = |name: &'static str| {
            headers.get(name).and_then(|v| v.to_str().ok()).filter(|v| !v.is_empty()).ok_or(Rejection::Header(name))
        };
        let id = text(WEBHOOK_ID_HEADER)?;
        if id.len() > MAX_WEBHOOK_ID_BYTES {
            return Err(Rejection::Header(WEBHOOK_ID_HEADER));
        }
        let timestamp: i64 =
            text(WEBHOOK_TIMESTAMP_HEADER)?.parse().map_err(|_| Rejection::Header(WEBHOOK_TIMESTAMP_HEADER))?;
        let signature = text(WEBHOOK_SIGNATURE_HEADER)?;
        if now_s.abs_diff(timestamp) > self.tolerance_s.unsigned_abs() {
            return Err(Rejection::Stale);
        }
        if !self.secrets.iter().any(|s| s.verify(id, timestamp, body, signature)) {
            return Err(Rejection::Signature);
        }
        if !self.seen.lock().unwrap_or_else(|p| p.into_inner()).insert(id) {
            return Err(Rejection::Duplicate);
        }
        let subscription_id = headers.get(SUBSCRIPTION_ID_HEADER).and_then(|v| v.to_str().ok()).map(str::to_owned);
        Ok(Verified { id: id.to_owned(), timestamp, subscription_id })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const BODY: &[u8] = br#"{"test": 2432232314}"#;
    const NOW: i64 = 1614265330;

    fn headers(id: &str, ts: i64, sig: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(WEBHOOK_ID_HEADER, HeaderValue::from_str(id).unwrap());
        h.insert(WEBHOOK_TIMESTAMP_HEADER, HeaderValue::from_str(&ts.to_string()).unwrap());
        h.insert(WEBHOOK_SIGNATURE_HEADER, HeaderValue::from_str(sig).unwrap());
        h.insert(SUBSCRIPTION_ID_HEADER, HeaderValue::from_static("sub_1"));
        h
    }

    fn verifier() -> WebhookVerifier {
        WebhookVerifier::new(vec![WebhookSecret::parse(SECRET).unwrap()])
    }

    #[test]
    fn the_spec_example_verifies_once_then_is_a_duplicate() {
        let v = verifier();
        let h = headers("msg_p5jXN8AQM9LWM0D4loKWxJek", NOW, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
        let ok = v.verify(&h, BODY, NOW + 10).unwrap();
        assert_eq!(ok.id, "msg_p5jXN8AQM9LWM0D4loKWxJek");
        assert_eq!(ok.subscription_id.as_deref(), Some("sub_1"));
        assert_eq!(v.verify(&h, BODY, NOW + 10), Err(Rejection::Duplicate));
    }

    #[test]
    fn stale_forged_and_headerless_deliveries_are_refused_and_not_remembered() {
        let v = verifier().tolerance_s(300);
        let s = WebhookSecret::parse(SECRET).unwrap();
        let sig = s.sign("m1", NOW, BODY);
        assert_eq!(v.verify(&headers("m1", NOW, &sig), BODY, NOW + 301), Err(Rejection::Stale));
        assert_eq!(v.verify(&headers("m1", NOW, &sig), BODY, NOW - 301), Err(Rejection::Stale));
        assert_eq!(v.verify(&headers("m1", NOW, &sig), b"{}", NOW), Err(Rejection::Signature));
        let mut h = headers("m1", NOW, &sig);
        h.remove(WEBHOOK_TIMESTAMP_HEADER);
        assert_eq!(v.verify(&h, BODY, NOW), Err(Rejection::Header(WEBHOOK_TIMESTAMP_HEADER)));
        let long = "m".repeat(MAX_WEBHOOK_ID_BYTES + 1);
        let h = headers(&long, NOW, &s.sign(&long, NOW, BODY));
        assert_eq!(v.verify(&h, BODY, NOW), Err(Rejection::Header(WEBHOOK_ID_HEADER)));
        // None of the refusals used up the id.
        assert!(v.verify(&headers("m1", NOW, &sig), BODY, NOW + 300).is_ok());
    }

    #[test]
    fn the_dedupe_store_forgets_the_oldest_ids_past_its_byte_cap() {
        let v = verifier().remember_bytes(4);
        let s = WebhookSecret::parse(SECRET).unwrap();
        let deliver = |id: &str| v.verify(&headers(id, NOW, &s.sign(id, NOW, BODY)), BODY, NOW);
        assert!(deliver("aa").is_ok());
        assert!(deliver("bb").is_ok());
        assert_eq!(deliver("bb"), Err(Rejection::Duplicate));
        assert!(deliver("cc").is_ok(), "aa is forgotten to make room");
        assert_eq!(deliver("cc"), Err(Rejection::Duplicate));
        assert!(deliver("aa").is_ok(), "forgotten, so accepted again");
    }
}
