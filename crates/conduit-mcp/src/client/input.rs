//! Answering the server's questions: one [`InputHandler`] for MRTR
//! `input_required` rounds, task `input_required` and (legacy era) server
//! requests, so an application writes its elicitation, sampling and roots
//! code once.

use super::error::ClientError;
use crate::protocol::mrtr::{InputKind, InputRequest};
use async_trait::async_trait;
use serde_json::{Map, Value, json};

/// What an input handler can answer; the client declares exactly this in
/// `clientCapabilities`, so a server never asks for what it cannot get.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct InputSupport {
    /// Form elicitation (a flat schema of primitive fields).
    pub form: bool,
    /// URL elicitation (send the person to a page).
    pub url: bool,
    /// `sampling/createMessage`.
    pub sampling: bool,
    /// `roots/list`.
    pub roots: bool,
}

impl InputSupport {
    /// Nothing: the client declares no input capability.
    pub const NONE: Self = Self { form: false, url: false, sampling: false, roots: false };
    /// Everything.
    pub const ALL: Self = Self { form: true, url: true, sampling: true, roots: true };

    /// The capabilities to declare, as a `ClientCapabilities` object (without `extensions`).
    pub(crate) fn capabilities(self) -> Map<String, Value> {
        let mut caps = Map::new();
        if self.form || self.url {
            let mut e = Map::new();
            if self.form {
                e.insert("form".into(), json!({}));
            }
            if self.url {
                e.insert("url".into(), json!({}));
            }
            caps.insert("elicitation".into(), Value::Object(e));
        }
        if self.sampling {
            caps.insert("sampling".into(), json!({}));
        }
        if self.roots {
            caps.insert("roots".into(), json!({}));
        }
        caps
    }

    fn covers(self, kind: InputKind) -> bool {
        match kind {
            InputKind::ElicitForm => self.form,
            InputKind::ElicitUrl => self.url,
            InputKind::Sample | InputKind::SampleWithTools => self.sampling,
            InputKind::ListRoots => self.roots,
        }
    }
}

/// One question from the server, as the handler sees it.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Ask<'a> {
    /// A form: `message` and a flat `requestedSchema`. Answer with an
    /// `ElicitResult` ([`elicit_accept`], [`elicit_decline`], [`elicit_cancel`]).
    Form {
        /// What to ask.
        message: &'a str,
        /// The `requestedSchema`.
        schema: &'a Value,
    },
    /// A URL to open; accepting means consent, not completion.
    Url {
        /// Why.
        message: &'a str,
        /// Where.
        url: &'a str,
    },
    /// A sampling request (`params` of `sampling/createMessage`); answer
    /// with a `CreateMessageResult`.
    Sample(&'a Value),
    /// `roots/list`; answer with `{"roots": [...]}`.
    Roots,
}

impl<'a> Ask<'a> {
    /// Reads an input request; `None` for a method the client does not know.
    pub fn from_request(req: &'a InputRequest) -> Option<Self> {
        static EMPTY: Value = Value::Null;
        let params = req.params().unwrap_or(&EMPTY);
        let message = params.get("message").and_then(Value::as_str).unwrap_or("");
        Some(match req.kind()? {
            InputKind::ElicitForm => Ask::Form { message, schema: params.get("requestedSchema").unwrap_or(&EMPTY) },
            InputKind::ElicitUrl => Ask::Url { message, url: params.get("url").and_then(Value::as_str).unwrap_or("") },
            InputKind::Sample | InputKind::SampleWithTools => Ask::Sample(params),
            InputKind::ListRoots => Ask::Roots,
        })
    }
}

/// Answers the server's input requests. `key` is the server's key for the
/// request (each key is asked of the handler once per call or task).
#[async_trait]
pub trait InputHandler: Send + Sync {
    /// What this handler can answer (declared to the server on every request).
    fn support(&self) -> InputSupport;
    /// Answers one request: an `ElicitResult`, `CreateMessageResult` or
    /// `ListRootsResult` as JSON. An `Err` stops the call (the task is left as it is).
    async fn answer(&self, key: &str, ask: Ask<'_>) -> Result<Value, ClientError>;
}

/// A handler that answers nothing and declares nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoInput;

#[async_trait]
impl InputHandler for NoInput {
    fn support(&self) -> InputSupport {
        InputSupport::NONE
    }
    async fn answer(&self, _key: &str, _ask: Ask<'_>) -> Result<Value, ClientError> {
        Err(ClientError::Input("the server asked for input and this client takes none".into()))
    }
}

/// Answers one request through `handler`, refusing kinds it did not declare.
pub(crate) async fn answer(handler: &dyn InputHandler, key: &str, req: &InputRequest) -> Result<Value, ClientError> {
    let kind = req.kind().ok_or_else(|| ClientError::protocol(format!("unknown input request {:?}", req.method())))?;
    if !handler.support().covers(kind) {
        return Err(ClientError::Input(format!(
            "the server asked for {} that this client did not declare",
            req.method()
        )));
    }
    let ask = Ask::from_request(req).ok_or_else(|| ClientError::protocol("unreadable input request"))?;
    handler.answer(key, ask).await
}

/// `{"action": "accept", "content": content}`.
pub fn elicit_accept(content: Value) -> Value {
    json!({ "action": "accept", "content": content })
}

/// `{"action": "decline"}`.
pub fn elicit_decline() -> Value {
    json!({ "action": "decline" })
}

/// `{"action": "cancel"}`.
pub fn elicit_cancel() -> Value {
    json!({ "action": "cancel" })
}

/// The `default` of every property of a form schema that has one (what a
/// person who just presses Enter answers).
pub fn schema_defaults(schema: &Value) -> Value {
    let mut out = Map::new();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (k, p) in props {
            if let Some(d) = p.get("default") {
                out.insert(k.clone(), d.clone());
            }
        }
    }
    Value::Object(out)
}
