//! Content blocks carried by tool results and prompt messages.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One content block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Content {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// A base64 image.
    Image {
        /// Base64 data.
        data: String,
        /// e.g. `image/png`.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// Base64 audio.
    Audio {
        /// Base64 data.
        data: String,
        /// e.g. `audio/wav`.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// A link to a resource.
    ResourceLink {
        /// The URI.
        uri: String,
        /// Display name.
        name: String,
        /// MIME type.
        #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
    },
    /// An embedded resource.
    Resource {
        /// Its contents.
        resource: ResourceContents,
    },
}

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// An image block.
    pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self::Image { data: data.into(), mime_type: mime_type.into() }
    }

    /// An audio block.
    pub fn audio(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self::Audio { data: data.into(), mime_type: mime_type.into() }
    }

    /// An embedded resource block.
    pub fn resource(contents: ResourceContents) -> Self {
        Self::Resource { resource: contents }
    }
}

/// The contents of one resource: text or a base64 blob.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ResourceContents {
    /// The URI.
    pub uri: String,
    /// MIME type.
    #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Text contents.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Base64 contents.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
    /// Extra fields.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

impl ResourceContents {
    /// Text contents.
    pub fn text(uri: impl Into<String>, mime_type: impl Into<String>, text: impl Into<String>) -> Self {
        Self { uri: uri.into(), mime_type: Some(mime_type.into()), text: Some(text.into()), blob: None, meta: None }
    }

    /// Binary contents, base64-encoded.
    pub fn blob(uri: impl Into<String>, mime_type: impl Into<String>, blob: impl Into<String>) -> Self {
        Self { uri: uri.into(), mime_type: Some(mime_type.into()), text: None, blob: Some(blob.into()), meta: None }
    }
}
