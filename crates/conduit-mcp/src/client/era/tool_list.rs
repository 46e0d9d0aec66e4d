//! `tools/list`, every page, the same in both eras; what the listing says of
//! each tool that a call needs (its `Mcp-Param-*` headers, read from its
//! `inputSchema`; its 2025-11-25 `execution.taskSupport`); and the table both
//! eras keep of it, learnt at the first call that needs it.

use super::Dialect;
use crate::client::error::ClientError;
use crate::protocol::methods::TOOLS_LIST;
use crate::protocol::routing::{ParamHeader, param_headers};
use crate::protocol::tools::ToolInfo;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The most pages read of one listing.
const MAX_PAGES: usize = 1000;

/// What a listing says of one tool that a call of it needs.
#[derive(Debug)]
pub(super) struct Listed {
    /// Its `Mcp-Param-*` headers, or why its annotations were refused.
    pub(super) headers: Result<Vec<ParamHeader>, String>,
    /// Its `execution.taskSupport` (2025-11-25: `forbidden`, `optional`, `required`).
    pub(super) task_support: Option<String>,
}

impl Listed {
    /// Whether a 2025-11-25 call of it may be task-augmented.
    pub(super) fn takes_tasks(&self) -> bool {
        matches!(self.task_support.as_deref(), Some("optional" | "required"))
    }
}

/// Each listed tool, by name.
pub(super) type ToolTable = HashMap<String, Listed>;

/// The table of the last listing. A call looks its tool up here; a tool it does not
/// know yet (nothing listed, or one added since) lists once more.
#[derive(Debug, Default)]
pub(super) struct ToolCache(Mutex<Option<Arc<ToolTable>>>);

impl ToolCache {
    /// Lists every tool and keeps the table.
    pub(super) async fn list(&self, era: &dyn Dialect) -> Result<Vec<ToolInfo>, ClientError> {
        let (tools, table) = list(era).await?;
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(table));
        Ok(tools)
    }

    /// The table, listing first when it does not know `name`; a server that cannot
    /// list still gets the call (the table then has nothing of the tool).
    pub(super) async fn knowing(&self, era: &dyn Dialect, name: &str) -> Arc<ToolTable> {
        if let Some(table) = self.current().filter(|t| t.contains_key(name)) {
            return table;
        }
        let _ = self.list(era).await;
        self.current().unwrap_or_default()
    }

    fn current(&self) -> Option<Arc<ToolTable>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// Every tool the server lists, minus those whose `x-mcp-header`
/// annotations break the rules (a client must not call them), and the
/// headers of every listed tool.
pub(super) async fn list(era: &dyn Dialect) -> Result<(Vec<ToolInfo>, ToolTable), ClientError> {
    let mut out = Vec::new();
    let mut table = HashMap::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let mut params = Map::new();
        if let Some(c) = cursor.take() {
            params.insert("cursor".into(), Value::String(c));
        }
        let page = era.request(TOOLS_LIST, params).await?;
        let tools = page
            .get("tools")
            .and_then(Value::as_array)
            .ok_or_else(|| ClientError::protocol("tools/list result has no tools array"))?;
        for t in tools {
            let Ok(info) = serde_json::from_value::<ToolInfo>(t.clone()) else {
                tracing::warn!("skipping a tool the server described badly");
                continue;
            };
            let headers = param_headers(&info.input_schema);
            if let Err(why) = &headers {
                tracing::warn!(tool = %info.name, "excluding tool with an invalid x-mcp-header: {why}");
            } else {
                out.push(info.clone());
            }
            let task_support = t.pointer("/execution/taskSupport").and_then(Value::as_str).map(str::to_owned);
            table.insert(info.name.clone(), Listed { headers, task_support });
        }
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(c) if !c.is_empty() => cursor = Some(c.to_owned()),
            _ => break,
        }
    }
    Ok((out, table))
}
