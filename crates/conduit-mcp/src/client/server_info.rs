//! [`ServerInfo`]: what the server told about itself when the client
//! connected (`server/discover`, or `initialize` on 2025-11-25).

use crate::protocol::Era;
use crate::protocol::events::{EVENTS_CAPABILITY, EVENTS_EXTENSION_ID};
use crate::protocol::tasks::TASKS_EXTENSION_ID;
use serde_json::Value;

/// What the server told about itself when the client connected.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ServerInfo {
    /// The era spoken.
    pub era: Option<Era>,
    /// The protocol version spoken.
    pub version: String,
    /// `capabilities` from `server/discover` (or `initialize`).
    pub capabilities: Value,
    /// `instructions`, when sent.
    pub instructions: Option<String>,
    /// The server's name and version, when sent.
    pub implementation: Option<Value>,
}

impl ServerInfo {
    /// Whether the server advertised the Tasks extension (modern) or `tasks` (legacy).
    pub fn offers_tasks(&self) -> bool {
        self.capabilities.get("extensions").and_then(|e| e.get(TASKS_EXTENSION_ID)).is_some()
            || self.capabilities.get("tasks").is_some()
    }

    /// Whether the server advertised the Events extension (in
    /// `capabilities.extensions`, or as top-level `events` as servers in the
    /// field do) on a `2026-07-28` connection (it is not defined before).
    pub fn offers_events(&self) -> bool {
        self.era == Some(Era::Modern)
            && (self.capabilities.get("extensions").and_then(|e| e.get(EVENTS_EXTENSION_ID)).is_some()
                || self.capabilities.get(EVENTS_CAPABILITY).is_some())
    }

    /// Reads the result of a handshake spoken in `era` at `version`.
    pub(crate) fn from_handshake(era: Era, version: String, r: &Value) -> Self {
        Self {
            era: Some(era),
            version,
            capabilities: r.get("capabilities").cloned().unwrap_or(Value::Null),
            instructions: r.get("instructions").and_then(Value::as_str).map(str::to_owned),
            implementation: r
                .pointer("/_meta/io.modelcontextprotocol~1serverInfo")
                .or_else(|| r.get("serverInfo"))
                .cloned(),
        }
    }

    /// A modern server that was not asked (a pinned client whose `server/discover` was refused).
    pub(crate) fn unasked(version: String) -> Self {
        Self { era: Some(Era::Modern), version, ..Self::default() }
    }
}
