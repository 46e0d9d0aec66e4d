use super::{EraTable, Extension, IntoExtension, Server, ServerInner, seal::Sealer};
use crate::clock::{Clock, SystemClock};
use crate::ctx::Ctx;
use crate::prompt::Prompt;
use crate::protocol::RpcError;
use crate::protocol::discover::CacheHints;
use crate::protocol::meta::Implementation;
use crate::protocol::version::{Era, ServedEras};
use crate::resource::{Resource, ResourceTemplate};
use crate::session::{SessionConfig, Sessions};
use crate::subscriptions::Changes;
use crate::tool::registry::{ToolError, ToolRegistry};
use crate::tool::{ToolHandler, TypedTool, TypedToolHandler};
use futures_util::future::BoxFuture;
use serde_json::Value;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Handles `completion/complete`: receives the params, returns the `completion` object.
pub type CompletionFn = Arc<dyn Fn(Ctx, Value) -> BoxFuture<'static, Result<Value, RpcError>> + Send + Sync>;

/// Tunable server behaviour.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerOptions {
    /// Put `_meta["io.modelcontextprotocol/serverInfo"]` on every result (default on).
    pub server_info_meta: bool,
    /// Caching hints on list results and `resources/read`.
    pub list_cache: CacheHints,
    /// Caching hints on `server/discover`.
    pub discover_cache: CacheHints,
    /// Items per page of a list result.
    pub page_size: usize,
    /// How long a sealed MRTR `requestState` stays valid.
    pub request_state_ttl: Duration,
    /// Which eras are answered (default both).
    pub eras: ServedEras,
    /// Legacy sessions: rounds of server→client requests one call may make (default 8).
    pub max_input_rounds: usize,
    /// Legacy sessions: how long the server waits for the client's answer to one of its requests.
    pub input_round_timeout: Duration,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            server_info_meta: true,
            list_cache: CacheHints::default(),
            discover_cache: CacheHints::default(),
            page_size: 100,
            request_state_ttl: Duration::from_secs(600),
            eras: ServedEras::Both,
            max_input_rounds: 8,
            input_round_timeout: Duration::from_secs(600),
        }
    }
}

/// Why a server could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A tool is invalid.
    #[error(transparent)]
    Tool(#[from] ToolError),
    /// Two prompts, resources or extensions share a name.
    #[error("duplicate {0} {1:?}")]
    Duplicate(&'static str, String),
    /// An option is out of range.
    #[error("invalid option {0}: {1}")]
    Option(&'static str, String),
    /// An extension's configuration is invalid.
    #[error("{0}")]
    Extension(String),
}

/// Builds a [`Server`].
#[must_use]
pub struct ServerBuilder {
    info: Implementation,
    instructions: Option<String>,
    options: ServerOptions,
    tools: Vec<Arc<dyn ToolHandler>>,
    prompts: Vec<Prompt>,
    resources: Vec<Resource>,
    templates: Vec<ResourceTemplate>,
    completion: Option<CompletionFn>,
    extensions: Vec<Arc<dyn Extension>>,
    sealing_key: Option<[u8; 32]>,
    clock: Arc<dyn Clock>,
    sessions: SessionConfig,
}

impl std::fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerBuilder").field("info", &self.info).finish_non_exhaustive()
    }
}

impl ServerBuilder {
    pub(crate) fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            info: Implementation::new(name, version),
            instructions: None,
            options: ServerOptions::default(),
            tools: Vec::new(),
            prompts: Vec::new(),
            resources: Vec::new(),
            templates: Vec::new(),
            completion: None,
            extensions: Vec::new(),
            sealing_key: None,
            clock: Arc::new(SystemClock),
            sessions: SessionConfig::default(),
        }
    }

    /// Natural-language guidance returned by `server/discover`.
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(text.into());
        self
    }

    /// Replaces the options.
    pub fn options(mut self, options: ServerOptions) -> Self {
        self.options = options;
        self
    }

    /// Turns `_meta` serverInfo on results on or off.
    pub fn server_info_meta(mut self, on: bool) -> Self {
        self.options.server_info_meta = on;
        self
    }

    /// Registers a tool (anything implementing [`ToolHandler`], including [`crate::tool::Tool`]).
    pub fn tool(mut self, tool: impl ToolHandler) -> Self {
        self.tools.push(Arc::new(tool));
        self
    }

    /// Registers a typed tool.
    pub fn typed_tool<T: TypedTool>(self) -> Self {
        self.tool(TypedToolHandler::<T>::default())
    }

    /// Registers a prompt.
    pub fn prompt(mut self, prompt: Prompt) -> Self {
        self.prompts.push(prompt);
        self
    }

    /// Registers a resource.
    pub fn resource(mut self, resource: Resource) -> Self {
        self.resources.push(resource);
        self
    }

    /// Registers a resource template.
    pub fn resource_template(mut self, template: ResourceTemplate) -> Self {
        self.templates.push(template);
        self
    }

    /// Sets the `completion/complete` handler (and advertises `completions`).
    pub fn completion<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(Ctx, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, RpcError>> + Send + 'static,
    {
        self.completion = Some(Arc::new(move |ctx, p| Box::pin(f(ctx, p))));
        self
    }

    /// Installs an extension: an [`Extension`], or a handle such as
    /// `ext::tasks::Tasks` that installs its extension when its configuration
    /// enables it (and nothing otherwise).
    pub fn extension(mut self, ext: impl IntoExtension) -> Self {
        self.extensions.extend(ext.into_extensions());
        self
    }

    /// The secret that seals MRTR `requestState` (default: random per process,
    /// so set it when several nodes serve one client).
    pub fn sealing_key(mut self, key: [u8; 32]) -> Self {
        self.sealing_key = Some(key);
        self
    }

    /// Which eras the server answers (default both).
    pub fn eras(mut self, eras: ServedEras) -> Self {
        self.options.eras = eras;
        self
    }

    /// How legacy sessions are kept (store, cap, idle timeout, replay buffer).
    pub fn sessions(mut self, config: SessionConfig) -> Self {
        self.sessions = config;
        self
    }

    /// Injects a clock (tests use [`crate::clock::ManualClock`]).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The clock this builder will use.
    pub fn current_clock(&self) -> Arc<dyn Clock> {
        self.clock.clone()
    }

    /// Validates everything and builds the server.
    pub fn build(self) -> Result<Server, BuildError> {
        if self.options.page_size == 0 {
            return Err(BuildError::Option("page_size", "must be at least 1".into()));
        }
        if self.sessions.limits.max_sessions == 0 {
            return Err(BuildError::Option("sessions.max_sessions", "must be at least 1".into()));
        }
        if self.sessions.limits.idle_ms == 0 {
            return Err(BuildError::Option("sessions.idle_timeout", "must be positive".into()));
        }
        let mut tools = ToolRegistry::default();
        for t in self.tools {
            tools.insert(t)?;
        }
        let mut prompt_index = HashMap::new();
        for (i, p) in self.prompts.iter().enumerate() {
            if prompt_index.insert(p.info().name.clone(), i).is_some() {
                return Err(BuildError::Duplicate("prompt", p.info().name.clone()));
            }
        }
        let mut resource_index = HashMap::new();
        for (i, r) in self.resources.iter().enumerate() {
            if resource_index.insert(r.info().uri.clone(), i).is_some() {
                return Err(BuildError::Duplicate("resource", r.info().uri.clone()));
            }
        }
        let mut ids = std::collections::HashSet::new();
        for e in &self.extensions {
            if !ids.insert(e.id()) {
                return Err(BuildError::Duplicate("extension", e.id().into()));
            }
        }
        for era in Era::ALL {
            if let Some(dup) = duplicate_method(&self.extensions, era) {
                return Err(BuildError::Duplicate("extension method", dup.into()));
            }
        }
        let eras = Era::ALL.map(|era| era_table(&self.extensions, era));

        Ok(Server {
            inner: Arc::new(ServerInner {
                info_value: serde_json::to_value(&self.info).unwrap_or(Value::Null),
                info: self.info,
                instructions: self.instructions,
                options: self.options,
                tools,
                prompts: self.prompts,
                prompt_index,
                resources: self.resources,
                resource_index,
                templates: self.templates,
                completion: self.completion,
                extensions: self.extensions,
                eras,
                changes: Changes::default(),
                sessions: Arc::new(Sessions::new(self.sessions, self.clock.clone())),
                sealer: self.sealing_key.map(Sealer::new).unwrap_or_else(Sealer::random),
                clock: self.clock,
                shutdown: CancellationToken::new(),
                started: std::sync::Once::new(),
            }),
        })
    }
}

/// Indexes what the extensions add to `era`.
fn era_table(extensions: &[Arc<dyn Extension>], era: Era) -> EraTable {
    let mut t = EraTable::default();
    for (n, e) in extensions.iter().enumerate() {
        let Some(d) = e.declare(era) else { continue };
        if t.task_maker.is_none() && e.tasks().is_some() {
            t.task_maker = Some(n);
        }
        for m in d.methods {
            t.methods.entry(m).or_insert(n);
        }
        if !d.listen_fields.is_empty() {
            t.listen.push((n, d.listen_fields));
        }
        for (k, v) in d.capabilities {
            match (t.capabilities.get_mut(&k), v) {
                (Some(Value::Object(have)), Value::Object(more)) => have.extend(more),
                (_, v) => {
                    t.capabilities.insert(k, v);
                }
            }
        }
    }
    t
}

/// A method two extensions both claim in `era`, if any.
fn duplicate_method(extensions: &[Arc<dyn Extension>], era: Era) -> Option<&'static str> {
    let mut seen = std::collections::HashSet::new();
    extensions.iter().filter_map(|e| e.declare(era)).flat_map(|d| d.methods.iter().copied()).find(|m| !seen.insert(*m))
}
