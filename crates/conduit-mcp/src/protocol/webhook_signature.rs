//! Standard Webhooks signing, as the Events extension's webhook delivery
//! uses it: the `whsec_` secret, the `v1,<base64>` signature of
//! `"{webhook-id}.{webhook-timestamp}." + body` (HMAC-SHA256, standard base64
//! with padding), and checking a `webhook-signature` header that may carry
//! several space-separated signatures (a secret being rotated). Wire-level
//! only, no I/O: the server's delivery signs with [`WebhookSecret::sign`],
//! a receiver checks with [`WebhookSecret::verify`].

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::fmt;

/// The prefix of a secret's text form.
pub const SECRET_PREFIX: &str = "whsec_";
/// The signature scheme this module writes and reads (`v1,`: HMAC-SHA256).
pub const SCHEME_V1: &str = "v1";
/// The fewest key bytes a secret may decode to.
pub const MIN_SECRET_BYTES: usize = 24;
/// The most key bytes a secret may decode to.
pub const MAX_SECRET_BYTES: usize = 64;

/// The header naming the message (the `eventId` for an event).
pub const WEBHOOK_ID_HEADER: &str = "webhook-id";
/// The header with the attempt's Unix time in seconds.
pub const WEBHOOK_TIMESTAMP_HEADER: &str = "webhook-timestamp";
/// The header with the signatures.
pub const WEBHOOK_SIGNATURE_HEADER: &str = "webhook-signature";
/// The MCP header naming the subscription a delivery belongs to.
pub const SUBSCRIPTION_ID_HEADER: &str = "x-mcp-subscription-id";

/// Why a secret's text was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SecretError {
    /// The text does not start with `whsec_`.
    #[error("a webhook secret starts with whsec_")]
    MissingPrefix,
    /// The text after `whsec_` is not standard base64.
    #[error("a webhook secret is whsec_ and standard base64")]
    NotBase64,
    /// The key is shorter than 24 or longer than 64 bytes.
    #[error("a webhook secret decodes to 24 to 64 bytes, not {0}")]
    Length(usize),
}

/// A signing key: the bytes base64 of a `whsec_` secret decodes to. Its
/// `Debug` never shows them.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookSecret {
    key: Vec<u8>,
}

impl fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WebhookSecret({} bytes)", self.key.len())
    }
}

impl WebhookSecret {
    /// Reads `whsec_` + base64 of 24 to 64 bytes.
    pub fn parse(text: &str) -> Result<Self, SecretError> {
        let b64 = text.strip_prefix(SECRET_PREFIX).ok_or(SecretError::MissingPrefix)?;
        let key = STANDARD.decode(b64).map_err(|_| SecretError::NotBase64)?;
        Self::from_bytes(key)
    }

    /// A secret of these key bytes (24 to 64 of them).
    pub fn from_bytes(key: Vec<u8>) -> Result<Self, SecretError> {
        if (MIN_SECRET_BYTES..=MAX_SECRET_BYTES).contains(&key.len()) {
            Ok(Self { key })
        } else {
            Err(SecretError::Length(key.len()))
        }
    }

    /// The text form, `whsec_` + base64.
    pub fn to_text(&self) -> String {
        format!("{SECRET_PREFIX}{}", STANDARD.encode(&self.key))
    }

    /// The MAC over `"{id}.{timestamp}." + body`.
    fn mac(&self, id: &str, timestamp: i64, body: &[u8]) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("HMAC takes keys of any length");
        mac.update(id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        mac
    }

    /// `v1,<base64>`: the signature of exactly these body bytes (sign the
    /// buffer that is sent; never re-serialise after signing).
    pub fn sign(&self, id: &str, timestamp: i64, body: &[u8]) -> String {
        format!("{SCHEME_V1},{}", STANDARD.encode(self.mac(id, timestamp, body).finalize().into_bytes()))
    }

    /// Whether any `v1,` signature in `header` (space-separated; other
    /// schemes are skipped) is this secret's over `id`, `timestamp`, `body`.
    /// Each comparison takes constant time.
    pub fn verify(&self, id: &str, timestamp: i64, body: &[u8], header: &str) -> bool {
        header
            .split(' ')
            .filter_map(|s| s.strip_prefix("v1,"))
            .any(|b64| STANDARD.decode(b64).is_ok_and(|sig| self.mac(id, timestamp, body).verify_slice(&sig).is_ok()))
    }
}

/// A `webhook-signature` header signed by each secret (old and new while one rotates).
pub fn signature_header(secrets: &[WebhookSecret], id: &str, timestamp: i64, body: &[u8]) -> String {
    secrets.iter().map(|s| s.sign(id, timestamp, body)).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    // The Standard Webhooks specification's published example.
    const SPEC_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const SPEC_ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const SPEC_TIMESTAMP: i64 = 1614265330;
    const SPEC_BODY: &[u8] = br#"{"test": 2432232314}"#;
    const SPEC_SIGNATURE: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

    #[test]
    fn signs_the_spec_example_and_verifies_it() {
        let s = WebhookSecret::parse(SPEC_SECRET).unwrap();
        assert_eq!(s.sign(SPEC_ID, SPEC_TIMESTAMP, SPEC_BODY), SPEC_SIGNATURE);
        assert!(s.verify(SPEC_ID, SPEC_TIMESTAMP, SPEC_BODY, SPEC_SIGNATURE));
        assert_eq!(s.to_text(), SPEC_SECRET);
    }

    #[test]
    fn any_signature_of_several_may_verify_and_a_change_anywhere_fails() {
        let s = WebhookSecret::parse(SPEC_SECRET).unwrap();
        let other = WebhookSecret::from_bytes(vec![7; 32]).unwrap();
        let both = signature_header(&[other.clone(), s.clone()], SPEC_ID, SPEC_TIMESTAMP, SPEC_BODY);
        assert_eq!(both.split(' ').count(), 2);
        assert!(s.verify(SPEC_ID, SPEC_TIMESTAMP, SPEC_BODY, &both));
        assert!(s.verify(SPEC_ID, SPEC_TIMESTAMP, SPEC_BODY, &format!("v1a,abc {SPEC_SIGNATURE}")));
        assert!(!s.verify(SPEC_ID, SPEC_TIMESTAMP + 1, SPEC_BODY, SPEC_SIGNATURE));
        assert!(!s.verify("msg_other", SPEC_TIMESTAMP, SPEC_BODY, SPEC_SIGNATURE));
        assert!(!s.verify(SPEC_ID, SPEC_TIMESTAMP, br#"{"test": 2432232315}"#, SPEC_SIGNATURE));
        assert!(!s.verify(SPEC_ID, SPEC_TIMESTAMP, SPEC_BODY, &SPEC_SIGNATURE.replace("v1,", "v2,")));
        assert!(!s.verify(SPEC_ID, SPEC_TIMESTAMP, SPEC_BODY, "v1,not base64!"));
        assert!(!s.verify(SPEC_ID, SPEC_TIMESTAMP, SPEC_BODY, ""));
        assert!(!other.verify(SPEC_ID, SPEC_TIMESTAMP, SPEC_BODY, SPEC_SIGNATURE));
    }

    #[test]
    fn secrets_are_whsec_and_base64_of_24_to_64_bytes() {
        let text = |n: usize| format!("whsec_{}", STANDARD.encode(vec![1u8; n]));
        assert_eq!(WebhookSecret::parse(&text(23)), Err(SecretError::Length(23)));
        assert!(WebhookSecret::parse(&text(24)).is_ok());
        assert!(WebhookSecret::parse(&text(64)).is_ok());
        assert_eq!(WebhookSecret::parse(&text(65)), Err(SecretError::Length(65)));
        assert_eq!(WebhookSecret::parse("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), Err(SecretError::MissingPrefix));
        assert_eq!(WebhookSecret::parse("whsec_%%%"), Err(SecretError::NotBase64));
        let shown = format!("{:?}", WebhookSecret::parse(SPEC_SECRET).unwrap());
        assert_eq!(shown, "WebhookSecret(24 bytes)", "the key never shows");
    }
}
