//! The header checks of Streamable HTTP (`MCP-Protocol-Version`, `Mcp-Method`,
//! `Mcp-Name`, `Mcp-Param-*`), applied at the points dispatch calls them. Which
//! value each header mirrors, and how values are wrapped, is the protocol's
//! (`protocol::routing`); this file reads the headers and compares.

use crate::protocol::RpcError;
use crate::protocol::methods::{TASKS_CANCEL, TASKS_GET, TASKS_UPDATE};
use crate::protocol::routing::{
    METHOD_HEADER, NAME_HEADER, PARAM_HEADER_PREFIX, PROTOCOL_VERSION_HEADER, decode_value, value_matches,
};
use crate::server::HeaderCheck;
use http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

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

/// The MCP headers of one HTTP request.
#[derive(Debug, Clone)]
pub(crate) struct McpHeaders {
    version: Raw,
    method: Raw,
    name: Raw,
    /// `Mcp-Param-*` headers: the full (lower-case) header name and its value.
    params: Vec<(HeaderName, Raw)>,
    /// Whether a `tasks/*` request must carry `Mcp-Name` ([`HttpConfig::require_task_name`](super::HttpConfig)).
    require_task_name: bool,
}

impl McpHeaders {
    /// Reads the MCP headers of `h`; `require_task_name` as [`HttpConfig::require_task_name`](super::HttpConfig).
    pub(crate) fn from_headers(h: &HeaderMap, require_task_name: bool) -> Self {
        // One pass over the map; for a repeated name the first value counts.
        let mut m = Self {
            version: Raw::Absent,
            method: Raw::Absent,
            name: Raw::Absent,
            params: Vec::new(),
            require_task_name,
        };
        for (k, v) in h {
            let slot = match k.as_str() {
                PROTOCOL_VERSION_HEADER => &mut m.version,
                METHOD_HEADER => &mut m.method,
                NAME_HEADER => &mut m.name,
                n if n.starts_with(PARAM_HEADER_PREFIX) => {
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

    /// Whether a missing `Mcp-Name` is accepted: on `tasks/get`, `tasks/update` and
    /// `tasks/cancel` unless required (the body's `taskId` routes the request; some
    /// clients send no header). `Mcp-Method` was already checked against the body.
    fn name_may_be_absent(&self) -> bool {
        !self.require_task_name
            && matches!(&self.method, Raw::Text(m) if matches!(text(m), TASKS_GET | TASKS_UPDATE | TASKS_CANCEL))
    }
}

fn mismatch(msg: String) -> RpcError {
    RpcError::header_mismatch(format!("Header mismatch: {msg}"))
}

impl HeaderCheck for McpHeaders {
    fn protocol_version(&self) -> Option<&str> {
        match &self.version {
            Raw::Text(v) => Some(text(v)),
            _ => None,
        }
    }

    fn protocol_version_unreadable(&self) -> bool {
        matches!(self.version, Raw::Unreadable)
    }

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
                Raw::Absent if self.name_may_be_absent() => {}
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
                .find(|(k, _)| k.as_str()[PARAM_HEADER_PREFIX.len()..].eq_ignore_ascii_case(header))
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
                    if !value_matches(&decoded, body) {
                        return Err(mismatch(format!("Mcp-Param-{header} header does not match the argument")));
                    }
                }
            }
        }
        Ok(())
    }
}
