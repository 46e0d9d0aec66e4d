//! The requests the load generator sends, byte for byte the same to all three servers.
//!
//! Every request is an HTTP/1.1 `POST /mcp` with the `2026-07-28` headers
//! (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` where the method has a name)
//! and a JSON-RPC body carrying the per-request `_meta`. Bodies are built per
//! request so the JSON-RPC id varies.

use std::fmt::Write as _;

/// The protocol revision on the wire.
pub const PROTOCOL_VERSION: &str = "2026-07-28";

/// The Tasks extension id a client declares in its capabilities.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// `_meta` for a request that does not declare the Tasks extension.
const META_PLAIN: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"conduit-mcp-bench","version":"0.1.0"},"io.modelcontextprotocol/clientCapabilities":{}}"#;

/// `_meta` for a request that declares the Tasks extension.
const META_TASKS: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"conduit-mcp-bench","version":"0.1.0"},"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}"#;

/// How long a benchmark task's work lasts: long enough that every task stays live.
pub const TASK_SECONDS: u32 = 3_600;

/// A JSON-RPC body and the routing headers that go with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// `Mcp-Method`.
    pub method: &'static str,
    /// `Mcp-Name`, when the method has one.
    pub name: Option<String>,
    /// The JSON body.
    pub body: String,
}

/// `tools/call greet` (W1): no extension declared, the fixture's synchronous tool.
pub fn greet(id: u64) -> Call {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"greet","arguments":{{"name":"bench-{n}"}},"_meta":{META_PLAIN}}}}}"#,
        n = id % 1000
    );
    Call { method: "tools/call", name: Some("greet".into()), body }
}

/// `tasks/get` on `task_id` (W2, W3), extension declared.
pub fn tasks_get(id: u64, task_id: &str) -> Call {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tasks/get","params":{{"taskId":"{task_id}","_meta":{META_TASKS}}}}}"#
    );
    Call { method: "tasks/get", name: Some(task_id.to_owned()), body }
}

/// `tools/call slow_compute` with the extension declared (W4): creates a task whose work
/// lasts [`TASK_SECONDS`].
pub fn create_task(id: u64) -> Call {
    create_with(id, "slow_compute", &format!(r#"{{"seconds":{TASK_SECONDS},"label":"w{id}"}}"#))
}

/// `tools/call TOOL` with `arguments` (a JSON object) and the extension declared: a
/// create on another server's task tool (the reference server's `job`).
pub fn create_with(id: u64, tool: &str, arguments: &str) -> Call {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments},"_meta":{META_TASKS}}}}}"#
    );
    Call { method: "tools/call", name: Some(tool.to_owned()), body }
}

/// `subscriptions/listen` naming `task_ids` (W5).
pub fn listen(id: &str, task_ids: &[String]) -> Call {
    let mut ids = String::new();
    for (i, t) in task_ids.iter().enumerate() {
        if i > 0 {
            ids.push(',');
        }
        let _ = write!(ids, "\"{t}\"");
    }
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":"{id}","method":"subscriptions/listen","params":{{"notifications":{{"taskIds":[{ids}]}},"_meta":{META_TASKS}}}}}"#
    );
    Call { method: "subscriptions/listen", name: None, body }
}

/// Writes the whole HTTP/1.1 request for `call` to `out` (cleared first).
pub fn http_request(out: &mut Vec<u8>, host: &str, path: &str, call: &Call) {
    out.clear();
    let mut head = String::with_capacity(256);
    let _ = write!(
        head,
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: {PROTOCOL_VERSION}\r\nMcp-Method: {}\r\n",
        call.method
    );
    if let Some(name) = &call.name {
        let _ = write!(head, "Mcp-Name: {name}\r\n");
    }
    let _ = write!(head, "Content-Length: {}\r\n\r\n", call.body.len());
    out.extend_from_slice(head.as_bytes());
    out.extend_from_slice(call.body.as_bytes());
}

/// The value of `"key":"…"` in a JSON text, found by a byte search (no parse).
pub fn find_str_field<'a>(json: &'a [u8], key: &str) -> Option<&'a str> {
    let pat = format!("\"{key}\":\"");
    let start = find(json, pat.as_bytes())? + pat.len();
    let len = json[start..].iter().position(|&b| b == b'"')?;
    std::str::from_utf8(&json[start..start + len]).ok()
}

/// The first position of `needle` in `hay`.
pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_json_with_the_meta() {
        for call in [greet(7), tasks_get(8, "abc"), create_task(9), listen("l-1", &["a".into(), "b".into()])] {
            let v: serde_json::Value = serde_json::from_str(&call.body).expect("valid JSON");
            assert_eq!(v["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"], PROTOCOL_VERSION);
            assert_eq!(v["method"], call.method);
        }
        let v: serde_json::Value = serde_json::from_str(&create_task(1).body).expect("json");
        assert!(
            v["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"][TASKS_EXTENSION]
                .is_object()
        );
    }

    #[test]
    fn request_head_carries_the_routing_headers() {
        let mut out = Vec::new();
        http_request(&mut out, "127.0.0.1:1", "/mcp", &tasks_get(1, "tid"));
        let text = String::from_utf8(out).expect("ascii");
        assert!(text.starts_with("POST /mcp HTTP/1.1\r\n"));
        assert!(text.contains("Mcp-Method: tasks/get\r\n") && text.contains("Mcp-Name: tid\r\n"));
        let body = text.split("\r\n\r\n").nth(1).expect("body");
        assert!(text.contains(&format!("Content-Length: {}\r\n", body.len())));
    }

    #[test]
    fn finds_fields_without_parsing() {
        let j = br#"{"result":{"taskId":"x-1","status":"working"}}"#;
        assert_eq!(find_str_field(j, "taskId"), Some("x-1"));
        assert_eq!(find_str_field(j, "nope"), None);
    }
}
