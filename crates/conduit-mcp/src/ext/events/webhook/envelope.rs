//! The control envelopes the delivery sends itself (events.md §3.3): `gap`
//! and `terminated`, with their `msg_<type>_<random>` ids (`verification` is
//! the handshake's, in `verify.rs`).

use crate::protocol::RpcError;
use serde_json::{Value, json};

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
    }
}
