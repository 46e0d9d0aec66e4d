//! The header rules of Streamable HTTP (`MCP-Protocol-Version`, `Mcp-Method`,
//! `Mcp-Name`, `Mcp-Param-*`), applied at the points dispatch calls them.

use crate::protocol::RpcError;
use crate::server::HeaderCheck;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use std::borrow::Cow;

/// A header value as received: absent, unreadable (not visible ASCII), or text.
///
/// Text keeps the `HeaderValue` itself (a shared, reference-counted buffer):
/// no copy is made unless a check reads it.
#[derive(Debug, Clone, PartialEq)]
enum Raw {
    Absent,
    Unreadable,
    Text(HeaderValue),
}

impl Raw {
    fn of(v: Option<&HeaderValue>) -> Self {
        match v {
            None => Raw::Absent,
            Some(v) if v.to_str().is_ok() => Raw::Text(v.clone()),
            Some(_) => Raw::Unreadable,
        }
    }
}

/// The text of a readable header value, without surrounding spaces and tabs.
fn text(v: &HeaderValue) -> &str {
    v.to_str().unwrap_or_default().trim_matches(|c| c == ' ' || c == '\t')
}

/// Decodes the `=?base64?…?=` sentinel; other values are literal (borrowed, not copied).
pub(crate) fn decode_value(v: &str) -> Result<Cow<'_, str>, ()> {
    match v.strip_prefix("=?base64?").and_then(|r| r.strip_suffix("?=")) {
        Some(inner) => {
            let bytes = STANDARD.decode(inner).map_err(|_| ())?;
            String::from_utf8(bytes).map(Cow::Owned).map_err(|_| ())
        }
        None => Ok(Cow::Borrowed(v)),
    }
}

/// The MCP headers of one HTTP request.
#[derive(Debug, Clone)]
pub(crate) struct McpHeaders {
    version: Raw,
    method: Raw,
    name: Raw,
    /// `Mcp-Param-*` headers: the full (lower-case) header name and its value.
    params: Vec<(HeaderName, Raw)>,
}

const PARAM_PREFIX: &str = "mcp-param-";

impl McpHeaders {
    pub(crate) fn from_headers(h: &HeaderMap) -> Self {
        // One pass over the map; for a repeated name the first value counts.
        let mut m = Self { version: Raw::Absent, method: Raw::Absent, name: Raw::Absent, params: Vec::new() };
        for (k, v) in h {
            let slot = match k.as_str() {
                "mcp-protocol-version" => &mut m.version,
                "mcp-method" => &mut m.method,
                "mcp-name" => &mut m.name,
                n if n.starts_with(PARAM_PREFIX) => {
                    if !m.params.iter().any(|(p, _)| p == k) {
                        m.params.push((k.clone(), Raw::of(Some(v))));
                    }
                    continue;
                }
                _ => continue,
            };
            if *slot == Raw::Absent {
                *slot = Raw::of(Some(v));
            }
        }
        m
    }
}

fn mismatch(msg: String) -> RpcError {
    RpcError::header_mismatch(format!("Header mismatch: {msg}"))
}

fn matches_body(header: &str, body: &Value) -> bool {
    match body {
        Value::String(s) => header == s,
        Value::Bool(b) => header == if *b { "true" } else { "false" },
        Value::Number(n) => match (header.parse::<f64>(), n.as_f64()) {
            (Ok(h), Some(b)) => h == b,
            _ => false,
        },
        _ => false,
    }
}

impl HeaderCheck for McpHeaders {
    fn check_base(&self, meta_version: &str, method: &str) -> Result<(), RpcError> {
        match &self.version {
            Raw::Absent => return Err(mismatch("missing MCP-Protocol-Version header".into())),
            Raw::Unreadable => {
                return Err(mismatch("MCP-Protocol-Version header has invalid characters".into()));
            }
            Raw::Text(v) if text(v) != meta_version => {
                let v = text(v);
                return Err(mismatch(format!(
                    "MCP-Protocol-Version header value '{v}' does not match _meta protocolVersion '{meta_version}'"
                )));
            }
            Raw::Text(_) => {}
        }
        match &self.method {
            Raw::Absent => Err(mismatch("missing Mcp-Method header".into())),
            Raw::Unreadable => Err(mismatch("Mcp-Method header has invalid characters".into())),
            Raw::Text(m) if text(m) != method => {
                let m = text(m);
                Err(mismatch(format!("Mcp-Method header value '{m}' does not match body method '{method}'")))
            }
            Raw::Text(_) => Ok(()),
        }
    }

    fn check_routing(&self, name: Option<&str>, params: &[(&str, &Value)]) -> Result<(), RpcError> {
        if let Some(expected) = name {
            match &self.name {
                Raw::Absent => return Err(mismatch("missing Mcp-Name header".into())),
                Raw::Unreadable => {
                    return Err(mismatch("Mcp-Name header has invalid characters".into()));
                }
                Raw::Text(v) => {
                    let decoded =
                        decode_value(text(v)).map_err(|_| mismatch("Mcp-Name header has invalid base64".into()))?;
                    if decoded != expected {
                        // The header value is the client's own; the body value may be a capability (task id), so it is not echoed.
                        return Err(mismatch("Mcp-Name header value does not match the body".into()));
                    }
                }
            }
        }
        for (header, body) in params {
            let found = self
                .params
                .iter()
                .find(|(k, _)| k.as_str()[PARAM_PREFIX.len()..].eq_ignore_ascii_case(header))
                .map(|(_, v)| v);
            match found {
                None | Some(Raw::Absent) => {
                    return Err(mismatch(format!("missing Mcp-Param-{header} header")));
                }
                Some(Raw::Unreadable) => {
                    return Err(mismatch(format!("Mcp-Param-{header} header has invalid characters")));
                }
                Some(Raw::Text(v)) => {
                    let decoded = decode_value(text(v))
                        .map_err(|_| mismatch(format!("Mcp-Param-{header} header has invalid base64")))?;
                    if !matches_body(&decoded, body) {
                        return Err(mismatch(format!("Mcp-Param-{header} header does not match the argument")));
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sentinel_decoding() {
        assert_eq!(decode_value("=?base64?SGVsbG8=?=").unwrap(), "Hello");
        assert!(decode_value("=?base64?SGVsbG8?=").is_err());
        assert!(decode_value("=?base64?SGVs!!!bG8=?=").is_err());
        assert_eq!(decode_value("=?base64?SGVsbG8=").unwrap(), "=?base64?SGVsbG8=");
        assert_eq!(decode_value("=?BASE64?SGVsbG8=?=").unwrap(), "=?BASE64?SGVsbG8=?=");
        assert_eq!(decode_value("SGVsbG8=").unwrap(), "SGVsbG8=");
    }

    #[test]
    fn numeric_and_boolean_params() {
        assert!(matches_body("42", &json!(42)));
        assert!(matches_body("42.0", &json!(42)));
        assert!(!matches_body("43", &json!(42)));
        assert!(matches_body("true", &json!(true)));
        assert!(!matches_body("True", &json!(true)));
    }
}
