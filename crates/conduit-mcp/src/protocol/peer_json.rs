//! JSON from a peer, read into [`serde_json::Value`] with one rule more than
//! serde_json's own: member names that serde_json reserves for itself are refused.
//!
//! With serde_json's `raw_value` feature in the build (axum and sqlx turn it
//! on), a `Value` read from an object whose *first* member is named
//! `$serde_json::private::RawValue` is not that object but the JSON text the
//! member holds. A `Value` map sorts its keys, so an object holding that name
//! anywhere moves it first the next time it is written out: a peer's object
//! could change meaning, or stop parsing, after a SQL store, a notifier or a
//! relay writes it and reads it back. Everything a peer sends is read here,
//! where such a name is an ordinary member name that is then refused, so no
//! value that crossed the boundary holds one, and every serialise → parse
//! cycle after it gives back the same value.

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::cell::Cell;
use std::fmt;

/// The prefix of the member names serde_json gives a meaning of its own
/// (`$serde_json::private::RawValue`, and `…::Number` with `arbitrary_precision`).
pub const RESERVED_PREFIX: &str = "$serde_json::private::";

/// Whether `name` is a member name serde_json reserves.
pub fn is_reserved(name: &str) -> bool {
    name.starts_with(RESERVED_PREFIX)
}

/// Why a peer's JSON text was not read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PeerJsonError {
    /// The text is not JSON.
    #[error("{0}")]
    Syntax(#[from] serde_json::Error),
    /// The text is JSON, but an object in it has a member name serde_json reserves.
    #[error("the member name {RESERVED_PREFIX}… is reserved")]
    ReservedName,
}

/// Reads a peer's JSON text; an object with a reserved member name anywhere is refused.
pub fn from_str(text: &str) -> Result<Value, PeerJsonError> {
    let seen = Cell::new(false);
    let mut de = serde_json::Deserializer::from_str(text);
    let value = PeerValue { reserved: &seen }.deserialize(&mut de)?;
    de.end()?;
    if seen.get() { Err(PeerJsonError::ReservedName) } else { Ok(value) }
}

/// [`from_str`] over bytes (which must be UTF-8, as JSON is).
pub fn from_slice(bytes: &[u8]) -> Result<Value, PeerJsonError> {
    let seen = Cell::new(false);
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = PeerValue { reserved: &seen }.deserialize(&mut de)?;
    de.end()?;
    if seen.get() { Err(PeerJsonError::ReservedName) } else { Ok(value) }
}

/// Whether any object inside `value` has a reserved member name (for values
/// that were built, not read here).
pub fn holds_reserved(value: &Value) -> bool {
    match value {
        Value::Object(m) => m.iter().any(|(k, v)| is_reserved(k) || holds_reserved(v)),
        Value::Array(a) => a.iter().any(holds_reserved),
        _ => false,
    }
}

/// Reads one `Value` with every member name taken literally. A reserved name
/// is not an error on the spot: its member is skipped and `reserved` set, so
/// the caller still reads the rest (a JSON-RPC request's id, to echo it).
#[derive(Clone, Copy)]
pub(crate) struct PeerValue<'a> {
    pub(crate) reserved: &'a Cell<bool>,
}

impl<'de> DeserializeSeed<'de> for PeerValue<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for PeerValue<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        // JSON text has no NaN or infinity; `Value` reads them the same way.
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(v) = seq.next_element_seed(self)? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Map::new();
        while let Some(name) = map.next_key::<String>()? {
            if is_reserved(&name) {
                self.reserved.set(true);
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            let v = map.next_value_seed(self)?;
            members.insert(name, v);
        }
        Ok(Value::Object(members))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a store or a relay does to a value: write it out, read it back with serde_json.
    fn round_trip(v: &Value) -> Result<Value, serde_json::Error> {
        serde_json::from_str(&v.to_string())
    }

    #[test]
    fn a_reserved_name_is_refused_wherever_it_is() {
        let texts = [
            r#"{"$serde_json::private::RawValue":"1"}"#,
            r#"{"n":"","$serde_json::private::RawValue":{}}"#,
            r#"{"a":[{"b":{"\u0024serde_json::private::RawValue":"{}"}}]}"#,
            r#"{"$serde_json::private::Number":"1e999"}"#,
        ];
        for t in texts {
            assert!(matches!(from_str(t), Err(PeerJsonError::ReservedName)), "{t}");
            assert!(matches!(from_slice(t.as_bytes()), Err(PeerJsonError::ReservedName)), "{t}");
        }
    }

    #[test]
    fn what_serde_json_alone_does_with_it() {
        // Why this module exists: the same text means something else to `Value`, or
        // stops parsing after one round trip.
        let first: Value = serde_json::from_str(r#"{"$serde_json::private::RawValue":"[1]"}"#).unwrap();
        assert_eq!(first, serde_json::json!([1]));
        let later: Value = serde_json::from_str(r#"{"n":"","$serde_json::private::RawValue":{}}"#).unwrap();
        assert!(round_trip(&later).is_err());
    }

    #[test]
    fn reads_everything_else_as_value_does() {
        let texts = [
            r#"{"a":1,"b":[true,null,-2,3.5,"s"],"c":{"d":{}},"e":18446744073709551615}"#,
            r#"[{"$serde_json::public":1},"$serde_json::private::RawValue"]"#,
            r#""\ud83d\ude00""#,
            "-0.0",
            "1e300",
        ];
        for t in texts {
            let ours = from_str(t).unwrap();
            assert_eq!(ours, serde_json::from_str::<Value>(t).unwrap(), "{t}");
            assert_eq!(round_trip(&ours).unwrap(), ours, "{t}");
        }
        assert!(matches!(from_str("{"), Err(PeerJsonError::Syntax(_))));
        assert!(matches!(from_str("{} x"), Err(PeerJsonError::Syntax(_))));
    }

    #[test]
    fn finds_a_reserved_name_in_a_built_value() {
        let mut m = Map::new();
        m.insert("$serde_json::private::RawValue".into(), Value::Null);
        assert!(holds_reserved(&serde_json::json!({"x": [Value::Object(m)]})));
        assert!(!holds_reserved(&serde_json::json!({"x": ["$serde_json::private::RawValue"]})));
    }
}
