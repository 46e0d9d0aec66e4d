//! JSON-RPC calls to the reference server over one keep-alive connection, with
//! the `2026-07-28` headers and `_meta`, answers parsed into [`Reply`].

use crate::client::Conn;
use crate::wire::{self, Call};
use serde_json::{Value, json};
use std::net::SocketAddr;

/// `_meta` declaring the Tasks extension and form elicitation (the demo `deploy` asks for a confirmation).
pub fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": wire::PROTOCOL_VERSION,
        "io.modelcontextprotocol/clientInfo": { "name": "conduit-mcp-soak", "version": "0.1.0" },
        "io.modelcontextprotocol/clientCapabilities": {
            "elicitation": { "form": {} },
            "extensions": { (wire::TASKS_EXTENSION): {} }
        }
    })
}

/// The request `method` with `params` (its `_meta` added) and `Mcp-Name`.
pub fn call(id: u64, method: &'static str, name: Option<&str>, mut params: Value) -> Call {
    params["_meta"] = meta();
    let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string();
    Call { method, name: name.map(str::to_owned), body }
}

/// `tools/call TOOL` with `arguments`.
pub fn tool(id: u64, tool: &str, arguments: Value) -> Call {
    call(id, "tools/call", Some(tool), json!({ "name": tool, "arguments": arguments }))
}

/// `tasks/get`, `tasks/cancel` (any `tasks/*` without more parameters) on `task`.
pub fn on_task(id: u64, method: &'static str, task: &str) -> Call {
    call(id, method, Some(task), json!({ "taskId": task }))
}

/// `subscriptions/listen` naming `tasks`.
pub fn listen(id: u64, tasks: &[String]) -> Call {
    call(id, "subscriptions/listen", None, json!({ "notifications": { "taskIds": tasks } }))
}

/// An HTTP response: its status and its JSON body (`Null` if not JSON).
#[derive(Debug, Clone)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// The body.
    pub json: Value,
}

impl Reply {
    /// `result`, if the answer is one.
    pub fn result(&self) -> Option<&Value> {
        (self.status == 200).then(|| self.json.get("result")).flatten()
    }

    /// The JSON-RPC error code, if the answer is an error.
    pub fn code(&self) -> Option<i64> {
        self.json.get("error").and_then(|e| e["code"].as_i64())
    }

    /// The JSON-RPC error message (empty when none).
    pub fn message(&self) -> &str {
        self.json.get("error").and_then(|e| e["message"].as_str()).unwrap_or_default()
    }

    /// A short description for error tallies: `HTTP 400 -32020 Mcp-Name …`.
    pub fn describe(&self) -> String {
        let msg: String = self.message().chars().take(80).collect();
        format!("HTTP {} {} {msg}", self.status, self.code().map(|c| c.to_string()).unwrap_or_default())
    }
}

/// A client on one connection, reconnected after a transport failure.
#[derive(Debug)]
pub struct Client {
    addr: SocketAddr,
    host: String,
    conn: Option<Conn>,
    next_id: u64,
    buf: Vec<u8>,
}

impl Client {
    /// A client of the server at `addr` (connects on first use).
    pub fn new(addr: SocketAddr) -> Self {
        Self { addr, host: addr.to_string(), conn: None, next_id: 1, buf: Vec::with_capacity(1024) }
    }

    /// A fresh JSON-RPC id.
    pub fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Sends `call` and reads the answer. A transport failure drops the connection
    /// (the next call reconnects) and is returned as the error text.
    pub async fn send(&mut self, call: &Call) -> Result<Reply, String> {
        if self.conn.is_none() {
            self.conn = Some(Conn::connect(self.addr).await.map_err(|e| format!("connect: {e}"))?);
        }
        wire::http_request(&mut self.buf, &self.host, "/mcp", call);
        let conn = self.conn.as_mut().ok_or("no connection")?;
        match conn.roundtrip(&self.buf).await {
            Ok(status) => {
                let json = serde_json::from_slice(conn.body()).unwrap_or(Value::Null);
                Ok(Reply { status, json })
            }
            Err(e) => {
                self.conn = None;
                Err(format!("transport: {e}"))
            }
        }
    }

    /// Opens a listen stream on a new connection of its own and reads its acknowledgement.
    pub async fn open_listen(&mut self, tasks: &[String]) -> Result<crate::client::SseStream, String> {
        let id = self.id();
        wire::http_request(&mut self.buf, &self.host, "/mcp", &listen(id, tasks));
        let conn = Conn::connect(self.addr).await.map_err(|e| format!("connect: {e}"))?;
        let mut s = conn.open_stream(&self.buf).await.map_err(|e| format!("listen: {e}"))?;
        match s.next_data().await {
            Ok(Some(ack)) if ack.contains("notifications/subscriptions/acknowledged") => Ok(s),
            Ok(other) => Err(format!("listen: expected the acknowledgement, got {other:?}")),
            Err(e) => Err(format!("listen: {e}")),
        }
    }

    /// Closes the connection.
    pub fn close(&mut self) {
        self.conn = None;
    }
}
