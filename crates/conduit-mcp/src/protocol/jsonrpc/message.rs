//! JSON-RPC 2.0 messages: ids, requests, notifications, responses, and their
//! one encoder.

use super::error::RpcError;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// A request id: a string or an integer, never null.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// An integer id (kept as a JSON number).
    Number(i64),
    /// An integer id above `i64::MAX` (JSON-RPC allows any integer; it is
    /// echoed exactly). Integers beyond `u64::MAX` are refused: JSON parsers
    /// commonly read them as floating point, which cannot echo them exactly.
    Unsigned(u64),
    /// A string id.
    String(String),
}

impl RequestId {
    /// Reads an id from a JSON value; `None` for null, floats, objects and arrays.
    pub fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::String(s) => Some(Self::String(s.clone())),
            Value::Number(n) => n.as_i64().map(Self::Number).or_else(|| n.as_u64().map(Self::Unsigned)),
            _ => None,
        }
    }

    /// The id as a JSON value, keeping its type.
    pub fn to_value(&self) -> Value {
        match self {
            Self::Number(n) => Value::from(*n),
            Self::Unsigned(n) => Value::from(*n),
            Self::String(s) => Value::from(s.clone()),
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        Self::Number(n)
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        Self::String(s.to_owned())
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Number(n) => write!(f, "{n}"),
            Self::Unsigned(n) => write!(f, "{n}"),
            Self::String(s) => write!(f, "{s:?}"),
        }
    }
}

/// A request: `jsonrpc`, a non-null `id`, a string `method`, optional object `params`.
/// (The JSON-RPC envelope is fixed: no field will be added.)
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The id.
    pub id: RequestId,
    /// The method.
    pub method: String,
    /// `params`, when present.
    pub params: Option<Value>,
}

impl Request {
    /// A request with these parts.
    pub fn new(id: impl Into<RequestId>, method: impl Into<String>, params: Option<Value>) -> Self {
        Self { id: id.into(), method: method.into(), params }
    }
}

/// Any JSON-RPC message, in either direction: what a peer writes and what it reads.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Message {
    /// A request.
    Request(Request),
    /// A successful response.
    Result {
        /// The request id (echoed).
        id: RequestId,
        /// The result object.
        result: Value,
    },
    /// An error response; `id` is `None` only when the request's id could not be read.
    Error {
        /// The request id, when known.
        id: Option<RequestId>,
        /// The error.
        error: RpcError,
    },
    /// A notification.
    Notification {
        /// The method, e.g. `notifications/progress`.
        method: String,
        /// The params object.
        params: Value,
    },
}

impl Message {
    /// A notification message.
    pub fn notification(method: impl Into<String>, params: Value) -> Self {
        Self::Notification { method: method.into(), params }
    }

    /// Whether this message ends a request (a response).
    pub fn is_response(&self) -> bool {
        matches!(self, Self::Result { .. } | Self::Error { .. })
    }

    /// The JSON form (built by the same encoder as [`Message::to_json`]).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The JSON text of this message, one line.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The JSON text of this message as bytes, written straight from the message.
    pub fn to_json_bytes(&self) -> Vec<u8> {
        // Most answers fit: one allocation instead of a few doublings.
        let mut out = Vec::with_capacity(512);
        match serde_json::to_writer(&mut out, self) {
            Ok(()) => out,
            Err(_) => Vec::new(),
        }
    }
}

/// The one encoder: keys in sorted order, the same text whichever form is asked for.
impl Serialize for Message {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            Self::Request(Request { id, method, params }) => {
                let mut m = s.serialize_map(Some(if params.is_some() { 4 } else { 3 }))?;
                m.serialize_entry("id", id)?;
                m.serialize_entry("jsonrpc", "2.0")?;
                m.serialize_entry("method", method)?;
                if let Some(p) = params {
                    m.serialize_entry("params", p)?;
                }
                m.end()
            }
            Self::Result { id, result } => {
                let mut m = s.serialize_map(Some(3))?;
                m.serialize_entry("id", id)?;
                m.serialize_entry("jsonrpc", "2.0")?;
                m.serialize_entry("result", result)?;
                m.end()
            }
            Self::Error { id, error } => {
                let mut m = s.serialize_map(Some(if id.is_some() { 3 } else { 2 }))?;
                m.serialize_entry("error", error)?;
                if let Some(id) = id {
                    m.serialize_entry("id", id)?;
                }
                m.serialize_entry("jsonrpc", "2.0")?;
                m.end()
            }
            Self::Notification { method, params } => {
                let mut m = s.serialize_map(Some(3))?;
                m.serialize_entry("jsonrpc", "2.0")?;
                m.serialize_entry("method", method)?;
                m.serialize_entry("params", params)?;
                m.end()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_and_value_agree() {
        let msgs = [
            Message::Result { id: RequestId::Number(7), result: json!({"b": [1, 2.5, "x\n"], "a": null}) },
            Message::Result { id: RequestId::String("s\"1".into()), result: json!({}) },
            Message::Error { id: None, error: RpcError::parse_error("bad") },
            Message::Error {
                id: Some(RequestId::Number(-3)),
                error: RpcError::unsupported_version("1999-01-01", &["2026-07-28"]),
            },
            Message::notification("notifications/progress", json!({"progressToken": 1, "progress": 0.5})),
            Message::Request(Request::new(4, "tools/list", Some(json!({"_meta": {}})))),
            Message::Request(Request::new("r", "ping", None)),
        ];
        for m in &msgs {
            assert_eq!(m.to_json(), m.to_value().to_string());
            assert_eq!(m.to_json_bytes(), m.to_value().to_string().into_bytes());
        }
        assert_eq!(msgs[2].to_json(), r#"{"error":{"code":-32700,"message":"Parse error: bad"},"jsonrpc":"2.0"}"#);
    }
}
