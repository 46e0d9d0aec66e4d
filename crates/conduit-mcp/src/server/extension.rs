//! The extension seam: how an extension plugs methods, capabilities, task
//! creation and listen filters into the server without the core knowing it.

use super::Ctx;
use crate::protocol::RpcError;
use crate::subscriptions::Subscription;
use crate::tool::TaskSpec;
use async_trait::async_trait;
use serde_json::{Map, Value};

/// A protocol extension (such as the Tasks extension).
#[async_trait]
pub trait Extension: Send + Sync + 'static {
    /// The extension id, e.g. `io.modelcontextprotocol/tasks`.
    fn id(&self) -> &'static str;

    /// The value advertised under `capabilities.extensions[id]` (default `{}`).
    fn capability(&self) -> Value {
        Value::Object(Map::new())
    }

    /// The methods the extension owns.
    fn methods(&self) -> &'static [&'static str];

    /// For a method it owns: the value the HTTP `Mcp-Name` header must mirror.
    fn routing_name<'a>(&self, _method: &str, _params: &'a Map<String, Value>) -> Option<&'a str> {
        None
    }

    /// Handles one of its methods; the result gets `resultType` and server `_meta` added if missing.
    ///
    /// `params` is the request's params object without `_meta`, which has moved
    /// into the context: read it with [`Ctx::meta`].
    async fn handle(&self, ctx: Ctx, method: &str, params: Map<String, Value>) -> Result<Value, RpcError>;

    /// Turns a tool's task into a `CreateTaskResult`; `None` if this extension does not create tasks.
    async fn create_task(&self, _ctx: &Ctx, _spec: TaskSpec) -> Option<Result<Value, RpcError>> {
        None
    }

    /// The `subscriptions/listen` filter fields it honours.
    fn listen_fields(&self) -> &'static [&'static str] {
        &[]
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
