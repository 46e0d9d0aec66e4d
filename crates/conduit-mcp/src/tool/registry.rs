//! Registered tools: listing order, lookup by name, argument validation and
//! the `x-mcp-header` parameters each one mirrors.

use super::ToolHandler;
use crate::protocol::tools::ToolInfo;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// A property mirrored in an `Mcp-Param-{header}` header.
#[derive(Debug, Clone)]
pub(crate) struct HeaderParam {
    pub(crate) header: String,
    pub(crate) path: Vec<String>,
}

impl HeaderParam {
    pub(crate) fn lookup<'a>(&self, args: &'a Value) -> Option<&'a Value> {
        self.path.iter().try_fold(args, |v, k| v.get(k)).filter(|v| !v.is_null())
    }
}

pub(crate) struct Registered {
    pub(crate) handler: Arc<dyn ToolHandler>,
    pub(crate) info: ToolInfo,
    pub(crate) validator: Option<jsonschema::Validator>,
    pub(crate) header_params: Vec<HeaderParam>,
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

fn is_token(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

fn collect_headers(
    tool: &str,
    schema: &Value,
    path: &mut Vec<String>,
    out: &mut Vec<HeaderParam>,
) -> Result<(), ToolError> {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(());
    };
    for (name, prop) in props {
        path.push(name.clone());
        if let Some(h) = prop.get("x-mcp-header") {
            let h = h.as_str().filter(|h| is_token(h)).ok_or_else(|| {
                ToolError::InvalidHeader(tool.into(), format!("property {name:?}: not an HTTP token"))
            })?;
            let ty = prop.get("type").and_then(Value::as_str);
            if !matches!(ty, Some("string" | "integer" | "boolean")) {
                return Err(ToolError::InvalidHeader(
                    tool.into(),
                    format!("property {name:?}: only string, integer or boolean properties can be mirrored"),
                ));
            }
            if out.iter().any(|p| p.header.eq_ignore_ascii_case(h)) {
                return Err(ToolError::InvalidHeader(tool.into(), format!("{h:?} used twice")));
            }
            out.push(HeaderParam { header: h.to_owned(), path: path.clone() });
        }
        collect_headers(tool, prop, path, out)?;
        path.pop();
    }
    Ok(())
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
        let mut header_params = Vec::new();
        collect_headers(&name, &info.input_schema, &mut Vec::new(), &mut header_params)?;
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
}
