//! Control envelopes (events.md §3.3) — `verification`, `gap`,
//! `terminated` — with their `msg_<type>_<random>` ids, and the handshake
//! that proves an endpoint wants deliveries (§3.4): a signed `verification`
//! envelope with a single-use nonce, answered 2xx with that nonce echoed as
//! `{"challenge": …}`, compared in constant time. The endpoint's own words
//! never come back: a failure is one of the categories.

use super::attempt::headers;
use super::record::DeliveryFailure;
use super::transport::WebhookTransport;
use crate::protocol::RpcError;
use crate::protocol::webhook_signature::WebhookSecret;
use bytes::Bytes;
use serde_json::{Value, json};

/// The most bytes of a handshake answer read as JSON.
const MAX_CHALLENGE_ANSWER: usize = 4096;

/// A fresh envelope id, `msg_<kind>_` and 32 hex digits.
pub(crate) fn envelope_id(kind: &str) -> String {
    format!("msg_{kind}_{:032x}", rand::random::<u128>())
}

/// The body of a `gap` envelope: delivery continues later than `cursor` asked.
pub(crate) fn gap(cursor: &str) -> Vec<u8> {
    json!({ "type": "gap", "cursor": cursor }).to_string().into_bytes()
}

/// The body of a `terminated` envelope carrying `error`.
pub(crate) fn terminated(error: &RpcError) -> Vec<u8> {
    json!({ "type": "terminated", "error": error }).to_string().into_bytes()
}

/// Whether `body` is an envelope of `kind`.
pub(crate) fn is_envelope(body: &[u8], kind: &str) -> bool {
    serde_json::from_slice::<Value>(body).is_ok_and(|v| v.get("type").and_then(Value::as_str) == Some(kind))
}

/// Byte-for-byte equality that takes the same time wherever they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Proves that the endpoint at `url` wants deliveries for `subscription_id`:
/// a `verification` envelope signed by `secrets` at `now_ms`, answered 2xx
/// echoing its challenge (`challenge_failed` otherwise, or the transport's category).
pub async fn verify_endpoint(
    transport: &dyn WebhookTransport,
    url: &str,
    subscription_id: &str,
    secrets: &[WebhookSecret],
    now_ms: u64,
) -> Result<(), DeliveryFailure> {
    let challenge = format!("{:032x}{:032x}", rand::random::<u128>(), rand::random::<u128>());
    let body = json!({ "type": "verification", "challenge": challenge }).to_string().into_bytes();
    let headers = headers(secrets, &envelope_id("verification"), subscription_id, now_ms, &body);
    let answer = transport.post(url, &headers, Bytes::from(body)).await?;
    if !(200..300).contains(&answer.status) || answer.body.len() > MAX_CHALLENGE_ANSWER {
        return Err(DeliveryFailure::ChallengeFailed);
    }
    let echoed = serde_json::from_slice::<Value>(&answer.body)
        .ok()
        .and_then(|v| v.get("challenge").and_then(Value::as_str).map(str::to_owned));
    match echoed {
        Some(e) if same(e.as_bytes(), challenge.as_bytes()) => Ok(()),
        _ => Err(DeliveryFailure::ChallengeFailed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelopes_say_their_type_and_ids_are_fresh() {
        let a = envelope_id("gap");
        assert!(a.starts_with("msg_gap_") && a.len() == 8 + 32, "{a}");
        assert_ne!(a, envelope_id("gap"));
        assert!(is_envelope(&gap("c1"), "gap"));
        assert!(is_envelope(&terminated(&RpcError::internal("x")), "terminated"));
        assert!(!is_envelope(br#"{"eventId":"e"}"#, "gap"));
        assert!(same(b"abc", b"abc") && !same(b"abc", b"abd") && !same(b"ab", b"abc"));
    }
}
