//! The handlers of the core methods, one family per file, and the one place
//! that sends a routed request to its handler.

mod completion;
mod discover;
mod listen;
mod pagination;
mod prompts;
mod resources;
mod rounds;
mod task_plan;
mod tools;

pub use resources::resource_not_found;

use super::Server;
use super::dispatch::{Route, Target};
use crate::Ctx;
use crate::ctx::CtxInner;
use crate::protocol::RpcError;
use crate::protocol::methods::CoreMethod;
use serde_json::{Map, Value};
use std::sync::Arc;

impl Server {
    /// Runs the handler `route` names.
    pub(crate) async fn handle(
        &self,
        route: Route<'_>,
        parts: CtxInner,
        params: Map<String, Value>,
    ) -> Result<Value, RpcError> {
        let core = match route.target {
            Target::Core(m) => m,
            Target::Ext(ext) => {
                let ctx = Ctx { inner: Arc::new(parts) };
                return ext.handle(ctx.clone(), ctx.method(), params).await;
            }
        };
        match core {
            CoreMethod::Discover => Ok(self.discover(parts.era)),
            CoreMethod::ToolsList => self.list_tools(parts.era, &params),
            CoreMethod::ToolsCall => {
                let era = parts.era;
                Self::call_answer(era, self.call_tool(route.tool, parts, params).await)
            }
            CoreMethod::PromptsList => self.list_prompts(parts.era, &params),
            CoreMethod::PromptsGet => self.get_prompt(parts, params).await,
            CoreMethod::ResourcesList => self.list_resources(parts.era, &params),
            CoreMethod::ResourceTemplatesList => self.list_resource_templates(parts.era, &params),
            CoreMethod::ResourcesRead => self.read_resource(parts, params).await,
            CoreMethod::Complete => self.complete(parts, params).await,
            CoreMethod::Listen => self.listen(parts, params).await,
        }
    }
}
