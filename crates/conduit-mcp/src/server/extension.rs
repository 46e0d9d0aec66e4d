//! The extension seam: how an extension adds capabilities, methods, listen
//! filter fields and task creation to the server, per era, without the core
//! knowing it or any transport.

use crate::ctx::Ctx;
use crate::protocol::RpcError;
use crate::protocol::meta::ClientCapabilities;
use crate::protocol::version::Era;
use crate::subscriptions::Subscription;
use crate::task::{ResumableFn, TaskSpec};
use async_trait::async_trait;
use serde_json::{Map, Value};
use std::sync::Arc;

/// What an extension adds to one era.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
#[must_use]
pub struct Declaration {
    /// Merged into the server's capabilities; object values merge one level
    /// deep, so several extensions can each add a key under `extensions`.
    pub capabilities: Map<String, Value>,
    /// The methods it answers.
    pub methods: &'static [&'static str],
    /// The `subscriptions/listen` filter fields it honours.
    pub listen_fields: &'static [&'static str],
}

impl Declaration {
    /// Nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Advertises `value` under `capabilities.extensions[id]`.
    pub fn extension(mut self, id: &str, value: Value) -> Self {
        let ext = self.capabilities.entry("extensions").or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(m) = ext {
            m.insert(id.to_owned(), value);
        }
        self
    }

    /// Advertises `value` under `capabilities[key]`.
    pub fn capability(mut self, key: &str, value: Value) -> Self {
        self.capabilities.insert(key.to_owned(), value);
        self
    }

    /// The methods it answers.
    pub fn methods(mut self, methods: &'static [&'static str]) -> Self {
        self.methods = methods;
        self
    }

    /// The listen filter fields it honours.
    pub fn listen_fields(mut self, fields: &'static [&'static str]) -> Self {
        self.listen_fields = fields;
        self
    }
}

/// A protocol extension (such as the Tasks extension).
#[async_trait]
pub trait Extension: Send + Sync + 'static {
    /// The extension id, e.g. `io.modelcontextprotocol/tasks`.
    fn id(&self) -> &'static str;

    /// What it adds to `era`; `None` when it has nothing there.
    fn declare(&self, era: Era) -> Option<Declaration>;

    /// Called once when the server starts serving, inside the runtime:
    /// start background work here.
    fn start(&self) {}

    /// Handles one of its methods; the result gets `resultType` and server `_meta` added if missing.
    ///
    /// `params` is the request's params object without `_meta`, which has moved
    /// into the context: read it with [`Ctx::meta`].
    async fn handle(&self, ctx: Ctx, method: &str, params: Map<String, Value>) -> Result<Value, RpcError>;

    /// Its task maker, if it turns tools' [`TaskSpec`]s into tasks.
    fn tasks(&self) -> Option<&dyn TaskMaker> {
        None
    }

    /// Validates its listen fields and registers interest; returns the fields to acknowledge.
    async fn listen(
        &self,
        _ctx: &Ctx,
        _filter: &Map<String, Value>,
        _sub: &Subscription,
    ) -> Result<Map<String, Value>, RpcError> {
        Ok(Map::new())
    }

    /// Called once when the server shuts down.
    async fn shutdown(&self) {}
}

/// An extension that stores tasks. The server decides, in one place, whether
/// a call becomes a task; the maker says what was asked for and does the storing.
#[async_trait]
pub trait TaskMaker: Send + Sync {
    /// Whether this request asked for its work to become a task (its era,
    /// its declared capabilities, its params without `_meta`).
    fn requested(&self, era: Era, caps: &ClientCapabilities, params: &Map<String, Value>) -> bool;

    /// What a request must declare to get a task (the `requiredCapabilities` of `-32021`).
    fn required_capabilities(&self, era: Era) -> Value;

    /// Stores the task (before answering), starts its work, and returns the call's result.
    async fn create(&self, ctx: &Ctx, spec: TaskSpec) -> Result<Value, RpcError>;

    /// The resumable work registered under `name`, for running it inline.
    fn resumable(&self, name: &str) -> Option<ResumableFn>;
}

/// Anything [`ServerBuilder::extension`](super::ServerBuilder::extension) takes:
/// an extension, or a handle that installs what it serves — nothing when its
/// configuration is off, several extensions when it serves several parts
/// (`Tasks` installs the Tasks extension and the 2025-11-25 tasks wire).
pub trait IntoExtension {
    /// The extensions to install (none, one or several).
    fn into_extensions(self) -> Vec<Arc<dyn Extension>>;
}

impl<E: Extension> IntoExtension for E {
    fn into_extensions(self) -> Vec<Arc<dyn Extension>> {
        vec![Arc::new(self)]
    }
}

impl IntoExtension for Arc<dyn Extension> {
    fn into_extensions(self) -> Vec<Arc<dyn Extension>> {
        vec![self]
    }
}
