//! The error codes of a bearer-token challenge (RFC 6750 §3.1).

/// The token lacks scopes the request needs (HTTP 403).
pub const INSUFFICIENT_SCOPE: &str = "insufficient_scope";

/// The token is expired, revoked, malformed or not for this server (HTTP 401).
pub const INVALID_TOKEN: &str = "invalid_token";

/// The request is malformed: credentials given twice, or in a way no one can read (HTTP 400).
pub const INVALID_REQUEST: &str = "invalid_request";
