//! stdio: newline-delimited JSON-RPC on stdin/stdout, both eras.
//!
//! One message per line. Responses, request-scoped notifications, listen
//! traffic and (on a legacy process) server→client requests share stdout;
//! listen notifications carry their subscription id so the client can
//! demultiplex. The process is modern until a real `initialize` (one without
//! modern `_meta`) switches it to the legacy era, even after it answered
//! `server/discover`; the client's responses to server requests are then
//! matched to the request waiting for them. `notifications/cancelled` stops a
//! request (or ends a listen stream). An unknown or malformed message is
//! answered and the process keeps reading. On end of input the requests
//! already read finish (listen streams end at once; others get
//! [`EOF_GRACE`]), then the server returns. Nothing but MCP messages is
//! written to the output: log to stderr.

use crate::protocol::RpcError;
use crate::protocol::jsonrpc::{Incoming, Message, RequestId, parse_incoming};
use crate::protocol::methods::{CANCELLED, INITIALIZE, LISTEN};
use crate::server::{RequestEnv, Server, SessionSlot};
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc::unbounded_channel;
use tokio_util::sync::CancellationToken;

/// The longest line accepted (larger lines are answered with a parse error and skipped).
pub const MAX_LINE: usize = 4 * 1024 * 1024;

/// How long requests read before end of input may still run before they are cancelled.
pub const EOF_GRACE: Duration = Duration::from_secs(10);

/// Serves `server` on this process's stdin and stdout until stdin closes.
pub async fn serve(server: Server) -> std::io::Result<()> {
    serve_io(server, tokio::io::stdin(), tokio::io::stdout()).await
}

/// Requests in flight: their cancellation, and whether each is a listen stream.
type InFlight = Arc<Mutex<HashMap<RequestId, (CancellationToken, bool)>>>;

/// Serves `server` on any byte stream pair (a socket, a pipe, stdio).
pub async fn serve_io<R, W>(server: Server, reader: R, mut writer: W) -> std::io::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    server.start();
    let (tx, mut rx) = unbounded_channel::<Message>();
    let writer_task = tokio::spawn(async move {
        while let Some(msg) = rx.recv().await {
            let mut line = msg.to_json();
            line.push('\n');
            if writer.write_all(line.as_bytes()).await.is_err() || writer.flush().await.is_err() {
                break;
            }
        }
    });
    // The process's legacy session, once an `initialize` opens it.
    let slot = Arc::new(SessionSlot::local(tx.clone()));
    let in_flight: InFlight = Arc::default();
    let mut reader = BufReader::new(reader);
    let mut buf = Vec::new();
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        buf.clear();
        let n = AsyncReadExt::take(&mut reader, MAX_LINE as u64 + 1).read_until(b'\n', &mut buf).await?;
        if n == 0 {
            break;
        }
        if buf.len() > MAX_LINE && !buf.ends_with(b"\n") {
            // Skip the rest of an oversized line.
            let mut sink = Vec::new();
            reader.read_until(b'\n', &mut sink).await?;
            let _ = tx.send(Message::Error { id: None, error: RpcError::parse_error("line too long") });
            continue;
        }
        let line = buf.trim_ascii();
        if line.is_empty() {
            continue;
        }
        match parse_incoming(line) {
            Err((id, error)) => {
                let _ = tx.send(Message::Error { id, error });
            }
            Ok(Incoming::Response(r)) => match (slot.get(), r.id) {
                (Some(session), Some(id)) => {
                    if !session.deliver(&id, r.outcome) {
                        tracing::debug!("a response nobody waits for was ignored");
                    }
                }
                (_, id) => {
                    let _ = tx.send(Message::Error {
                        id,
                        error: RpcError::invalid_request("no request of this server awaits this response"),
                    });
                }
            },
            Ok(Incoming::Notification { method, params }) => {
                if method == CANCELLED {
                    let id = params.as_ref().and_then(|p| p.get("requestId")).and_then(RequestId::from_value);
                    if let Some(id) = id
                        && let Some((t, _)) = in_flight.lock().ok().and_then(|m| m.get(&id).cloned())
                    {
                        t.cancel();
                    }
                } else if let Some(session) = slot.get() {
                    server.handle_legacy_notification(&session, &method, params.as_ref()).await;
                }
            }
            Ok(Incoming::Request(req)) if req.method == INITIALIZE => {
                // In the read loop, not a task of its own: the messages read after it see
                // the session it opens, those read before it (a discover probe) do not.
                let env = RequestEnv::new(None, CancellationToken::new(), Some(tx.clone())).session(slot.clone());
                let _ = tx.send(server.handle_request(req, env).await);
            }
            Ok(Incoming::Request(req)) => {
                let cancel = CancellationToken::new();
                let is_listen = req.method == LISTEN;
                if let Ok(mut m) = in_flight.lock() {
                    m.insert(req.id.clone(), (cancel.clone(), is_listen));
                }
                // The era is the one in force when the request was read.
                let session = slot.get().is_some().then(|| slot.clone());
                let (server, tx, in_flight) = (server.clone(), tx.clone(), in_flight.clone());
                tasks.spawn(async move {
                    let id = req.id.clone();
                    let mut env = RequestEnv::new(None, cancel.clone(), Some(tx.clone()));
                    if let Some(slot) = session {
                        env = env.session(slot);
                    }
                    let msg = server.handle_request(req, env).await;
                    if let Ok(mut m) = in_flight.lock() {
                        m.remove(&id);
                    }
                    if cancel.is_cancelled() {
                        return; // the client cancelled: nothing more for this request
                    }
                    let _ = tx.send(msg);
                    if is_listen && server.shutdown_token().is_cancelled() {
                        let _ = tx.send(Message::notification(
                            CANCELLED,
                            json!({ "requestId": id.to_value(), "reason": "server shutting down" }),
                        ));
                    }
                });
            }
        }
    }
    // End of input: listen streams end now; the other requests read so far may finish.
    tracing::info!("end of input: finishing the requests already read");
    if let Ok(m) = in_flight.lock() {
        m.values().filter(|(_, listen)| *listen).for_each(|(t, _)| t.cancel());
    }
    let finished = tokio::time::timeout(EOF_GRACE, async { while tasks.join_next().await.is_some() {} }).await;
    if finished.is_err() {
        if let Ok(m) = in_flight.lock() {
            m.values().for_each(|(t, _)| t.cancel());
        }
        while tasks.join_next().await.is_some() {}
    }
    drop(slot);
    drop(tx);
    let _ = writer_task.await;
    Ok(())
}
