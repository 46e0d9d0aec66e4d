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
        self.to_value().to_string()
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
    let value: Value = serde_json::from_str(text).map_err(|e| (None, RpcError::parse_error(e)))?;
    classify(value)
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
    let id = match obj.get("id") {
        None => None,
        Some(v) => match RequestId::from_value(v) {
            Some(id) => Some(id),
            None => {
                return Err((None, RpcError::invalid_request("id must be a string or an integer")));
            }
        },
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err((id, RpcError::invalid_request("jsonrpc must be \"2.0\"")));
    }
    if obj.contains_key("result") || obj.contains_key("error") {
        return Err((id, RpcError::invalid_request("clients may not send responses")));
    }
    let method = match obj.remove("method") {
        Some(Value::String(m)) => m,
        Some(_) => return Err((id, RpcError::invalid_request("method must be a string"))),
        None => return Err((id, RpcError::invalid_request("missing method"))),
    };
    let params = obj.remove("params");
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
}
