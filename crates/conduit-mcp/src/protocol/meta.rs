//! `_meta` keys, client capabilities and implementation identity.

use super::mrtr::InputKind;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `_meta` key carrying the request's protocol version.
pub const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key carrying the request's client capabilities.
pub const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key carrying the client's identity.
pub const CLIENT_INFO_KEY: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key carrying the requested log level.
pub const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";
/// Result `_meta` key carrying the server's identity.
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";
/// Notification `_meta` key naming the listen subscription.
pub const SUBSCRIPTION_ID_KEY: &str = "io.modelcontextprotocol/subscriptionId";
/// `_meta` key carrying the progress token.
pub const PROGRESS_TOKEN_KEY: &str = "progressToken";

/// A name and version (client or server identity).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Implementation {
    /// Machine-readable name.
    pub name: String,
    /// Version string.
    pub version: String,
    /// Human-readable title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

impl Implementation {
    /// A new identity.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self { name: name.into(), version: version.into(), title: None }
    }
}

/// The capabilities a client declared on one request.
///
/// Kept as the raw object (the set is open); the accessors answer the
/// questions the server asks of it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ClientCapabilities(pub Map<String, Value>);

impl ClientCapabilities {
    fn obj(&self, key: &str) -> Option<&Map<String, Value>> {
        self.0.get(key).and_then(Value::as_object)
    }

    /// Whether `elicitation` was declared in form mode (an empty object means form).
    pub fn elicitation_form(&self) -> bool {
        self.obj("elicitation").is_some_and(|e| e.is_empty() || e.contains_key("form") || !e.contains_key("url"))
    }

    /// Whether `elicitation.url` was declared.
    pub fn elicitation_url(&self) -> bool {
        self.obj("elicitation").is_some_and(|e| e.contains_key("url"))
    }

    /// Whether `sampling` was declared.
    pub fn sampling(&self) -> bool {
        self.obj("sampling").is_some()
    }

    /// Whether `sampling.tools` was declared.
    pub fn sampling_tools(&self) -> bool {
        self.obj("sampling").is_some_and(|s| s.contains_key("tools"))
    }

    /// Whether `roots` was declared.
    pub fn roots(&self) -> bool {
        self.obj("roots").is_some()
    }

    /// Whether an embedded input request of `kind` may be sent to this client.
    pub fn declares_input(&self, kind: InputKind) -> bool {
        match kind {
            InputKind::ElicitForm => self.elicitation_form(),
            InputKind::ElicitUrl => self.elicitation_url(),
            InputKind::Sample => self.sampling(),
            InputKind::SampleWithTools => self.sampling_tools(),
            InputKind::ListRoots => self.roots(),
        }
    }

    /// Whether the extension `id` was declared (its key present with an object value).
    pub fn extension(&self, id: &str) -> bool {
        self.obj("extensions").and_then(|e| e.get(id)).is_some_and(Value::is_object)
    }

    /// Only the declarations input requests are judged by: the `elicitation` modes,
    /// `sampling` (and `sampling.tools`) and `roots`, as empty objects, so that
    /// [`declares_input`](Self::declares_input) answers as it would on the whole
    /// declaration. What something kept (a task, a session) needs of a client's
    /// capabilities, in under 100 bytes whatever the client sent.
    pub fn input_only(&self) -> ClientCapabilities {
        let mut kept = Map::new();
        let empty = || Value::Object(Map::new());
        if self.obj("elicitation").is_some() {
            let mut modes = Map::new();
            if self.elicitation_form() {
                modes.insert("form".into(), empty());
            }
            if self.elicitation_url() {
                modes.insert("url".into(), empty());
            }
            kept.insert("elicitation".into(), Value::Object(modes));
        }
        if self.sampling() {
            let mut sampling = Map::new();
            if self.sampling_tools() {
                sampling.insert("tools".into(), empty());
            }
            kept.insert("sampling".into(), Value::Object(sampling));
        }
        if self.roots() {
            kept.insert("roots".into(), empty());
        }
        ClientCapabilities(kept)
    }
}
