//! A fresh `bench-server` child on the memory store, killed when dropped,
//! and its admin route `POST /bench/complete`.

use crate::child::Listening;
use crate::client::Conn;
use crate::wire;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// A running bench server.
pub(super) struct BenchServer {
    _server: Listening,
    /// Its process id.
    pub(super) pid: u32,
    /// Where it listens.
    pub(super) addr: SocketAddr,
}

impl BenchServer {
    /// Starts `program --listen 127.0.0.1:0 --store memory` and reads its address.
    pub(super) fn start(program: &Path) -> Result<Self, String> {
        let mut cmd = Command::new(program);
        cmd.args(["--listen", "127.0.0.1:0", "--store", "memory"]);
        let server = Listening::spawn(cmd, "bench-server", Duration::from_secs(20))?;
        Ok(Self { pid: server.pid, addr: server.addr, _server: server })
    }

    /// The MCP endpoint.
    pub(super) fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Asks the server to complete `ids` one by one, `interval_us` apart (it answers at once).
    pub(super) async fn complete(&self, ids: &[String], interval_us: u64) -> Result<(), String> {
        let body = serde_json::json!({ "taskIds": ids, "intervalUs": interval_us }).to_string();
        let call = wire::Call { method: "bench/complete", name: None, body };
        let mut req = Vec::new();
        wire::http_request(&mut req, &self.addr.to_string(), "/bench/complete", &call);
        let mut c = Conn::connect(self.addr).await.map_err(|e| e.to_string())?;
        match c.roundtrip(&req).await.map_err(|e| e.to_string())? {
            200 => Ok(()),
            s => Err(format!("/bench/complete answered HTTP {s}: {}", String::from_utf8_lossy(c.body()))),
        }
    }

    /// TCP connections to this server in the ESTABLISHED state, seen from the
    /// connecting side (`/proc/net/tcp`: remote port is the server's).
    pub(super) fn client_connections(&self) -> usize {
        let port = format!(":{:04X}", self.addr.port());
        let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
        table
            .lines()
            .skip(1)
            .filter(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                f.len() > 3 && f[2].ends_with(&port) && f[3] == "01"
            })
            .count()
    }
}
