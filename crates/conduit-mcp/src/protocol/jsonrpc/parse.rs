//! Reading JSON-RPC messages from bytes, in either direction, with the
//! spec's error for each fault.
//!
//! A server reads requests, notifications and (in a legacy session) the
//! client's responses to its own requests; a client reads responses,
//! notifications and (from a legacy server) requests. One parser serves both.

use super::error::RpcError;
use super::message::{Request, RequestId};
use crate::protocol::peer_json::{self, PeerValue};
use serde_json::Value;
use std::cell::Cell;
use std::fmt;

/// A response read from the peer.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Response {
    /// The id of the request it answers (`None`: the peer could not read it).
    pub id: Option<RequestId>,
    /// The result, or the error.
    pub outcome: Result<Value, RpcError>,
}

/// What an incoming message turned out to be.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Incoming {
    /// A request (has an id and a method).
    Request(Request),
    /// A notification (a method, no id).
    Notification {
        /// The method.
        method: String,
        /// `params`, when present.
        params: Option<Value>,
    },
    /// A response (`result` or `error`, no method).
    Response(Response),
}

/// Why a message could not be read: the error to answer, and the id when one was readable.
pub type ParseFailure = (Option<RequestId>, RpcError);

/// Parses raw bytes into a message, with the spec's error for each fault.
///
/// The error carries the id when one could be read, so it can be echoed. Member
/// values are read by [`peer_json`]: an object with a
/// member name serde_json reserves is refused (`-32602` in `params`, else `-32600`).
pub fn parse_incoming(bytes: &[u8]) -> Result<Incoming, ParseFailure> {
    let text = std::str::from_utf8(bytes).map_err(|_| (None, RpcError::parse_error("body is not valid UTF-8")))?;
    // The envelope's members are read straight into their slots: no map of the
    // top-level object is built. Every member value is still parsed as a `Value`,
    // so exactly the texts `Value` accepts are accepted.
    match serde_json::from_str::<Envelope>(text).map_err(|e| (None, RpcError::parse_error(e)))? {
        Envelope::Object(f) => classify_fields(f),
        Envelope::Array => Err((None, RpcError::invalid_request("batches are not supported"))),
        Envelope::Other => Err((None, RpcError::invalid_request("expected a JSON object"))),
    }
}

/// Classifies an already-parsed JSON value (see [`parse_incoming`]). Read a
/// peer's text with [`peer_json::from_str`] first: `serde_json` alone gives a
/// reserved member name a meaning of its own before this can refuse it.
pub fn classify(value: Value) -> Result<Incoming, ParseFailure> {
    let mut obj = match value {
        Value::Object(o) => o,
        Value::Array(_) => {
            return Err((None, RpcError::invalid_request("batches are not supported")));
        }
        _ => return Err((None, RpcError::invalid_request("expected a JSON object"))),
    };
    let mut f = Fields {
        id: obj.remove("id"),
        jsonrpc: obj.remove("jsonrpc"),
        method: obj.remove("method"),
        params: obj.remove("params"),
        result: obj.remove("result"),
        error: obj.remove("error"),
        reserved_in: None,
    };
    let held = |v: &Option<Value>| v.as_ref().is_some_and(peer_json::holds_reserved);
    f.reserved_in = if held(&f.params) {
        Some(Member::Params)
    } else if held(&f.id) || held(&f.jsonrpc) || held(&f.method) || held(&f.result) || held(&f.error) {
        Some(Member::Other)
    } else {
        None
    };
    classify_fields(f)
}

/// The members of an incoming object that classification looks at.
#[derive(Default)]
struct Fields {
    id: Option<Value>,
    jsonrpc: Option<Value>,
    method: Option<Value>,
    params: Option<Value>,
    result: Option<Value>,
    error: Option<Value>,
    /// Which member held an object with a reserved member name (that member was skipped).
    reserved_in: Option<Member>,
}

/// Where a reserved member name was found.
#[derive(Clone, Copy)]
enum Member {
    Params,
    Other,
}

fn classify_fields(mut f: Fields) -> Result<Incoming, ParseFailure> {
    let id = match f.id.take() {
        None => None,
        Some(Value::String(s)) => Some(RequestId::String(s)),
        // An error response to a request whose id the peer could not read.
        Some(Value::Null) if f.error.is_some() && f.method.is_none() => None,
        Some(v) => match RequestId::from_value(&v) {
            Some(id) => Some(id),
            None => {
                return Err((None, RpcError::invalid_request("id must be a string or an integer")));
            }
        },
    };
    if f.jsonrpc.as_ref().and_then(Value::as_str) != Some("2.0") {
        return Err((id, RpcError::invalid_request("jsonrpc must be \"2.0\"")));
    }
    match f.reserved_in {
        None => {}
        Some(Member::Params) => return Err((id, RpcError::invalid_params(RESERVED_IN_PARAMS))),
        Some(Member::Other) => return Err((id, RpcError::invalid_request(RESERVED))),
    }
    if f.result.is_some() || f.error.is_some() {
        return response(id, f);
    }
    let method = match f.method {
        Some(Value::String(m)) => m,
        Some(_) => return Err((id, RpcError::invalid_request("method must be a string"))),
        None => return Err((id, RpcError::invalid_request("missing method"))),
    };
    let params = f.params;
    match &params {
        None | Some(Value::Object(_)) => {}
        // By-position params are valid JSON-RPC, but MCP params are an object carrying `_meta`.
        Some(Value::Array(_)) => {
            return Err((id, RpcError::missing_meta("params must be an object carrying _meta")));
        }
        Some(_) => return Err((id, RpcError::invalid_request("params must be an object"))),
    }
    Ok(match id {
        Some(id) => Incoming::Request(Request { id, method, params }),
        None => Incoming::Notification { method, params },
    })
}

fn response(id: Option<RequestId>, f: Fields) -> Result<Incoming, ParseFailure> {
    if f.method.is_some() {
        return Err((id, RpcError::invalid_request("a message has either a method or a result/error")));
    }
    let outcome = match (f.result, f.error) {
        (Some(r), None) if id.is_some() => Ok(r),
        (Some(_), None) => return Err((None, RpcError::invalid_request("a result needs the request's id"))),
        (None, Some(e)) => Err(serde_json::from_value::<RpcError>(e)
            .map_err(|_| (id.clone(), RpcError::invalid_request("error must be {code, message, data?}")))?),
        _ => return Err((id, RpcError::invalid_request("a response has a result or an error, not both"))),
    };
    Ok(Incoming::Response(Response { id, outcome }))
}

/// What a message with a reserved member name in its `params` is told.
const RESERVED_IN_PARAMS: &str = "Invalid params: member names starting with \"$serde_json::private::\" are reserved";

/// What a message with a reserved member name elsewhere is told.
const RESERVED: &str = "member names starting with \"$serde_json::private::\" are reserved";

/// The top level of an incoming body.
enum Envelope {
    Object(Fields),
    Array,
    Other,
}

/// A member name of the envelope.
enum Key {
    Id,
    Jsonrpc,
    Method,
    Params,
    Result,
    Error,
    Other,
}

impl<'de> serde::Deserialize<'de> for Key {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl serde::de::Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Key, E> {
                Ok(match v {
                    "id" => Key::Id,
                    "jsonrpc" => Key::Jsonrpc,
                    "method" => Key::Method,
                    "params" => Key::Params,
                    "result" => Key::Result,
                    "error" => Key::Error,
                    _ => Key::Other,
                })
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

impl<'de> serde::Deserialize<'de> for Envelope {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct EnvelopeVisitor;
        impl<'de> serde::de::Visitor<'de> for EnvelopeVisitor {
            type Value = Envelope;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Envelope, A::Error> {
                // A repeated member: the last one counts, as in a `Value` map.
                let mut f = Fields::default();
                let reserved = Cell::new(false);
                while let Some(key) = map.next_key::<Key>()? {
                    let v = map.next_value_seed(PeerValue { reserved: &reserved })?;
                    let slot = match key {
                        Key::Id => &mut f.id,
                        Key::Jsonrpc => &mut f.jsonrpc,
                        Key::Method => &mut f.method,
                        Key::Params => &mut f.params,
                        Key::Result => &mut f.result,
                        Key::Error => &mut f.error,
                        Key::Other => {
                            reserved.set(false); // an ignored member is not read
                            continue;
                        }
                    };
                    *slot = Some(v);
                    if reserved.take() {
                        let here = if matches!(key, Key::Params) { Member::Params } else { Member::Other };
                        f.reserved_in = Some(match (f.reserved_in, here) {
                            (Some(Member::Other), _) | (_, Member::Other) => Member::Other,
                            _ => Member::Params,
                        });
                    }
                }
                Ok(Envelope::Object(f))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Envelope, A::Error> {
                let ignored = Cell::new(false);
                while seq.next_element_seed(PeerValue { reserved: &ignored })?.is_some() {}
                Ok(Envelope::Array)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Envelope, E> {
                Ok(Envelope::Other)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Envelope, E> {
                Ok(Envelope::Other)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Envelope, E> {
                Ok(Envelope::Other)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Envelope, E> {
                Ok(Envelope::Other)
            }
            fn visit_str<E>(self, _: &str) -> Result<Envelope, E> {
                Ok(Envelope::Other)
            }
            fn visit_unit<E>(self) -> Result<Envelope, E> {
                Ok(Envelope::Other)
            }
        }
        d.deserialize_any(EnvelopeVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::jsonrpc::ErrorClass;

    #[test]
    fn classifies_faults() {
        assert_eq!(parse_incoming(b"{").unwrap_err().1.code, -32700);
        assert_eq!(parse_incoming(b"[]").unwrap_err().1.code, -32600);
        assert_eq!(parse_incoming(br#"{"jsonrpc":"2.0","id":null,"method":"x"}"#).unwrap_err().1.code, -32600);
        let (id, e) = parse_incoming(br#"{"id":"a","method":"x"}"#).unwrap_err();
        assert_eq!((id, e.code), (Some(RequestId::String("a".into())), -32600));
        let (id, e) = parse_incoming(br#"{"jsonrpc":"2.0","id":2,"method":"x","params":[1]}"#).unwrap_err();
        assert_eq!((id, e.code, e.class()), (Some(RequestId::Number(2)), -32602, ErrorClass::MissingMeta));
        assert_eq!(
            parse_incoming(br#"{"jsonrpc":"2.0","id":3,"method":"x","params":"p"}"#).unwrap_err().1.code,
            -32600
        );
        assert!(matches!(parse_incoming(br#"{"jsonrpc":"2.0","method":"n"}"#).unwrap(), Incoming::Notification { .. }));
        let (id, e) = parse_incoming(br#"{"jsonrpc":"2.0","id":1,"error":{},"method":"m"}"#).unwrap_err();
        assert_eq!((id, e.code), (Some(RequestId::Number(1)), -32600));
    }

    #[test]
    fn reads_responses() {
        let r = parse_incoming(br#"{"jsonrpc":"2.0","id":7,"result":{"a":1}}"#).unwrap();
        assert_eq!(
            r,
            Incoming::Response(Response { id: Some(RequestId::Number(7)), outcome: Ok(serde_json::json!({"a":1})) })
        );
        let Incoming::Response(e) =
            parse_incoming(br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"p"}}"#).unwrap()
        else {
            panic!("a response")
        };
        assert_eq!((e.id, e.outcome.unwrap_err().code), (None, -32700));
        assert_eq!(parse_incoming(br#"{"jsonrpc":"2.0","result":{}}"#).unwrap_err().1.code, -32600);
        assert_eq!(parse_incoming(br#"{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}"#).unwrap_err().1.code, -32600);
        assert_eq!(parse_incoming(br#"{"jsonrpc":"2.0","id":1,"result":{},"error":{}}"#).unwrap_err().1.code, -32600);
    }

    #[test]
    fn refuses_reserved_member_names_and_echoes_the_id() {
        // The fuzz finding: accepted, but re-encoded it no longer parsed.
        let body =
            br#"{"jsonrpc":"2.0","id":"","method":"","params":{"":{"n":"","$serde_json::private::RawValue":{}}}}"#;
        let (id, e) = parse_incoming(body).unwrap_err();
        assert_eq!((id, e.code), (Some(RequestId::String(String::new())), -32602));
        assert!(e.message.contains("reserved"), "{}", e.message);
        let body = br#"{"jsonrpc":"2.0","id":4,"result":{"\u0024serde_json::private::RawValue":"1"}}"#;
        let (id, e) = parse_incoming(body).unwrap_err();
        assert_eq!((id, e.code), (Some(RequestId::Number(4)), -32600));
        let body = br#"{"jsonrpc":"2.0","method":"n","params":{"$serde_json::private::Number":"1"}}"#;
        assert_eq!(parse_incoming(body).unwrap_err().1.code, -32602);
        // In a member nobody reads, it changes nothing.
        let body = br#"{"jsonrpc":"2.0","id":5,"method":"m","x":{"$serde_json::private::RawValue":"1"}}"#;
        assert!(matches!(parse_incoming(body), Ok(Incoming::Request(_))));
        // A value built elsewhere is held to the same rule.
        let built = serde_json::json!({"jsonrpc":"2.0","id":6,"method":"m",
            "params":{"a":{"$serde_json::private::RawValue":"1"}}});
        assert_eq!(classify(built).unwrap_err().1.code, -32602);
    }

    #[test]
    fn envelope_parse_matches_value_parse() {
        let bodies: &[&[u8]] = &[
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{}}}"#,
            br#"{"jsonrpc":"2.0","id":"a","id":2,"method":"m","method":"n","extra":[1,{"b":null}]}"#,
            br#"{"jsonrpc":"2.0","id":1.5,"method":"m"}"#,
            br#"{"jsonrpc":"2.0","id":{},"method":"m"}"#,
            br#"{"jsonrpc":"1.0","id":1,"method":"m"}"#,
            br#"{"jsonrpc":"2.0","id":1,"error":{},"method":"m"}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{"x":[]}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":7}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"m","params":null}"#,
            br#"{"jsonrpc":"2.0","id":1}"#,
            br#"{"\u0069d":3,"jsonrpc":"2.0","method":"m"}"#,
            br#"{"jsonrpc":"2.0","method":"n","params":{}}"#,
            br#"[{"jsonrpc":"2.0","id":1,"method":"m"}]"#,
            b"42",
            b"\"s\"",
            b"null",
            b"true",
            b"{\"a\":1,}",
            b"{\"a\":\"\\ud800\"}",
            b"[1,",
            b"{} x",
            b"",
        ];
        for body in bodies {
            let via_value = std::str::from_utf8(body)
                .map_err(|_| (None, RpcError::parse_error("body is not valid UTF-8")))
                .and_then(|t| serde_json::from_str::<Value>(t).map_err(|e| (None, RpcError::parse_error(e))))
                .and_then(classify);
            assert_eq!(parse_incoming(body), via_value, "{}", String::from_utf8_lossy(body));
        }
    }
}
