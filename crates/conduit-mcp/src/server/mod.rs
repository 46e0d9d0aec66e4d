//! The server: registries, options, and request dispatch.
//!
//! A [`Server`] is built once with [`Server::builder`] and shared (it is a
//! cheap handle). Transports hand it parsed requests; it validates `_meta`,
//! picks the handler and returns the response.

mod builder;
mod ctx;
mod dispatch;
mod extension;
pub(crate) mod seal;

pub use builder::{BuildError, CompletionFn, ServerBuilder, ServerOptions};
pub use ctx::{Ctx, TASKS_EXTENSION_ID};
pub use dispatch::{HeaderCheck, INSUFFICIENT_SCOPE, RequestEnv};
pub use extension::Extension;

use crate::clock::Clock;
use crate::prompt::Prompt;
use crate::protocol::RpcError;
use crate::protocol::meta::Implementation;
use crate::resource::{Resource, ResourceTemplate};
use crate::subscriptions::Hub;
use crate::tool::registry::ToolRegistry;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// An MCP server: cheap to clone, shared by every transport.
#[derive(Clone)]
pub struct Server {
    pub(crate) inner: Arc<ServerInner>,
}

pub(crate) struct ServerInner {
    pub(crate) info: Implementation,
    /// `info` as JSON, built once: every result's `_meta` carries it.
    pub(crate) info_value: Value,
    pub(crate) instructions: Option<String>,
    pub(crate) options: ServerOptions,
    pub(crate) tools: ToolRegistry,
    pub(crate) prompts: Vec<Prompt>,
    pub(crate) prompt_index: HashMap<String, usize>,
    pub(crate) resources: Vec<Resource>,
    pub(crate) resource_index: HashMap<String, usize>,
    pub(crate) templates: Vec<ResourceTemplate>,
    pub(crate) completion: Option<CompletionFn>,
    pub(crate) extensions: Vec<Arc<dyn Extension>>,
    pub(crate) hub: Arc<Hub>,
    pub(crate) sealer: seal::Sealer,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) shutdown: CancellationToken,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("info", &self.inner.info).finish_non_exhaustive()
    }
}

/// The `-32602` error for a resource URI nobody serves (SEP-2164), with `data.uri`.
pub fn resource_not_found(uri: &str) -> RpcError {
    RpcError::invalid_params("Resource not found").with_data(json!({ "uri": uri }))
}

impl Server {
    /// Starts building a server with this name and version.
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ServerBuilder {
        ServerBuilder::new(name, version)
    }

    /// The server's identity.
    pub fn info(&self) -> &Implementation {
        &self.inner.info
    }

    /// The injected clock.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.inner.clock
    }

    /// The registered extension with this id, if any.
    pub fn extension(&self, id: &str) -> Option<&Arc<dyn Extension>> {
        self.inner.extensions.iter().find(|e| e.id() == id)
    }

    /// Tells listen streams that asked for it that the tool list changed.
    /// Returns how many streams were notified.
    pub fn notify_tools_list_changed(&self) -> usize {
        self.inner.hub.tools_changed()
    }

    /// Tells listen streams that asked for it that the prompt list changed.
    pub fn notify_prompts_list_changed(&self) -> usize {
        self.inner.hub.prompts_changed()
    }

    /// Tells listen streams that asked for it that the resource list changed.
    pub fn notify_resources_list_changed(&self) -> usize {
        self.inner.hub.resources_changed()
    }

    /// Tells listen streams subscribed to `uri` that it changed.
    pub fn notify_resource_updated(&self, uri: &str) -> usize {
        self.inner.hub.resource_updated(uri)
    }

    /// How many listen streams are open.
    pub fn open_subscriptions(&self) -> usize {
        self.inner.hub.len()
    }

    /// Fires when the server shuts down (listen streams close gracefully, workers stop).
    pub fn shutdown_token(&self) -> &CancellationToken {
        &self.inner.shutdown
    }

    /// Shuts the server down: listen streams get their closing result, extensions stop.
    pub async fn shutdown(&self) {
        self.inner.shutdown.cancel();
        for e in &self.inner.extensions {
            e.shutdown().await;
        }
    }

    /// Adds `_meta["io.modelcontextprotocol/serverInfo"]` (unless turned off) and a
    /// default `resultType` to a result object.
    pub fn finish_result(&self, mut result: Value) -> Value {
        if let Value::Object(m) = &mut result {
            // `get` before `insert`: `entry` would allocate the key even when it is present.
            if !m.contains_key("resultType") {
                m.insert("resultType".into(), "complete".into());
            }
            if self.inner.options.server_info_meta {
                let info = self.inner.info_value.clone();
                match m.get_mut("_meta") {
                    Some(Value::Object(meta)) => {
                        meta.insert(crate::protocol::meta::SERVER_INFO_KEY.into(), info);
                    }
                    Some(_) => {}
                    None => {
                        let mut meta = serde_json::Map::new();
                        meta.insert(crate::protocol::meta::SERVER_INFO_KEY.into(), info);
                        m.insert("_meta".into(), Value::Object(meta));
                    }
                }
            }
        }
        result
    }
}
