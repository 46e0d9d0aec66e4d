//! JSON-RPC 2.0 envelopes and the error codes MCP uses.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;

/// A request id: a string or an integer, never null.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// An integer id (kept as a JSON number).
    Number(i64),
    /// A string id.
    String(String),
}

impl RequestId {
    /// Reads an id from a JSON value; `None` for null, floats, objects and arrays.
    pub fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::String(s) => Some(Self::String(s.clone())),
            Value::Number(n) => n.as_i64().map(Self::Number),
            _ => None,
        }
    }

    /// The id as a JSON value, keeping its type.
    pub fn to_value(&self) -> Value {
        match self {
            Self::Number(n) => Value::from(*n),
            Self::String(s) => Value::from(s.clone()),
        }
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Number(n) => write!(f, "{n}"),
            Self::String(s) => write!(f, "{s:?}"),
        }
    }
}

/// The JSON-RPC and MCP error codes this library emits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorCode {
    /// `-32700`: the body is not valid JSON.
    ParseError,
    /// `-32600`: not a valid JSON-RPC request object.
    InvalidRequest,
    /// `-32601`: the method is not implemented or not advertised.
    MethodNotFound,
    /// `-32602`: bad or missing params.
    InvalidParams,
    /// `-32603`: an unexpected server condition.
    InternalError,
    /// `-32020`: HTTP headers disagree with the body, or one is missing or malformed.
    HeaderMismatch,
    /// `-32021`: the request did not declare a client capability the server needs.
    MissingRequiredClientCapability,
    /// `-32022`: the requested protocol version is not implemented.
    UnsupportedProtocolVersion,
    /// Any other code (application-defined).
    Other(i64),
}

impl ErrorCode {
    /// The numeric code.
    pub fn code(self) -> i64 {
        match self {
            Self::ParseError => -32700,
            Self::InvalidRequest => -32600,
            Self::MethodNotFound => -32601,
            Self::InvalidParams => -32602,
            Self::InternalError => -32603,
            Self::HeaderMismatch => -32020,
            Self::MissingRequiredClientCapability => -32021,
            Self::UnsupportedProtocolVersion => -32022,
            Self::Other(c) => c,
        }
    }

    /// The variant for a numeric code.
    pub fn from_code(code: i64) -> Self {
        match code {
            -32700 => Self::ParseError,
            -32600 => Self::InvalidRequest,
            -32601 => Self::MethodNotFound,
            -32602 => Self::InvalidParams,
            -32603 => Self::InternalError,
            -32020 => Self::HeaderMismatch,
            -32021 => Self::MissingRequiredClientCapability,
            -32022 => Self::UnsupportedProtocolVersion,
            c => Self::Other(c),
        }
    }
}

/// Why an error happened, as far as the transport cares (it picks the HTTP status).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ErrorClass {
    /// An ordinary JSON-RPC error; its code alone decides.
    #[default]
    Code,
    /// A required `_meta` field was missing (`-32602`, HTTP 400).
    MissingMeta,
    /// The principal lacks a scope a tool requires (HTTP 403 `insufficient_scope`).
    InsufficientScope,
}

/// A JSON-RPC error object: `code`, `message`, optional `data`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcError {
    /// The numeric error code.
    pub code: i64,
    /// One concise sentence.
    pub message: String,
    /// Optional structured detail.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// How the transport should classify this error (never on the wire).
    #[serde(skip)]
    pub class: ErrorClass,
}

impl RpcError {
    /// A new error with no `data`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self { code: code.code(), message: message.into(), data: None, class: ErrorClass::Code }
    }

    /// Adds `data`.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// `-32700`.
    pub fn parse_error(detail: impl fmt::Display) -> Self {
        Self::new(ErrorCode::ParseError, format!("Parse error: {detail}"))
    }

    /// `-32600`.
    pub fn invalid_request(detail: impl fmt::Display) -> Self {
        Self::new(ErrorCode::InvalidRequest, format!("Invalid request: {detail}"))
    }

    /// `-32601` naming the method.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(ErrorCode::MethodNotFound, format!("Method not found: {method}"))
    }

    /// `-32602` with a message.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidParams, message)
    }

    /// `-32603` with a message.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InternalError, message)
    }

    /// `-32602` for a missing required `_meta` field (HTTP 400).
    pub fn missing_meta(message: impl Into<String>) -> Self {
        let mut e = Self::invalid_params(message);
        e.class = ErrorClass::MissingMeta;
        e
    }

    /// `-32020`.
    pub fn header_mismatch(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::HeaderMismatch, message)
    }

    /// `-32021` with `data.requiredCapabilities`, e.g. `{"elicitation": {}}`.
    pub fn missing_capability(required: Value) -> Self {
        Self::new(ErrorCode::MissingRequiredClientCapability, "Missing required client capability")
            .with_data(serde_json::json!({ "requiredCapabilities": required }))
    }

    /// `-32022` with `data.supported` and `data.requested`.
    pub fn unsupported_version(requested: &str, supported: &[&str]) -> Self {
        Self::new(ErrorCode::UnsupportedProtocolVersion, "Unsupported protocol version")
            .with_data(serde_json::json!({ "supported": supported, "requested": requested }))
    }

    /// The code as an [`ErrorCode`].
    pub fn error_code(&self) -> ErrorCode {
        ErrorCode::from_code(self.code)
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for RpcError {}

/// A message the server writes: a response or a notification.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Message {
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
        !matches!(self, Self::Notification { .. })
    }

    /// The JSON form.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("jsonrpc".into(), Value::from("2.0"));
        match self {
            Self::Result { id, result } => {
                m.insert("id".into(), id.to_value());
                m.insert("result".into(), result.clone());
            }
            Self::Error { id, error } => {
                if let Some(id) = id {
                    m.insert("id".into(), id.to_value());
                }
                m.insert("error".into(), serde_json::to_value(error).unwrap_or(Value::Null));
            }
            Self::Notification { method, params } => {
                m.insert("method".into(), Value::from(method.clone()));
                m.insert("params".into(), params.clone());
            }
        }
        Value::Object(m)
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

/// Written straight to the output, with the keys in the sorted order of
/// [`Message::to_value`] (a sorted map), so both forms print the same text.
impl Serialize for Message {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            Self::Result { id, result } => {
                let mut m = s.serialize_map(Some(3))?;
                m.serialize_entry("id", id)?;
                m.serialize_entry("jsonrpc", "2.0")?;
                m.serialize_entry("result", result)?;
                m.end()
            }
            Self::Error { id, error } => {
                let mut m = s.serialize_map(Some(if id.is_some() { 3 } else { 2 }))?;
                m.serialize_entry("error", &SortedError(error))?;
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

/// An [`RpcError`] with its keys sorted (`code`, `data`, `message`), as its `Value` form prints.
struct SortedError<'a>(&'a RpcError);

impl Serialize for SortedError<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let e = self.0;
        let mut m = s.serialize_map(Some(if e.data.is_some() { 3 } else { 2 }))?;
        m.serialize_entry("code", &e.code)?;
        if let Some(data) = &e.data {
            m.serialize_entry("data", data)?;
        }
        m.serialize_entry("message", &e.message)?;
        m.end()
    }
}

/// A request after envelope validation: `jsonrpc`, a non-null `id`, a string `method`.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The id.
    pub id: RequestId,
    /// The method.
    pub method: String,
    /// `params`, when present.
    pub params: Option<Value>,
}

/// What an incoming JSON value turned out to be.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Incoming {
    /// A request (has an id).
    Request(Request),
    /// A notification (no id).
    Notification {
        /// The method.
        method: String,
        /// `params`, when present.
        params: Option<Value>,
    },
}

/// Parses raw bytes into a request or notification, with the spec's error for each fault.
///
/// The error carries the id when one could be read, so it can be echoed.
pub fn parse_incoming(bytes: &[u8]) -> Result<Incoming, (Option<RequestId>, RpcError)> {
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

/// Classifies an already-parsed JSON value (see [`parse_incoming`]).
pub fn classify(value: Value) -> Result<Incoming, (Option<RequestId>, RpcError)> {
    let mut obj = match value {
        Value::Object(o) => o,
        Value::Array(_) => {
            return Err((None, RpcError::invalid_request("batches are not supported")));
        }
        _ => return Err((None, RpcError::invalid_request("expected a JSON object"))),
    };
    classify_fields(Fields {
        id: obj.remove("id"),
        jsonrpc: obj.remove("jsonrpc"),
        method: obj.remove("method"),
        params: obj.remove("params"),
        response: obj.contains_key("result") || obj.contains_key("error"),
    })
}

/// The members of an incoming object that classification looks at.
#[derive(Default)]
struct Fields {
    id: Option<Value>,
    jsonrpc: Option<Value>,
    method: Option<Value>,
    params: Option<Value>,
    /// Whether `result` or `error` is present.
    response: bool,
}

fn classify_fields(f: Fields) -> Result<Incoming, (Option<RequestId>, RpcError)> {
    let id = match f.id {
        None => None,
        Some(Value::String(s)) => Some(RequestId::String(s)),
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
    if f.response {
        return Err((id, RpcError::invalid_request("clients may not send responses")));
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
    Response,
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
                    "result" | "error" => Key::Response,
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
                while let Some(key) = map.next_key::<Key>()? {
                    let v: Value = map.next_value()?;
                    match key {
                        Key::Id => f.id = Some(v),
                        Key::Jsonrpc => f.jsonrpc = Some(v),
                        Key::Method => f.method = Some(v),
                        Key::Params => f.params = Some(v),
                        Key::Response => f.response = true,
                        Key::Other => {}
                    }
                }
                Ok(Envelope::Object(f))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Envelope, A::Error> {
                while seq.next_element::<Value>()?.is_some() {}
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

    #[test]
    fn classifies_faults() {
        assert_eq!(parse_incoming(b"{").unwrap_err().1.code, -32700);
        assert_eq!(parse_incoming(b"[]").unwrap_err().1.code, -32600);
        assert_eq!(parse_incoming(br#"{"jsonrpc":"2.0","id":null,"method":"x"}"#).unwrap_err().1.code, -32600);
        let (id, e) = parse_incoming(br#"{"jsonrpc":"2.0","id":7,"result":{}}"#).unwrap_err();
        assert_eq!((id, e.code), (Some(RequestId::Number(7)), -32600));
        let (id, e) = parse_incoming(br#"{"id":"a","method":"x"}"#).unwrap_err();
        assert_eq!((id, e.code), (Some(RequestId::String("a".into())), -32600));
        let (id, e) = parse_incoming(br#"{"jsonrpc":"2.0","id":2,"method":"x","params":[1]}"#).unwrap_err();
        assert_eq!((id, e.code, e.class), (Some(RequestId::Number(2)), -32602, ErrorClass::MissingMeta));
        assert_eq!(
            parse_incoming(br#"{"jsonrpc":"2.0","id":3,"method":"x","params":"p"}"#).unwrap_err().1.code,
            -32600
        );
        assert!(matches!(parse_incoming(br#"{"jsonrpc":"2.0","method":"n"}"#).unwrap(), Incoming::Notification { .. }));
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

    #[test]
    fn serialises_like_the_value_form() {
        let msgs = [
            Message::Result { id: RequestId::Number(7), result: serde_json::json!({"b": [1, 2.5, "x\n"], "a": null}) },
            Message::Result { id: RequestId::String("s\"1".into()), result: serde_json::json!({}) },
            Message::Error { id: None, error: RpcError::parse_error("bad") },
            Message::Error {
                id: Some(RequestId::Number(-3)),
                error: RpcError::unsupported_version("1999-01-01", &["2026-07-28"]),
            },
            Message::notification("notifications/progress", serde_json::json!({"progressToken": 1, "progress": 0.5})),
        ];
        for m in &msgs {
            assert_eq!(m.to_json(), m.to_value().to_string());
            assert_eq!(m.to_json_bytes(), m.to_value().to_string().into_bytes());
        }
    }
}
