//! A `bench-server` child with the flags a capability benchmark needs, killed
//! when dropped, and the requests those benchmarks send it by hand: the admin
//! route that completes tasks, requests carrying an `Authorization` header,
//! and a batch of task creates.

use crate::child::Listening;
use crate::client::Conn;
use crate::load::{self, Load};
use crate::wire;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

/// The `_meta` of a 2026-07-28 request declaring Tasks and Events.
const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"conduit-mcp-bench","version":"0.1.0"},"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{},"io.modelcontextprotocol/events":{}}}}"#;

/// A 2026-07-28 request of `method` (id `id`, `params` without their
/// braces, `_meta` added) naming `name` in its `Mcp-Name` header.
pub(super) fn call(method: &'static str, name: &str, id: u64, params: &str) -> wire::Call {
    let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{{params},"_meta":{META}}}}}"#);
    wire::Call { method, name: Some(name.to_owned()), body }
}

/// A running bench server.
pub(super) struct Node {
    _server: Listening,
    /// Where it listens.
    pub(super) addr: SocketAddr,
}

impl Node {
    /// Starts `program --listen 127.0.0.1:0 ARGS…` and reads its address.
    pub(super) fn start(program: &Path, args: &[String]) -> Result<Self, String> {
        let mut cmd = Command::new(program);
        cmd.args(["--listen", "127.0.0.1:0"]).args(args);
        let server = Listening::spawn(cmd, "bench-server", Duration::from_secs(30))?;
        Ok(Self { addr: server.addr, _server: server })
    }

    /// The MCP endpoint.
    pub(super) fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Its `Host` header value.
    pub(super) fn host(&self) -> String {
        self.addr.to_string()
    }

    /// Creates `n` `slow_compute` tasks (labelled `{tag}0`, `{tag}1`, …) on up
    /// to 8 connections, each request carrying the header line `header`;
    /// their ids, all `n` of them or an error.
    pub(super) async fn create_tasks(&self, n: usize, tag: &'static str, header: &str) -> Result<Vec<String>, String> {
        let (host, h) = (self.host(), header.to_owned());
        let create: load::Builder = Arc::new(move |i, out| {
            let args =
                format!(r#""name":"slow_compute","arguments":{{"seconds":{},"label":"{tag}{i}"}}"#, wire::TASK_SECONDS);
            request_with(out, &host, &call("tools/call", "slow_compute", i, &args), &[&h]);
        });
        let setup = Load {
            addr: self.addr,
            conns: n.clamp(1, 8),
            duration: None,
            max_requests: Some(n as u64),
            expect: b"\"taskId\"",
            collect_ids: true,
            pace: None,
        };
        let created = load::run(&setup, create).await.map_err(|e| e.to_string())?;
        if created.ids.len() != n {
            let why = created.first_error.unwrap_or_default();
            return Err(format!("{} created {} of {n} tasks: {why}", self.addr, created.ids.len()));
        }
        Ok(created.ids)
    }

    /// Asks the server to complete `ids` at once (it answers before completing them).
    pub(super) async fn complete(&self, conn: &mut Conn, ids: &[&str]) -> Result<(), String> {
        let body = serde_json::json!({ "taskIds": ids, "intervalUs": 0 }).to_string();
        let call = wire::Call { method: "bench/complete", name: None, body };
        let mut req = Vec::new();
        wire::http_request(&mut req, &self.host(), "/bench/complete", &call);
        match conn.roundtrip(&req).await.map_err(|e| e.to_string())? {
            200 => Ok(()),
            s => Err(format!("/bench/complete answered HTTP {s}: {}", String::from_utf8_lossy(conn.body()))),
        }
    }
}

/// `call` as an HTTP request to `/mcp` on `host` with the extra header lines
/// `headers` (each `Name: value`, without the line end).
pub(super) fn request_with(out: &mut Vec<u8>, host: &str, call: &wire::Call, headers: &[&str]) {
    wire::http_request(out, host, "/mcp", call);
    let Some(end) = wire::find(out, b"\r\n\r\n") else { return };
    let mut extra = Vec::new();
    for h in headers {
        extra.extend_from_slice(b"\r\n");
        extra.extend_from_slice(h.as_bytes());
    }
    out.splice(end..end, extra);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_headers_go_in_the_head() {
        let mut out = Vec::new();
        request_with(&mut out, "h", &wire::greet(1), &["Authorization: Bearer t", "DPoP: p"]);
        let text = String::from_utf8(out).expect("utf-8");
        let (head, body) = text.split_once("\r\n\r\n").expect("a head");
        assert!(head.ends_with("\r\nAuthorization: Bearer t\r\nDPoP: p"), "{head}");
        assert!(head.contains("Content-Length:"));
        assert_eq!(body, wire::greet(1).body);
    }
}
