//! A server run as a child process, newline-delimited JSON-RPC on its
//! stdin/stdout (its stderr is passed through). Responses are matched to
//! requests by id; notifications go to the request they belong to (a listen
//! stream by `subscriptionId`, progress by `progressToken`); requests the
//! server sends (legacy era) go to the client's input handler.

use super::error::ClientError;
use super::wire::{Outgoing, Replies, ReplyTx, Wire, replies};
use crate::protocol::RequestId;
use crate::protocol::jsonrpc::{Incoming, Request, parse_incoming};
use crate::protocol::meta::{PROGRESS_TOKEN_KEY, SUBSCRIPTION_ID_KEY};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

type Pending = Arc<Mutex<HashMap<RequestId, ReplyTx>>>;

/// The stdio side of a connection; the child is killed when this is dropped.
#[derive(Debug)]
pub(crate) struct StdioWire {
    out: mpsc::UnboundedSender<String>,
    pending: Pending,
    /// Lines written to the child.
    sent: AtomicU64,
    _child: Mutex<Child>,
}

impl StdioWire {
    /// Starts `program args...`; server requests are sent to `server_requests`.
    pub(crate) fn spawn(
        program: &str,
        args: &[String],
        server_requests: mpsc::UnboundedSender<Request>,
    ) -> Result<Self, ClientError> {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| ClientError::Transport(format!("cannot start {program}: {e}")))?;
        let mut stdin = child.stdin.take().ok_or_else(|| ClientError::Transport("no stdin".into()))?;
        let stdout = child.stdout.take().ok_or_else(|| ClientError::Transport("no stdout".into()))?;
        let (out, mut rx) = mpsc::unbounded_channel::<String>();
        tokio::spawn(async move {
            while let Some(line) = rx.recv().await {
                if stdin.write_all(line.as_bytes()).await.is_err() || stdin.write_all(b"\n").await.is_err() {
                    return;
                }
                let _ = stdin.flush().await;
            }
        });
        let pending: Pending = Arc::default();
        tokio::spawn(read_loop(BufReader::new(stdout), pending.clone(), out.clone(), server_requests));
        Ok(Self { out, pending, sent: AtomicU64::new(0), _child: Mutex::new(child) })
    }
}

/// Which pending request a notification belongs to.
fn owner(params: Option<&Value>) -> Option<RequestId> {
    let meta = params?.get("_meta");
    if let Some(id) = meta.and_then(|m| m.get(SUBSCRIPTION_ID_KEY)) {
        return RequestId::from_value(id);
    }
    params?.get(PROGRESS_TOKEN_KEY).and_then(RequestId::from_value)
}

async fn read_loop(
    stdout: BufReader<tokio::process::ChildStdout>,
    pending: Pending,
    out: mpsc::UnboundedSender<String>,
    server_requests: mpsc::UnboundedSender<Request>,
) {
    let mut lines = stdout.lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if line.trim().is_empty() {
            continue;
        }
        let Ok(msg) = parse_incoming(line.as_bytes()) else {
            tracing::debug!("skipping an unreadable line from the server");
            continue;
        };
        let mut table = pending.lock().unwrap_or_else(|p| p.into_inner());
        match msg {
            Incoming::Response(r) => {
                if let Some(tx) = r.id.as_ref().and_then(|id| table.remove(id)) {
                    let _ = tx.send(Incoming::Response(r));
                }
            }
            Incoming::Notification { method, params } => {
                let Some(id) = owner(params.as_ref()) else { continue };
                if let Some(tx) = table.get(&id)
                    && tx.send(Incoming::Notification { method, params }).is_err()
                {
                    // Nobody reads this request any more: cancel it (a listen ends).
                    table.remove(&id);
                    let note = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
                                       "params": { "requestId": id.to_value() } });
                    let _ = out.send(note.to_string());
                }
            }
            Incoming::Request(req) => {
                let _ = server_requests.send(req);
            }
        }
    }
    // The child closed stdout: every waiting request sees its stream end.
    pending.lock().unwrap_or_else(|p| p.into_inner()).clear();
}

#[async_trait::async_trait]
impl Wire for StdioWire {
    async fn send(&self, req: Outgoing) -> Result<Replies, ClientError> {
        let (tx, rx) = replies();
        self.pending.lock().unwrap_or_else(|p| p.into_inner()).insert(req.id.clone(), tx);
        self.sent.fetch_add(1, Ordering::Relaxed);
        if self.out.send(req.to_value().to_string()).is_err() {
            self.pending.lock().unwrap_or_else(|p| p.into_inner()).remove(&req.id);
            return Err(ClientError::Transport("the server process has exited".into()));
        }
        Ok(rx)
    }

    async fn post(&self, message: Value, _version: &str) -> Result<(), ClientError> {
        self.sent.fetch_add(1, Ordering::Relaxed);
        self.out.send(message.to_string()).map_err(|_| ClientError::Transport("the server process has exited".into()))
    }

    fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }
}
