//! Multi round-trip requests (MRTR): ask the client for input inside a result.
//!
//! A tool, prompt or resource read returns [`InputRequired`] built from these
//! functions. The client answers by retrying the same request with
//! `inputResponses` (and the `requestState` the server sent, which the server
//! seals so the client cannot alter it).
//!
//! ```
//! use conduit_mcp::mrtr::{self, InputRequired};
//! use serde_json::json;
//!
//! let ask = InputRequired::new()
//!     .request("user_name", mrtr::elicit("What is your name?", json!({
//!         "type": "object",
//!         "properties": { "name": { "type": "string" } },
//!         "required": ["name"]
//!     })))
//!     .state(json!({ "step": 1 }));
//! assert_eq!(ask.requests().len(), 1);
//! ```

use crate::protocol::mrtr::{InputKind, InputRequest};
use serde_json::{Value, json};
use std::collections::BTreeMap;

pub use crate::protocol::mrtr::InputRequest as Request;

/// A form-mode elicitation: `message` and a flat `requestedSchema`.
pub fn elicit(message: impl Into<String>, requested_schema: Value) -> InputRequest {
    InputRequest::new(
        "elicitation/create",
        Some(json!({ "mode": "form", "message": message.into(), "requestedSchema": requested_schema })),
    )
}

/// A URL-mode elicitation (needs `elicitation.url` from the client).
pub fn elicit_url(
    message: impl Into<String>,
    url: impl Into<String>,
    elicitation_id: impl Into<String>,
) -> InputRequest {
    InputRequest::new(
        "elicitation/create",
        Some(
            json!({ "mode": "url", "message": message.into(), "url": url.into(), "elicitationId": elicitation_id.into() }),
        ),
    )
}

/// A sampling request: `messages` (an array of `{role, content}`) and `maxTokens`.
pub fn sample(messages: Value, max_tokens: u32) -> InputRequest {
    InputRequest::new("sampling/createMessage", Some(json!({ "messages": messages, "maxTokens": max_tokens })))
}

/// A one-message sampling request with a text prompt.
pub fn sample_text(prompt: impl Into<String>, max_tokens: u32) -> InputRequest {
    sample(json!([{ "role": "user", "content": { "type": "text", "text": prompt.into() } }]), max_tokens)
}

/// A `roots/list` request.
pub fn list_roots() -> InputRequest {
    InputRequest::new("roots/list", None)
}

/// The capability (as a `requiredCapabilities` object) an input request needs.
pub fn required_capability(kind: InputKind) -> Value {
    match kind {
        InputKind::ElicitForm => json!({ "elicitation": {} }),
        InputKind::ElicitUrl => json!({ "elicitation": { "url": {} } }),
        InputKind::Sample => json!({ "sampling": {} }),
        InputKind::SampleWithTools => json!({ "sampling": { "tools": {} } }),
        InputKind::ListRoots => json!({ "roots": {} }),
    }
}

/// An `input_required` answer: requests for the client, and state to carry to the retry.
#[derive(Debug, Clone, Default, PartialEq)]
#[must_use]
pub struct InputRequired {
    requests: BTreeMap<String, InputRequest>,
    state: Option<Value>,
}

impl InputRequired {
    /// An empty answer; add requests and/or state.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an input request under `key` (unique within this answer).
    pub fn request(mut self, key: impl Into<String>, request: InputRequest) -> Self {
        self.requests.insert(key.into(), request);
        self
    }

    /// Sets state to carry to the retry. The server seals it; the retry sees it
    /// through `Ctx::request_state` only if it verifies.
    pub fn state(mut self, state: Value) -> Self {
        self.state = Some(state);
        self
    }

    /// The requests.
    pub fn requests(&self) -> &BTreeMap<String, InputRequest> {
        &self.requests
    }

    /// The unsealed state.
    pub fn state_value(&self) -> Option<&Value> {
        self.state.as_ref()
    }

    pub(crate) fn into_parts(self) -> (BTreeMap<String, InputRequest>, Option<Value>) {
        (self.requests, self.state)
    }
}
