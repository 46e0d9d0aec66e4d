//! A webhook subscription's key and id (events.md §2.7 W5, W6, P7): the key
//! is `(principal, delivery.url, name, arguments)`, the URL as sent (not
//! normalised) and the arguments compared as canonical JSON; the id is
//! `sub_` and the hex of the first 16 bytes of SHA-256 over the canonical
//! JSON of `[principal, url, name, arguments]`, so it is the same on every
//! node and after every restart. The id is a routing handle: no method
//! takes it as input.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// What names one webhook subscription.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriptionKey {
    /// The authenticated principal that subscribed.
    pub principal: String,
    /// `delivery.url`, exactly as sent.
    pub url: String,
    /// The event type.
    pub name: String,
    /// The subscription's arguments (an object; absent is `{}`).
    pub arguments: Value,
}

impl SubscriptionKey {
    /// The canonical JSON of `[principal, url, name, arguments]`: object
    /// members sorted by their names' UTF-16 code units, no whitespace
    /// (RFC 8785; numbers as serde_json writes them, which for integers is
    /// what RFC 8785 writes).
    pub fn canonical(&self) -> String {
        let mut out = String::new();
        let parts = [
            Value::String(self.principal.clone()),
            Value::String(self.url.clone()),
            Value::String(self.name.clone()),
            self.arguments.clone(),
        ];
        write_canonical(&Value::Array(parts.into()), &mut out);
        out
    }

    /// The subscription's id: `sub_` and 32 hex digits.
    pub fn id(&self) -> String {
        let digest = Sha256::digest(self.canonical().as_bytes());
        let mut id = String::with_capacity(36);
        id.push_str("sub_");
        for b in &digest[..16] {
            id.push_str(&format!("{b:02x}"));
        }
        id
    }
}

/// Writes `v` as canonical JSON.
fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(members) => {
            let mut sorted: Vec<(&String, &Value)> = members.iter().collect();
            sorted.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            out.push('{');
            for (i, (k, item)) in sorted.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_canonical(item, out);
            }
            out.push('}');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(arguments: Value) -> SubscriptionKey {
        SubscriptionKey {
            principal: "alice".into(),
            url: "https://hooks.example/h".into(),
            name: "incident.created".into(),
            arguments,
        }
    }

    #[test]
    fn the_id_is_stable_over_member_order_and_differs_with_any_part_of_the_key() {
        let a = key(json!({ "severity": "P1", "team": { "b": 1, "a": [1, 2] } }));
        let b = key(json!({ "team": { "a": [1, 2], "b": 1 }, "severity": "P1" }));
        assert_eq!(
            a.canonical(),
            r#"["alice","https://hooks.example/h","incident.created",{"severity":"P1","team":{"a":[1,2],"b":1}}]"#
        );
        assert_eq!(a.id(), b.id());
        assert_eq!(a.id().len(), 36);
        assert!(a.id().starts_with("sub_"));
        let mut other = a.clone();
        other.url.push('/');
        assert_ne!(other.id(), a.id(), "the URL as sent");
        let mut other = a.clone();
        other.principal = "bob".into();
        assert_ne!(other.id(), a.id(), "tenants apart");
        assert_ne!(key(json!({ "severity": "P2" })).id(), a.id());
    }

    #[test]
    fn members_sort_by_utf16_code_units() {
        // U+10000 is the surrogate pair D800 DC00 in UTF-16, so it sorts before U+E000.
        let k = key(json!({ "\u{e000}": 1, "\u{10000}": 2, "a": 3 }));
        assert!(k.canonical().ends_with("{\"a\":3,\"\u{10000}\":2,\"\u{e000}\":1}]"), "{}", k.canonical());
    }
}
