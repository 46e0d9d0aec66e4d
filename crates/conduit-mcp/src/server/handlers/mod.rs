//! The handlers of the core methods, one family per file, and the one place
//! that sends a routed request to its handler.

mod completion;
mod discover;
mod inline;
mod listen;
mod pagination;
mod prompts;
mod resources;
mod rounds;
mod task_plan;
mod tools;

pub(crate) use discover::capabilities;
pub use resources::resource_not_found;

use super::Server;
use super::route::{Route, Target};
use crate::ctx::{Ctx, CtxInner};
use crate::protocol::RpcError;
use crate::protocol::methods::CoreMethod;
use serde_json::{Map, Value};
use std::sync::Arc;

/// Runs the handler `route` names.
pub(crate) async fn handle(
    server: &Server,
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
        CoreMethod::Discover => Ok(discover::discover(server, parts.era)),
        CoreMethod::ToolsList => tools::list_tools(server, parts.era, &params),
        CoreMethod::ToolsCall => {
            let era = parts.era;
            task_plan::call_answer(era, tools::call_tool(server, route.tool, parts, params).await)
        }
        CoreMethod::PromptsList => prompts::list_prompts(server, parts.era, &params),
        CoreMethod::PromptsGet => prompts::get_prompt(server, parts, params).await,
        CoreMethod::ResourcesList => resources::list_resources(server, parts.era, &params),
        CoreMethod::ResourceTemplatesList => resources::list_resource_templates(server, parts.era, &params),
        CoreMethod::ResourcesRead => resources::read_resource(server, parts, params).await,
        CoreMethod::Complete => completion::complete(server, parts, params).await,
        CoreMethod::Listen => listen::listen(server, parts, params).await,
    }
}
