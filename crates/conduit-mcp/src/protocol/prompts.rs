//! `prompts/list` and `prompts/get` shapes.

use super::content::Content;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One declared prompt argument.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PromptArgument {
    /// Argument name.
    pub name: String,
    /// What it means.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether it must be given.
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub required: bool,
}

impl PromptArgument {
    /// A new argument.
    pub fn new(name: impl Into<String>, description: impl Into<String>, required: bool) -> Self {
        Self { name: name.into(), description: Some(description.into()), required }
    }
}

/// A prompt as listed by `prompts/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PromptInfo {
    /// Unique name.
    pub name: String,
    /// What it is for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its arguments.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub arguments: Vec<PromptArgument>,
}

/// A message of a prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PromptMessage {
    /// `user` or `assistant`.
    pub role: String,
    /// The content.
    pub content: Content,
}

impl PromptMessage {
    /// A user message.
    pub fn user(content: Content) -> Self {
        Self { role: "user".into(), content }
    }

    /// An assistant message.
    pub fn assistant(content: Content) -> Self {
        Self { role: "assistant".into(), content }
    }
}

/// The result of `prompts/get`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct GetPromptResult {
    /// Optional description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages.
    pub messages: Vec<PromptMessage>,
    /// Extra metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

impl GetPromptResult {
    /// A result with these messages.
    pub fn new(messages: Vec<PromptMessage>) -> Self {
        Self { messages, ..Self::default() }
    }
}
