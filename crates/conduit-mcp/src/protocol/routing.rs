//! The Streamable HTTP routing headers, as rules both sides share: which body
//! value `Mcp-Name` mirrors for each method, which tool arguments
//! `Mcp-Param-{Name}` mirrors (`x-mcp-header` in the tool's `inputSchema`),
//! and the `=?base64?…?=` wrapping of values that are not plain header text.
//!
//! The server checks these (`transport::http`); a client sets them. Both use
//! the functions here, so they cannot drift apart.

use super::methods::{PROMPTS_GET, RESOURCES_READ, TASKS_CANCEL, TASKS_GET, TASKS_UPDATE, TOOLS_CALL};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value};
use std::borrow::Cow;

/// `MCP-Protocol-Version` (lower case, as `http` header names are).
pub const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";
/// `Mcp-Method`.
pub const METHOD_HEADER: &str = "mcp-method";
/// `Mcp-Name`.
pub const NAME_HEADER: &str = "mcp-name";
/// The prefix of `Mcp-Param-{Name}` headers.
pub const PARAM_HEADER_PREFIX: &str = "mcp-param-";

/// The `params` member that `Mcp-Name` mirrors for `method`, if any.
pub fn name_param(method: &str) -> Option<&'static str> {
    match method {
        TOOLS_CALL | PROMPTS_GET => Some("name"),
        RESOURCES_READ => Some("uri"),
        TASKS_GET | TASKS_UPDATE | TASKS_CANCEL => Some("taskId"),
        _ => None,
    }
}

/// The value `Mcp-Name` must carry for this request: the mirrored member when
/// it is a string (nothing is mirrored otherwise, and the method's own
/// validation answers the bad param).
pub fn mirrored_name<'a>(method: &str, params: &'a Map<String, Value>) -> Option<&'a str> {
    params.get(name_param(method)?)?.as_str()
}

/// Whether `s` can travel as a header value as it is: visible ASCII and inner
/// spaces, no surrounding white space, and not itself looking like the wrapper.
fn is_plain(s: &str) -> bool {
    let visible = s.bytes().all(|b| b == b' ' || (0x21..0x7f).contains(&b));
    let wrapped = s.starts_with("=?base64?") && s.ends_with("?=");
    visible && !s.is_empty() && !s.starts_with(' ') && !s.ends_with(' ') && !wrapped
}

/// The header form of `value`: itself when it is plain header text, else
/// `=?base64?{standard base64 of its UTF-8}?=`.
pub fn encode_value(value: &str) -> Cow<'_, str> {
    if is_plain(value) {
        Cow::Borrowed(value)
    } else {
        Cow::Owned(format!("=?base64?{}?=", STANDARD.encode(value.as_bytes())))
    }
}

/// A `=?base64?…?=` wrapper whose content is not valid base64 of UTF-8 text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvalidBase64;

/// Reads a header value: unwraps `=?base64?…?=` (markers lower case, decoded
/// strictly); any other value is literal text (borrowed, not copied).
pub fn decode_value(header: &str) -> Result<Cow<'_, str>, InvalidBase64> {
    match header.strip_prefix("=?base64?").and_then(|r| r.strip_suffix("?=")) {
        Some(inner) => {
            let bytes = STANDARD.decode(inner).map_err(|_| InvalidBase64)?;
            String::from_utf8(bytes).map(Cow::Owned).map_err(|_| InvalidBase64)
        }
        None => Ok(Cow::Borrowed(header)),
    }
}

/// Whether a decoded header value stands for the body value: strings exactly,
/// booleans as `true`/`false`, numbers numerically (`42.0` equals `42`).
pub fn value_matches(header: &str, body: &Value) -> bool {
    match body {
        Value::String(s) => header == s,
        Value::Bool(b) => header == if *b { "true" } else { "false" },
        Value::Number(n) => match (header.parse::<f64>(), n.as_f64()) {
            (Ok(h), Some(b)) => h == b,
            _ => false,
        },
        _ => false,
    }
}

/// The header text a client sends for a mirrored argument (`None` for values
/// that are never mirrored: null, arrays, objects).
pub fn param_value(body: &Value) -> Option<Cow<'_, str>> {
    match body {
        Value::String(s) => Some(encode_value(s)),
        Value::Bool(b) => Some(Cow::Borrowed(if *b { "true" } else { "false" })),
        Value::Number(n) => Some(Cow::Owned(n.to_string())),
        _ => None,
    }
}

/// One tool argument mirrored in an `Mcp-Param-{header}` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamHeader {
    /// The `{Name}` part of the header, as the schema spells it.
    pub header: String,
    /// The property path inside `arguments`.
    pub path: Vec<String>,
}

impl ParamHeader {
    /// The argument's value in `args`, when present and not null (only then is the header expected).
    pub fn lookup<'a>(&self, args: &'a Value) -> Option<&'a Value> {
        self.path.iter().try_fold(args, |v, k| v.get(k)).filter(|v| !v.is_null())
    }
}

fn is_token(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// The `x-mcp-header` annotations of a tool's `inputSchema`, checked against
/// the spec's rules (an HTTP token, on a string, integer or boolean property,
/// each name once, case-insensitively). `Err` says which rule broke.
pub fn param_headers(input_schema: &Value) -> Result<Vec<ParamHeader>, String> {
    let mut out = Vec::new();
    collect(input_schema, &mut Vec::new(), &mut out)?;
    Ok(out)
}

fn collect(schema: &Value, path: &mut Vec<String>, out: &mut Vec<ParamHeader>) -> Result<(), String> {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(());
    };
    for (name, prop) in props {
        path.push(name.clone());
        if let Some(h) = prop.get("x-mcp-header") {
            let h =
                h.as_str().filter(|h| is_token(h)).ok_or_else(|| format!("property {name:?}: not an HTTP token"))?;
            let ty = prop.get("type").and_then(Value::as_str);
            if !matches!(ty, Some("string" | "integer" | "boolean")) {
                return Err(format!("property {name:?}: only string, integer or boolean properties can be mirrored"));
            }
            if out.iter().any(|p| p.header.eq_ignore_ascii_case(h)) {
                return Err(format!("{h:?} used twice"));
            }
            out.push(ParamHeader { header: h.to_owned(), path: path.clone() });
        }
        collect(prop, path, out)?;
        path.pop();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sentinel_decoding() {
        assert_eq!(decode_value("=?base64?SGVsbG8=?=").unwrap(), "Hello");
        assert!(decode_value("=?base64?SGVsbG8?=").is_err());
        assert!(decode_value("=?base64?SGVs!!!bG8=?=").is_err());
        assert_eq!(decode_value("=?base64?SGVsbG8=").unwrap(), "=?base64?SGVsbG8=");
        assert_eq!(decode_value("=?BASE64?SGVsbG8=?=").unwrap(), "=?BASE64?SGVsbG8=?=");
        assert_eq!(decode_value("SGVsbG8=").unwrap(), "SGVsbG8=");
    }

    #[test]
    fn encode_then_decode_is_identity() {
        for s in ["plain", "with space", " lead", "trail ", "héllo", "tab\there", "=?base64?x?=", "", "日本"] {
            let e = encode_value(s);
            assert!(e.bytes().all(|b| (0x20..0x7f).contains(&b)), "{e}");
            assert_eq!(decode_value(&e).unwrap(), s, "{s:?}");
        }
        assert_eq!(encode_value("abc"), "abc");
    }

    #[test]
    fn numeric_and_boolean_params() {
        assert!(value_matches("42", &json!(42)));
        assert!(value_matches("42.0", &json!(42)));
        assert!(!value_matches("43", &json!(42)));
        assert!(value_matches("true", &json!(true)));
        assert!(!value_matches("True", &json!(true)));
        assert_eq!(param_value(&json!(7)).unwrap(), "7");
        assert_eq!(param_value(&json!(null)), None);
    }

    #[test]
    fn names_and_params() {
        let p = json!({"name": "t", "uri": "u", "taskId": "id"});
        let p = p.as_object().unwrap();
        assert_eq!(mirrored_name(TOOLS_CALL, p), Some("t"));
        assert_eq!(mirrored_name(RESOURCES_READ, p), Some("u"));
        assert_eq!(mirrored_name(TASKS_UPDATE, p), Some("id"));
        assert_eq!(mirrored_name("tools/list", p), None);
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "nested": {"type": "object", "properties": {"n": {"type": "integer", "x-mcp-header": "N"}}}
        }});
        let h = param_headers(&schema).unwrap();
        assert_eq!(h.len(), 2);
        assert_eq!(h[0].lookup(&json!({"nested": {"n": 3}})), Some(&json!(3)));
        assert!(param_headers(&json!({"properties": {"a": {"type": "array", "x-mcp-header": "A"}}})).is_err());
        assert!(param_headers(&json!({"properties": {"a": {"type": "string", "x-mcp-header": "a b"}}})).is_err());
    }
}
