//! Requests waiting on the client: how many a session and a client may have
//! at once, and when one stops waiting because nobody is left to answer it.
//!
//! A server→client request (`elicitation/create`, `sampling/createMessage`,
//! `roots/list`) keeps its call, its stream and its buffered events alive
//! until the client answers. A client that asks and leaves must not be able
//! to pile those up: each session may have `per_session` waiting, each client
//! (principal, or address) `per_client` over all its sessions on this node, and
//! a request whose stream has had no connection for `abandon_after` (the client
//! left and did not resume with `Last-Event-ID`) stops waiting at once instead
//! of at the end of its round timeout.
//!
//! Counts alone do not bound memory: a waiting request keeps what it needs to
//! resume (its params and `_meta`, up to the body limit each), so the bytes it
//! keeps count too, against `bytes_per_session` and `bytes_per_client`, and
//! against the node's ceiling on what all sessions retain ([`Retained`]).

use super::events::EventLog;
use super::retained::{Retained, Taken};
use crate::protocol::RpcError;
use crate::protocol::jsonrpc::{ErrorCode, RequestId};
use crate::quota::{Counts, Held};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;

/// Default cap on one session's requests waiting on the client.
pub const DEFAULT_WAITING_PER_SESSION: usize = 16;
/// Default cap on one client's requests waiting on it, over its sessions on a node.
pub const DEFAULT_WAITING_PER_CLIENT: usize = 64;
/// Default time a waiting request's stream may stay without a connection.
pub const DEFAULT_ABANDON_AFTER: Duration = Duration::from_secs(30);
/// Default cap on the bytes one session's waiting requests keep (one request at the
/// default HTTP body limit fits).
pub const DEFAULT_WAITING_BYTES_PER_SESSION: usize = 4 * 1024 * 1024;
/// Default cap on the bytes one client's waiting requests keep, over its sessions on a node.
pub const DEFAULT_WAITING_BYTES_PER_CLIENT: usize = 16 * 1024 * 1024;

/// What a waiting request holds besides the bytes it keeps to resume (its call, its
/// stream; about 70 KB measured by the soak), counted against the node's ceiling so that
/// the number of requests waiting on clients is bounded node-wide too.
pub(crate) const WAITING_OVERHEAD_BYTES: usize = 64 * 1024;

/// What a request that asks its client keeps while it waits: how long each answer is
/// awaited, and the bytes of the request it holds to resume (params and `_meta`, as JSON).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Asking {
    pub(crate) timeout: Duration,
    pub(crate) held_bytes: usize,
}

/// The bounds on waiting requests, shared by the sessions of a node.
#[derive(Debug)]
pub(crate) struct WaitPolicy {
    pub(crate) per_session: usize,
    pub(crate) per_client: usize,
    pub(crate) abandon_after: Duration,
    /// Bytes kept by one session's waiting requests at most.
    pub(crate) bytes_per_session: usize,
    /// Bytes kept by one client's waiting requests at most.
    pub(crate) bytes_per_client: usize,
    /// Requests waiting, per client key (a session record's `client_key`).
    pub(crate) counts: Counts<String>,
    /// Bytes kept by waiting requests, per client key.
    pub(crate) bytes: Counts<String>,
    /// The node's account of what all sessions retain (`None`: no ceiling).
    pub(crate) retained: Option<Arc<Retained>>,
}

/// A waiting request's place: one of its client's count, its bytes, and its bytes in the
/// node's account; all given back when it is dropped.
pub(crate) type Admitted = (Held<String>, Held<String>, Option<Taken>);

impl WaitPolicy {
    /// A stdio session's: one client, the session cap only.
    pub(crate) fn local() -> Self {
        Self {
            per_session: DEFAULT_WAITING_PER_SESSION,
            per_client: usize::MAX,
            abandon_after: DEFAULT_ABANDON_AFTER,
            bytes_per_session: DEFAULT_WAITING_BYTES_PER_SESSION,
            bytes_per_client: usize::MAX,
            counts: Counts::default(),
            bytes: Counts::default(),
            retained: None,
        }
    }

    /// A place for one more of `client`'s waiting requests, keeping `bytes`, or the refusal.
    pub(crate) fn admit(&self, client: &String, bytes: usize) -> Result<Admitted, RpcError> {
        let one = self.counts.hold(client, self.per_client, usize::MAX).map_err(|_| too_many("client"))?;
        let kept =
            self.bytes.hold_n(client, bytes, self.bytes_per_client, usize::MAX).map_err(|_| too_large("client"))?;
        let node = match &self.retained {
            Some(r) => Some(Taken::new(r, bytes.saturating_add(WAITING_OVERHEAD_BYTES)).ok_or_else(node_full)?),
            None => None,
        };
        Ok((one, kept, node))
    }
}

/// The refusal of a waiting request past the node's ceiling on retained bytes.
fn node_full() -> RpcError {
    RpcError::new(
        ErrorCode::Other(-32000),
        "This server's sessions retain all the bytes it allows (replay buffers, requests waiting \
         for clients' answers); try again later",
    )
}

/// The refusal of a waiting request whose bytes would pass the `whose` budget.
pub(crate) fn too_large(whose: &str) -> RpcError {
    RpcError::new(
        ErrorCode::Other(-32000),
        format!(
            "The requests of this {whose} waiting for the client's answers keep too many bytes; \
             answer or cancel them first, or send smaller requests"
        ),
    )
}

/// The refusal of one request too many waiting on the client.
pub(crate) fn too_many(whose: &str) -> RpcError {
    RpcError::new(
        ErrorCode::Other(-32000),
        format!("Too many requests of this {whose} are waiting for the client's answers; answer or cancel them first"),
    )
}

/// How a wait ended without an answer.
pub(crate) enum Gave {
    /// The round timeout passed.
    Timeout,
    /// The request's stream had no connection for `abandon_after`, twice in a row checked.
    Abandoned,
    /// The session ended.
    Ended,
}

/// Waits for the answer to request `id` at most `timeout`; gives up earlier once its
/// stream in `events` has had no connection at two checks `abandon_after` apart.
pub(crate) async fn wait_for(
    events: &EventLog,
    id: &RequestId,
    answer: oneshot::Receiver<Result<Value, RpcError>>,
    timeout: Duration,
    abandon_after: Duration,
) -> Result<Result<Value, RpcError>, Gave> {
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline, answer);
    let mut checks = tokio::time::interval(abandon_after.max(Duration::from_millis(1)));
    checks.tick().await;
    let mut detached_before = false;
    loop {
        tokio::select! {
            a = &mut answer => return a.map_err(|_| Gave::Ended),
            () = &mut deadline => return Err(Gave::Timeout),
            _ = checks.tick() => {
                let detached = events.ask_detached(id);
                if detached && detached_before {
                    return Err(Gave::Abandoned);
                }
                detached_before = detached;
            }
        }
    }
}
