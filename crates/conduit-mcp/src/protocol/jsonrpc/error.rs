//! JSON-RPC error objects and the codes MCP gives them.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

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

/// The application code of a call the caller may not make: a tool whose OAuth
/// scopes its token lacks (`data.requiredScopes`). It is the HTTP status the same
/// refusal gets (403, with the OAuth `insufficient_scope` challenge:
/// `protocol::oauth::errors::INSUFFICIENT_SCOPE`), and lies
/// outside the ranges JSON-RPC and MCP reserve, as application codes should.
pub const FORBIDDEN: i64 = 403;

/// The JSON-RPC code of a refusal because the client asks too much: too many
/// requests for its rate, or more of something than it may hold. No code is
/// defined for it; this is the first of the implementation-defined server errors.
pub const TOO_MANY: i64 = -32000;

/// `-32002`: resource not found, on 2025-11-25 only (the modern era answers `-32602`).
pub const RESOURCE_NOT_FOUND: i64 = -32002;

/// `-32042`: the call needs a URL-mode elicitation the client must complete
/// first, on 2025-11-25 only.
pub const URL_ELICITATION_REQUIRED: i64 = -32042;

/// What kind of failure an error reports. Transports pick their answer from it
/// (HTTP: the status) and from nothing else.
///
/// It follows from the code, except where one code covers two situations:
/// a missing `_meta` field is `-32602` like any bad param, but answered `400`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorClass {
    /// `-32700`.
    Parse,
    /// `-32600`.
    InvalidRequest,
    /// `-32601`.
    MethodNotFound,
    /// `-32602` from a handler (unknown tool, bad cursor, task not found, ...).
    InvalidParams,
    /// `-32602` because a required `_meta` field is missing or malformed.
    MissingMeta,
    /// `-32603`.
    Internal,
    /// `-32020`.
    HeaderMismatch,
    /// `-32021`.
    MissingCapability,
    /// `-32022`.
    UnsupportedVersion,
    /// The principal lacks a scope a tool requires.
    InsufficientScope,
    /// The client went past a rate limit or a per-client cap ([`TOO_MANY`];
    /// HTTP 429, with `Retry-After` when `data.retryAfterMs` says when to retry).
    TooMany,
    /// No resource has the URI read (`-32602` on 2026-07-28, `-32002` on 2025-11-25).
    ResourceNotFound,
    /// Any other (application) code.
    Application,
}

impl ErrorClass {
    fn of_code(code: i64) -> Self {
        match ErrorCode::from_code(code) {
            ErrorCode::ParseError => Self::Parse,
            ErrorCode::InvalidRequest => Self::InvalidRequest,
            ErrorCode::MethodNotFound => Self::MethodNotFound,
            ErrorCode::InvalidParams => Self::InvalidParams,
            ErrorCode::InternalError => Self::Internal,
            ErrorCode::HeaderMismatch => Self::HeaderMismatch,
            ErrorCode::MissingRequiredClientCapability => Self::MissingCapability,
            ErrorCode::UnsupportedProtocolVersion => Self::UnsupportedVersion,
            ErrorCode::Other(_) => Self::Application,
        }
    }
}

/// A JSON-RPC error object: `code`, `message`, optional `data`.
///
/// Build one with the constructors; its [`class`](Self::class) is set by them
/// and never by hand.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RpcError {
    /// The numeric error code.
    pub code: i64,
    // Declared between the other two so the encoder writes sorted keys (`code`, `data`, `message`).
    /// Optional structured detail.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// One concise sentence.
    pub message: String,
    /// A class the code alone does not tell (never on the wire).
    #[serde(skip)]
    special: Option<ErrorClass>,
    /// The scopes an [`insufficient_scope`](Self::insufficient_scope) refusal
    /// names, typed (on the wire: `data.requiredScopes`).
    #[serde(skip)]
    required_scopes: Vec<String>,
}

/// The wire form, read back (a client reads errors; the class follows from the code).
#[derive(Deserialize)]
struct WireError {
    code: i64,
    message: String,
    #[serde(default)]
    data: Option<Value>,
}

impl<'de> Deserialize<'de> for RpcError {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = WireError::deserialize(d)?;
        Ok(Self { code: w.code, message: w.message, data: w.data, special: None, required_scopes: Vec::new() })
    }
}

impl RpcError {
    /// A new error with no `data`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self { code: code.code(), message: message.into(), data: None, special: None, required_scopes: Vec::new() }
    }

    /// Adds `data`.
    #[must_use]
    pub fn data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// What kind of failure this is (transports answer by it).
    pub fn class(&self) -> ErrorClass {
        self.special.unwrap_or_else(|| ErrorClass::of_code(self.code))
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

    /// `-32602` for a missing or malformed required `_meta` field (HTTP 400).
    pub fn missing_meta(message: impl Into<String>) -> Self {
        Self { special: Some(ErrorClass::MissingMeta), ..Self::invalid_params(message) }
    }

    /// `-32602` "Resource not found" with `data.uri` (SEP-2164); the era's
    /// answer decides its code (2025-11-25: `-32002`) from its class.
    pub fn resource_not_found(uri: &str) -> Self {
        Self {
            special: Some(ErrorClass::ResourceNotFound),
            ..Self::invalid_params("Resource not found").data(serde_json::json!({ "uri": uri }))
        }
    }

    /// `-32020`.
    pub fn header_mismatch(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::HeaderMismatch, message)
    }

    /// `-32021` with `data.requiredCapabilities`, e.g. `{"elicitation": {}}`.
    pub fn missing_capability(required: Value) -> Self {
        Self::new(ErrorCode::MissingRequiredClientCapability, "Missing required client capability")
            .data(serde_json::json!({ "requiredCapabilities": required }))
    }

    /// `-32022` with `data.supported` and `data.requested`.
    pub fn unsupported_version(requested: &str, supported: &[&str]) -> Self {
        Self::new(ErrorCode::UnsupportedProtocolVersion, "Unsupported protocol version")
            .data(serde_json::json!({ "supported": supported, "requested": requested }))
    }

    /// [`FORBIDDEN`]: the caller lacks OAuth scopes a tool requires (`data.requiredScopes`; HTTP 403).
    pub fn insufficient_scope(required: &[String]) -> Self {
        Self {
            special: Some(ErrorClass::InsufficientScope),
            required_scopes: required.to_vec(),
            ..Self::new(ErrorCode::Other(FORBIDDEN), "Insufficient scope")
                .data(serde_json::json!({ "requiredScopes": required }))
        }
    }

    /// [`TOO_MANY`] (HTTP 429): `message` says what the client holds or sends too
    /// much of; with `retry_after`, `data.retryAfterMs` says when it may try again
    /// (rounded up to a whole millisecond).
    pub fn too_many(message: impl Into<String>, retry_after: Option<std::time::Duration>) -> Self {
        let mut e = Self { special: Some(ErrorClass::TooMany), ..Self::new(ErrorCode::Other(TOO_MANY), message) };
        if let Some(wait) = retry_after {
            let ms = wait.as_nanos().div_ceil(1_000_000);
            e.data = Some(serde_json::json!({ "retryAfterMs": u64::try_from(ms).unwrap_or(u64::MAX) }));
        }
        e
    }

    /// The scopes an [`insufficient_scope`](Self::insufficient_scope) refusal
    /// built here names (empty for any other error, and for one read from the wire).
    pub fn required_scopes(&self) -> &[String] {
        &self.required_scopes
    }

    /// When the client may try again (`data.retryAfterMs`), if the error says.
    pub fn retry_after(&self) -> Option<std::time::Duration> {
        let ms = self.data.as_ref()?.get("retryAfterMs")?.as_u64()?;
        Some(std::time::Duration::from_millis(ms))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_follows_the_code_except_where_set() {
        assert_eq!(RpcError::invalid_params("x").class(), ErrorClass::InvalidParams);
        assert_eq!(RpcError::missing_meta("x").class(), ErrorClass::MissingMeta);
        assert_eq!(RpcError::missing_meta("x").code, -32602);
        assert_eq!(RpcError::insufficient_scope(&["a".into()]).class(), ErrorClass::InsufficientScope);
        assert_eq!(RpcError::new(ErrorCode::Other(7), "x").class(), ErrorClass::Application);
        let back: RpcError = serde_json::from_str(r#"{"code":-32021,"message":"m","data":{}}"#).unwrap();
        assert_eq!(back.class(), ErrorClass::MissingCapability);
        assert_eq!(serde_json::to_string(&RpcError::internal("x")).unwrap(), r#"{"code":-32603,"message":"x"}"#);
    }
}
