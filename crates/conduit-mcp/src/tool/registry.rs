//! Registered tools: listing order, lookup by name, argument validation, the
//! result checked against the output schema, and the `x-mcp-header`
//! parameters each one mirrors.

use super::ToolHandler;
use crate::protocol::jsonrpc::RpcError;
use crate::protocol::routing::{ParamHeader, param_headers};
use crate::protocol::tools::{CallToolResult, ToolInfo};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

pub(crate) struct Registered {
    pub(crate) handler: Arc<dyn ToolHandler>,
    pub(crate) info: ToolInfo,
    pub(crate) validator: Option<jsonschema::Validator>,
    pub(crate) header_params: Vec<ParamHeader>,
    pub(crate) scopes: Vec<String>,
}

#[derive(Default)]
pub(crate) struct ToolRegistry {
    pub(crate) tools: Vec<Registered>,
    index: HashMap<String, usize>,
}

/// Why a tool could not be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// Two tools share a name.
    #[error("duplicate tool name {0:?}")]
    Duplicate(String),
    /// The input schema is not a JSON Schema object with `type: "object"`.
    #[error("tool {0:?}: inputSchema must be an object schema with type \"object\"")]
    NotObjectSchema(String),
    /// The input schema does not compile.
    #[error("tool {0:?}: invalid inputSchema: {1}")]
    InvalidSchema(String, String),
    /// An `x-mcp-header` annotation breaks the spec's rules.
    #[error("tool {0:?}: invalid x-mcp-header: {1}")]
    InvalidHeader(String, String),
}

impl ToolRegistry {
    pub(crate) fn insert(&mut self, handler: Arc<dyn ToolHandler>) -> Result<(), ToolError> {
        let info = handler.info();
        let name = info.name.clone();
        if self.index.contains_key(&name) {
            return Err(ToolError::Duplicate(name));
        }
        if info.input_schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(ToolError::NotObjectSchema(name));
        }
        let validator = jsonschema::validator_for(&info.input_schema)
            .map_err(|e| ToolError::InvalidSchema(name.clone(), e.to_string()))?;
        let header_params = param_headers(&info.input_schema).map_err(|e| ToolError::InvalidHeader(name.clone(), e))?;
        let scopes = handler.required_scopes();
        self.index.insert(name, self.tools.len());
        self.tools.push(Registered { handler, info, validator: Some(validator), header_params, scopes });
        Ok(())
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Registered> {
        self.index.get(name).map(|&i| &self.tools[i])
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

impl Registered {
    /// Validates arguments; `Err` holds a message for an `isError` result.
    pub(crate) fn validate(&self, args: &Value) -> Result<(), String> {
        let Some(v) = &self.validator else {
            return Ok(());
        };
        // The common case: valid arguments, checked without building error values.
        if v.is_valid(args) {
            return Ok(());
        }
        let errors: Vec<String> = v
            .iter_errors(args)
            .take(5)
            .map(|e| {
                let path = e.instance_path().to_string();
                if path.is_empty() { e.to_string() } else { format!("{path}: {e}") }
            })
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(format!("Invalid arguments for tool {}: {}", self.info.name, errors.join("; ")))
        }
    }

    /// The result on the wire, once its `structuredContent` matches the tool's `outputSchema`.
    pub(crate) fn checked(&self, r: CallToolResult) -> Result<Value, RpcError> {
        if let (Some(schema), Some(sc)) = (&self.info.output_schema, &r.structured_content)
            && let Ok(v) = jsonschema::validator_for(schema)
            && !v.is_valid(sc)
        {
            let name = &self.info.name;
            tracing::warn!(tool = %name, "structuredContent does not match outputSchema");
            return Err(RpcError::internal(format!(
                "Tool {name} produced structuredContent that does not match its outputSchema"
            )));
        }
        Ok(r.to_value())
    }
}
