//! `tools/list`, every page, the same in both eras; and what the listing
//! says of each tool's `Mcp-Param-*` headers (read from its `inputSchema`).

use super::Dialect;
use crate::client::error::ClientError;
use crate::protocol::methods::TOOLS_LIST;
use crate::protocol::routing::{ParamHeader, param_headers};
use crate::protocol::tools::ToolInfo;
use serde_json::{Map, Value};
use std::collections::HashMap;

/// The most pages read of one listing.
const MAX_PAGES: usize = 1000;

/// Each listed tool's `Mcp-Param-*` headers, or why its annotations were refused.
pub(super) type ToolTable = HashMap<String, Result<Vec<ParamHeader>, String>>;

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
            table.insert(info.name.clone(), headers);
        }
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(c) if !c.is_empty() => cursor = Some(c.to_owned()),
            _ => break,
        }
    }
    Ok((out, table))
}
