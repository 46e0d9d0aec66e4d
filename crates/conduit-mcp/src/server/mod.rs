//! The server: registries, options, the request pipeline and its handlers.
//!
//! A [`Server`] is built once with [`Server::builder`] and shared (it is a
//! cheap handle). Transports hand it parsed requests; its dispatcher checks them
//! in the protocol's order and routes each once to its handler.

mod builder;
mod dispatch;
mod extension;
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod fuzzing;
mod handlers;
mod route;
pub(crate) mod seal;
mod stamp;

pub use builder::{BuildError, CompletionFn, ServerBuilder, ServerOptions};
#[cfg(feature = "http")]
pub(crate) use dispatch::Answer;
pub use dispatch::{HeaderCheck, RequestEnv, SessionSlot};
pub use extension::{Declaration, Extension, IntoExtension, TaskMaker};
pub use handlers::resource_not_found;

use crate::clock::Clock;
use crate::prompt::Prompt;
use crate::protocol::jsonrpc::Message;
use crate::protocol::legacy_session::SERVED_LEGACY_VERSIONS;
use crate::protocol::meta::Implementation;
use crate::protocol::version::{Era, MODERN_VERSIONS};
use crate::resource::{Resource, ResourceTemplate};
use crate::subscriptions::Changes;
use crate::tool::registry::ToolRegistry;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, Once};
use tokio_util::sync::CancellationToken;

/// How often expired legacy sessions are swept.
const SESSION_SWEEP: std::time::Duration = std::time::Duration::from_secs(60);

/// An MCP server: cheap to clone, shared by every transport.
#[derive(Clone)]
pub struct Server {
    pub(crate) inner: Arc<ServerInner>,
}

/// What the extensions add to one era, indexed once at build.
#[derive(Default)]
pub(crate) struct EraTable {
    /// Method → index of the extension answering it.
    pub(crate) methods: HashMap<&'static str, usize>,
    /// Extensions with listen fields: (index, fields).
    pub(crate) listen: Vec<(usize, &'static [&'static str])>,
    /// The capabilities the extensions add.
    pub(crate) capabilities: Map<String, Value>,
    /// The extension that makes tasks in this era, if one is installed.
    pub(crate) task_maker: Option<usize>,
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
    /// Per era, by [`Era::index`].
    pub(crate) eras: [EraTable; 2],
    pub(crate) changes: Changes,
    pub(crate) sessions: Arc<crate::session::Sessions>,
    pub(crate) sealer: seal::Sealer,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) shutdown: CancellationToken,
    pub(crate) started: Once,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("info", &self.inner.info).finish_non_exhaustive()
    }
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

    /// Handles one request and returns its response message.
    ///
    /// Notifications that precede the response (progress, log, listen traffic)
    /// go to `env.out`.
    pub async fn handle_request(&self, req: crate::protocol::jsonrpc::Request, env: RequestEnv) -> Message {
        dispatch::handle_request(self, req, env).await
    }

    /// A client notification on a legacy session: `initialized`, `cancelled`; others are ignored.
    pub async fn handle_legacy_notification(
        &self,
        session: &crate::session::LegacySession,
        method: &str,
        params: Option<&Value>,
    ) {
        dispatch::handle_legacy_notification(self, session, method, params).await;
    }

    /// The versions this server answers (what `server/discover` lists and `-32022` names).
    pub(crate) fn supported_versions(&self) -> Vec<&'static str> {
        let eras = self.inner.options.eras;
        let mut v = Vec::new();
        if eras.serves(Era::Modern) {
            v.extend_from_slice(MODERN_VERSIONS);
        }
        if eras.serves(Era::Legacy) {
            v.extend_from_slice(SERVED_LEGACY_VERSIONS);
        }
        v
    }

    /// Whether this server serves `era`.
    pub(crate) fn serves(&self, era: Era) -> bool {
        self.inner.options.eras.serves(era)
    }

    /// The installed extension with this id, if any.
    pub fn extension(&self, id: &str) -> Option<&Arc<dyn Extension>> {
        self.inner.extensions.iter().find(|e| e.id() == id)
    }

    pub(crate) fn era_table(&self, era: Era) -> &EraTable {
        &self.inner.eras[era.index()]
    }

    /// The task maker of `era`, if an installed extension makes tasks there.
    pub(crate) fn task_maker(&self, era: Era) -> Option<&dyn TaskMaker> {
        self.era_table(era).task_maker.and_then(|i| self.inner.extensions[i].tasks())
    }

    /// Announces list changes and resource updates to listen streams.
    pub fn changes(&self) -> &Changes {
        &self.inner.changes
    }

    /// Tells listen streams that asked for it that the tool list changed.
    /// Returns how many streams were notified.
    pub fn notify_tools_list_changed(&self) -> usize {
        self.inner.changes.tools_list_changed()
    }

    /// Tells listen streams that asked for it that the prompt list changed.
    pub fn notify_prompts_list_changed(&self) -> usize {
        self.inner.changes.prompts_list_changed()
    }

    /// Tells listen streams that asked for it that the resource list changed.
    pub fn notify_resources_list_changed(&self) -> usize {
        self.inner.changes.resources_list_changed()
    }

    /// Tells listen streams subscribed to `uri` that it changed.
    pub fn notify_resource_updated(&self, uri: &str) -> usize {
        self.inner.changes.resource_updated(uri)
    }

    /// How many listen streams are open.
    pub fn open_subscriptions(&self) -> usize {
        self.inner.changes.open_streams()
    }

    /// What this node holds for the legacy sessions it serves.
    pub fn session_stats(&self) -> crate::session::SessionStats {
        self.inner.sessions.stats()
    }

    /// Starts the extensions' background work (the Tasks janitor, ...), once.
    ///
    /// The transports call it when they start serving; call it yourself only
    /// when you drive [`Server::handle_request`] directly. It needs a Tokio
    /// runtime: outside one it does nothing (and a later call starts them).
    pub fn start(&self) {
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        self.inner.started.call_once(|| {
            for e in &self.inner.extensions {
                e.start();
            }
            if self.serves(Era::Legacy) {
                self.inner.sessions.spawn_sweeper(SESSION_SWEEP, self.inner.shutdown.clone());
                self.inner.sessions.attach_relay();
            }
        });
    }

    /// Fires when the server shuts down (listen streams close gracefully, workers stop).
    pub fn shutdown_token(&self) -> &CancellationToken {
        &self.inner.shutdown
    }

    /// Shuts the server down: extensions stop (what they say on the way out,
    /// such as tasks interrupted, still reaches listen streams), then listen
    /// streams get their closing result.
    pub async fn shutdown(&self) {
        for e in &self.inner.extensions {
            e.shutdown().await;
        }
        self.inner.shutdown.cancel();
    }

    /// The serverInfo object every modern result carries in its `_meta`, unless turned off.
    /// Results are stamped (`resultType: "complete"` unless their producer set one, and this)
    /// by `stamp.rs`, on their way out of the pipeline, and nothing else stamps them.
    pub(crate) fn server_info_stamp(&self) -> Option<&Value> {
        self.inner.options.server_info_meta.then_some(&self.inner.info_value)
    }

    #[cfg(feature = "http")]
    /// Answers one request, its result left unstamped (see [`Answer`]): what the HTTP lane
    /// encodes straight to bytes.
    pub(crate) async fn answer(&self, req: crate::protocol::jsonrpc::Request, env: RequestEnv) -> Answer {
        dispatch::answer(self, req, env).await
    }
}
