//! Routing a request once: which handler answers it and what it acts on.
//! The pipeline (`dispatch/`) routes; its header checks and the handler
//! (`handlers/`) both read the same [`Route`].

use super::Server;
use super::extension::Extension;
use crate::protocol::methods::CoreMethod;
use crate::protocol::version::Era;
use crate::tool::registry::Registered;
use serde_json::{Map, Value};
use std::sync::Arc;

/// Who answers a request.
pub(crate) enum Target<'s> {
    /// A method the core answers.
    Core(CoreMethod),
    /// A method an extension answers.
    Ext(&'s Arc<dyn Extension>),
}

/// A request routed once.
pub(crate) struct Route<'s> {
    pub(crate) target: Target<'s>,
    /// For `tools/call`: the tool named by `params.name`, when it exists.
    pub(crate) tool: Option<&'s Registered>,
}

/// Routes `method` in `era`; `None` when nothing serves it (`-32601`).
pub(crate) fn route<'s>(server: &'s Server, era: Era, method: &str, params: &Map<String, Value>) -> Option<Route<'s>> {
    let i = &server.inner;
    let has_resources = !i.resources.is_empty() || !i.templates.is_empty();
    let table = server.era_table(era);
    let Some(core) = CoreMethod::parse(method) else {
        let ext = table.methods.get(method).map(|&n| &i.extensions[n])?;
        return Some(Route { target: Target::Ext(ext), tool: None });
    };
    let offered = match core {
        CoreMethod::Discover => true,
        CoreMethod::ToolsList | CoreMethod::ToolsCall => !i.tools.is_empty(),
        CoreMethod::PromptsList | CoreMethod::PromptsGet => !i.prompts.is_empty(),
        CoreMethod::ResourcesList | CoreMethod::ResourceTemplatesList | CoreMethod::ResourcesRead => has_resources,
        CoreMethod::Complete => i.completion.is_some(),
        CoreMethod::Listen => !i.tools.is_empty() || !i.prompts.is_empty() || has_resources || !table.listen.is_empty(),
    };
    if !offered {
        return None;
    }
    let tool = match core {
        CoreMethod::ToolsCall => params.get("name").and_then(Value::as_str).and_then(|n| i.tools.get(n)),
        _ => None,
    };
    Some(Route { target: Target::Core(core), tool })
}
