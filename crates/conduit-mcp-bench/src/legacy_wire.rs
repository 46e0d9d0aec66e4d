//! The requests of W8 and W9, on the 2025-11-25 wire: `initialize` (no `_meta`),
//! `notifications/initialized`, and `tools/call greet` inside the session, sent
//! with `Mcp-Session-Id` and `MCP-Protocol-Version: 2025-11-25`, the same bytes
//! to every server.

use std::fmt::Write as _;

/// The legacy revision on the wire.
pub const LEGACY_VERSION: &str = "2025-11-25";

/// `initialize` as a 2025-11-25 client sends it (no capabilities it would have to honour).
pub fn initialize(id: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"initialize","params":{{"protocolVersion":"{LEGACY_VERSION}","capabilities":{{}},"clientInfo":{{"name":"conduit-mcp-bench","version":"0.1.0"}}}}}}"#
    )
}

/// `notifications/initialized`.
pub fn initialized() -> String {
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned()
}

/// `tools/call greet` inside a session (W8): the W1 call without the modern `_meta`.
pub fn greet(id: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"greet","arguments":{{"name":"bench-{n}"}}}}}}"#,
        n = id % 1000
    )
}

/// Writes the whole HTTP/1.1 request for `body` to `out` (cleared first): inside `session`
/// when given (with its protocol version header), else the opening `initialize`.
pub fn http_request(out: &mut Vec<u8>, host: &str, session: Option<&str>, body: &str) {
    out.clear();
    let mut head = String::with_capacity(256);
    let _ = write!(
        head,
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
    );
    if let Some(s) = session {
        let _ = write!(head, "Mcp-Session-Id: {s}\r\nMCP-Protocol-Version: {LEGACY_VERSION}\r\n");
    }
    let _ = write!(head, "Content-Length: {}\r\n\r\n", body.len());
    out.extend_from_slice(head.as_bytes());
    out.extend_from_slice(body.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_legacy_json() {
        for body in [initialize(1), initialized(), greet(2)] {
            let v: serde_json::Value = serde_json::from_str(&body).expect("valid JSON");
            assert!(v["params"].get("_meta").is_none(), "{body}");
        }
        let mut out = Vec::new();
        http_request(&mut out, "h", Some("sid"), &greet(3));
        let text = String::from_utf8(out).expect("ascii");
        assert!(text.contains("Mcp-Session-Id: sid\r\nMCP-Protocol-Version: 2025-11-25\r\n"));
        let mut out = Vec::new();
        http_request(&mut out, "h", None, &initialize(0));
        assert!(!String::from_utf8(out).expect("ascii").contains("Mcp-Session-Id"));
    }
}
