//! Multi round-trip request shapes: `inputRequests`, `inputResponses`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The kind of an embedded input request, which decides the capability it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum InputKind {
    /// `elicitation/create` in form mode.
    ElicitForm,
    /// `elicitation/create` in URL mode.
    ElicitUrl,
    /// `sampling/createMessage`.
    Sample,
    /// `sampling/createMessage` with `tools`.
    SampleWithTools,
    /// `roots/list`.
    ListRoots,
}

/// One embedded request: `{method, params}`, no `jsonrpc`, no `id`.
///
/// Build these with the functions in `conduit_mcp::mrtr`; the fields are private
/// so a hand-rolled value can't pass for a validated one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputRequest {
    method: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<Value>,
}

impl InputRequest {
    #[cfg_attr(not(feature = "server"), allow(dead_code))]
    pub(crate) fn new(method: &str, params: Option<Value>) -> Self {
        Self { method: method.into(), params }
    }

    /// The embedded method, e.g. `elicitation/create`.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The embedded params.
    pub fn params(&self) -> Option<&Value> {
        self.params.as_ref()
    }

    /// The kind of request, or `None` for a method MRTR does not allow.
    pub fn kind(&self) -> Option<InputKind> {
        match self.method.as_str() {
            "elicitation/create" => {
                let mode = self.params.as_ref().and_then(|p| p.get("mode")).and_then(Value::as_str);
                Some(if mode == Some("url") { InputKind::ElicitUrl } else { InputKind::ElicitForm })
            }
            "sampling/createMessage" => {
                let tools = self.params.as_ref().is_some_and(|p| p.get("tools").is_some());
                Some(if tools { InputKind::SampleWithTools } else { InputKind::Sample })
            }
            "roots/list" => Some(InputKind::ListRoots),
            _ => None,
        }
    }

    /// Reads an input request from JSON, checking that it is one of the three kinds.
    pub fn from_value(v: Value) -> Option<Self> {
        let r: Self = serde_json::from_value(v).ok()?;
        r.kind().map(|_| r)
    }
}
