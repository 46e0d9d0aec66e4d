//! `tools/list` and `tools/call` shapes.

use super::content::Content;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A tool as listed by `tools/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolInfo {
    /// Unique name.
    pub name: String,
    /// Display title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema (root `type: object`) of the arguments.
    pub input_schema: Value,
    /// JSON Schema of `structuredContent`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Behaviour hints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// Extra metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

impl ToolInfo {
    /// A tool with a name, description and input schema.
    pub fn new(name: impl Into<String>, description: impl Into<String>, input_schema: Value) -> Self {
        Self {
            name: name.into(),
            title: None,
            description: Some(description.into()),
            input_schema,
            output_schema: None,
            annotations: None,
            meta: None,
        }
    }
}

/// The result of a tool that ran to completion (`resultType: "complete"`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CallToolResult {
    /// Unstructured content.
    pub content: Vec<Content>,
    /// Structured content, conforming to the tool's `outputSchema`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the tool reported an error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Tool-provided metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl CallToolResult {
    /// A result with these content blocks.
    pub fn new(content: Vec<Content>) -> Self {
        Self { content, ..Self::default() }
    }

    /// A one-block text result.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new(vec![Content::text(text)])
    }

    /// A tool-level error (`isError: true`) with a text explanation.
    pub fn error(text: impl Into<String>) -> Self {
        Self { is_error: Some(true), ..Self::text(text) }
    }

    /// A structured result; its JSON text is also added as a text block.
    pub fn structured(value: Value) -> Self {
        Self { content: vec![Content::text(value.to_string())], structured_content: Some(value), ..Self::default() }
    }

    /// The wire object (era-neutral: the server adds `resultType` where the era has one).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or_else(|_| Value::Object(Map::new()))
    }
}
