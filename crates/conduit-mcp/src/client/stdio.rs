//! A server run as a child process, newline-delimited JSON-RPC on its
//! stdin/stdout (its stderr is passed through). Responses are matched to
//! requests by id; notifications go to the request they belong to (a listen
//! stream by `subscriptionId`, progress by `progressToken`); requests the
//! server sends (legacy era) go to the client's input handler.
//!
//! A line longer than the message cap ends the connection: the child is
//! killed and every waiting request fails saying why, so a server that
//! writes without a newline cannot make the client hold more than the cap.

use super::error::{ClientError, TransportError};
use super::wire::{Outgoing, Replies, ReplyTx, Wire, replies};
use crate::protocol::RequestId;
use crate::protocol::jsonrpc::{Incoming, Request, parse_incoming};
use crate::protocol::meta::{PROGRESS_TOKEN_KEY, SUBSCRIPTION_ID_KEY};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

/// The requests waiting for an answer, and why the connection ended once it has.
#[derive(Debug, Default)]
struct Table {
    waiting: HashMap<RequestId, ReplyTx>,
    ended: Option<String>,
}

type Pending = Arc<Mutex<Table>>;

fn lock(p: &Pending) -> std::sync::MutexGuard<'_, Table> {
    p.lock().unwrap_or_else(|p| p.into_inner())
}

/// The stdio side of a connection; the child is killed when this is dropped.
#[derive(Debug)]
pub(crate) struct StdioWire {
    out: mpsc::UnboundedSender<String>,
    pending: Pending,
    /// Lines written to the child.
    sent: AtomicU64,
    _child: Arc<Mutex<Child>>,
}

impl StdioWire {
    /// Starts `program args...`; lines from it are at most `max_line` bytes;
    /// server requests are sent to `server_requests`.
    pub(crate) fn spawn(
        program: &str,
        args: &[String],
        max_line: usize,
        server_requests: mpsc::UnboundedSender<Request>,
    ) -> Result<Self, ClientError> {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                ClientError::Transport(TransportError::new(format!("cannot start {program}: {e}")).caused_by(e))
            })?;
        let mut stdin = child.stdin.take().ok_or_else(|| ClientError::transport("no stdin"))?;
        let stdout = child.stdout.take().ok_or_else(|| ClientError::transport("no stdout"))?;
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
        let child = Arc::new(Mutex::new(child));
        let reader = Reader { pending: pending.clone(), out: out.clone(), server_requests, max_line };
        tokio::spawn(reader.run(BufReader::new(stdout), Arc::clone(&child)));
        Ok(Self { out, pending, sent: AtomicU64::new(0), _child: child })
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

/// What reads the child's stdout.
struct Reader {
    pending: Pending,
    out: mpsc::UnboundedSender<String>,
    server_requests: mpsc::UnboundedSender<Request>,
    max_line: usize,
}

/// How reading one line went.
enum Line {
    /// A line (without its newline), possibly empty.
    Read,
    /// The child closed its stdout.
    End,
    /// The line is longer than the cap; nothing past the cap was read.
    TooLong,
}

impl Reader {
    async fn run(self, mut stdout: BufReader<tokio::process::ChildStdout>, child: Arc<Mutex<Child>>) {
        let mut buf = Vec::new();
        let why = loop {
            match self.read_line(&mut stdout, &mut buf).await {
                Line::Read => self.dispatch(&buf),
                Line::End => break None,
                Line::TooLong => {
                    // A hostile or broken server: stop it rather than read on.
                    let _ = child.lock().unwrap_or_else(|p| p.into_inner()).start_kill();
                    break Some(format!("the server wrote a line longer than the limit of {} bytes", self.max_line));
                }
            }
        };
        // Every waiting request sees its stream end (saying why), and later ones fail at once.
        let mut table = lock(&self.pending);
        for (_, tx) in table.waiting.drain() {
            if let Some(why) = &why {
                tx.fail(why.clone());
            }
        }
        table.ended = Some(why.unwrap_or_else(|| "the server process has exited".into()));
    }

    /// Reads one line into `buf`, holding at most `max_line` bytes of it.
    async fn read_line(&self, stdout: &mut BufReader<tokio::process::ChildStdout>, buf: &mut Vec<u8>) -> Line {
        buf.clear();
        let cap = self.max_line as u64 + 1;
        match AsyncReadExt::take(&mut *stdout, cap).read_until(b'\n', buf).await {
            Ok(0) | Err(_) => Line::End,
            Ok(_) if buf.last() == Some(&b'\n') => {
                buf.pop();
                Line::Read
            }
            Ok(_) if buf.len() > self.max_line => Line::TooLong,
            // The last line, without a newline: the child closed its stdout after it.
            Ok(_) => Line::Read,
        }
    }

    fn dispatch(&self, line: &[u8]) {
        if line.trim_ascii().is_empty() {
            return;
        }
        let Ok(msg) = parse_incoming(line) else {
            tracing::debug!("skipping an unreadable line from the server");
            return;
        };
        let mut table = lock(&self.pending);
        match msg {
            Incoming::Response(r) => {
                if let Some(tx) = r.id.as_ref().and_then(|id| table.waiting.remove(id)) {
                    let _ = tx.send(Incoming::Response(r));
                }
            }
            Incoming::Notification { method, params } => {
                let Some(id) = owner(params.as_ref()) else { return };
                if let Some(tx) = table.waiting.get(&id)
                    && tx.send(Incoming::Notification { method, params }).is_err()
                {
                    // Nobody reads this request any more: cancel it (a listen ends).
                    table.waiting.remove(&id);
                    let note = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
                                       "params": { "requestId": id.to_value() } });
                    let _ = self.out.send(note.to_string());
                }
            }
            Incoming::Request(req) => {
                let _ = self.server_requests.send(req);
            }
        }
    }
}

#[async_trait::async_trait]
impl Wire for StdioWire {
    async fn send(&self, req: Outgoing) -> Result<Replies, ClientError> {
        let (tx, rx) = replies();
        {
            let mut table = lock(&self.pending);
            if let Some(why) = &table.ended {
                return Err(ClientError::transport(why.clone()));
            }
            table.waiting.insert(req.id.clone(), tx);
        }
        self.sent.fetch_add(1, Ordering::Relaxed);
        if self.out.send(req.to_value().to_string()).is_err() {
            lock(&self.pending).waiting.remove(&req.id);
            return Err(ClientError::transport("the server process has exited"));
        }
        Ok(rx)
    }

    async fn post(&self, message: Value, _version: &str) -> Result<(), ClientError> {
        if let Some(why) = &lock(&self.pending).ended {
            return Err(ClientError::transport(why.clone()));
        }
        self.sent.fetch_add(1, Ordering::Relaxed);
        self.out.send(message.to_string()).map_err(|_| ClientError::transport("the server process has exited"))
    }

    fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }
}
