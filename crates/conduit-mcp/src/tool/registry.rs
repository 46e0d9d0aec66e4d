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
    /// `outputSchema` compiled once, at registration (`None`: none declared, or it does
    /// not compile, and then `structuredContent` is not checked, as before).
    pub(crate) output_validator: Option<jsonschema::Validator>,
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
        let output_validator = info.output_schema.as_ref().and_then(|schema| match jsonschema::validator_for(schema) {
            Ok(v) => Some(v),
            Err(e) => {
                tracing::warn!(tool = %name, error = %e, "outputSchema does not compile: structuredContent is not checked");
                None
            }
        });
        let scopes = handler.required_scopes();
        self.index.insert(name, self.tools.len());
        self.tools.push(Registered {
            handler,
            info,
            validator: Some(validator),
            output_validator,
            header_params,
            scopes,
        });
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
        self.check_output(&r)?;
        Ok(r.to_value())
    }

    /// Whether the result's `structuredContent` matches the tool's `outputSchema` (the
    /// validator compiled at registration).
    pub(crate) fn check_output(&self, r: &CallToolResult) -> Result<(), RpcError> {
        if let (Some(v), Some(sc)) = (&self.output_validator, &r.structured_content)
            && !v.is_valid(sc)
        {
            let name = &self.info.name;
            tracing::warn!(tool = %name, "structuredContent does not match outputSchema");
            return Err(RpcError::internal(format!(
                "Tool {name} produced structuredContent that does not match its outputSchema"
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::Tool;
    use serde_json::json;

    fn one(output_schema: Value) -> ToolRegistry {
        let tool = Tool::new("t", "a tool")
            .output_schema(output_schema)
            .handle(|_ctx, _args| async { Ok(CallToolResult::text("unused")) });
        let mut r = ToolRegistry::default();
        r.insert(Arc::new(tool)).expect("registered");
        r
    }

    #[test]
    fn the_output_schema_is_compiled_once_and_checks_structured_content() {
        let r = one(json!({ "type": "object", "required": ["count"] }));
        let t = r.get("t").expect("t");
        assert!(t.output_validator.is_some());
        assert!(t.check_output(&CallToolResult::structured(json!({ "count": 1 }))).is_ok());
        let e = t.check_output(&CallToolResult::structured(json!({ "other": 1 }))).unwrap_err();
        assert_eq!(e.code, -32603);
        // No structuredContent: nothing to check.
        assert!(t.check_output(&CallToolResult::text("plain")).is_ok());
    }

    #[test]
    fn an_output_schema_that_does_not_compile_checks_nothing() {
        let r = one(json!({ "type": "no such type" }));
        let t = r.get("t").expect("t");
        assert!(t.output_validator.is_none());
        assert!(t.check_output(&CallToolResult::structured(json!({ "any": 1 }))).is_ok());
    }
}
