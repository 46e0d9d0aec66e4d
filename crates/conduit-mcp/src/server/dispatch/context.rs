//! A request's context ([`CtxInner`]), built in one place for both eras: what
//! the pipeline read from the request, beside what its transport knows.

use super::env::RequestEnv;
use crate::ctx::CtxInner;
use crate::protocol::jsonrpc::RequestId;
use crate::protocol::meta::{ClientCapabilities, PROGRESS_TOKEN_KEY};
use crate::protocol::version::Era;
use crate::server::Server;
use crate::session::{Asking, LegacySession};
use serde_json::{Map, Value};
use std::sync::Arc;

/// What the pipeline read from a request (on 2025-11-25, from its session too).
pub(super) struct Read {
    pub(super) id: RequestId,
    pub(super) method: String,
    pub(super) era: Era,
    pub(super) caps: ClientCapabilities,
    pub(super) log_level: Option<String>,
    pub(super) meta: Map<String, Value>,
    /// 2025-11-25: the session, through which the server can ask the client.
    pub(super) session: Option<(Arc<LegacySession>, Asking)>,
}

/// The context a handler reads: `read` from the request, the caller, its
/// cancellation and its outlets from the transport's `env`.
pub(super) fn context(server: &Server, read: Read, env: RequestEnv) -> CtxInner {
    let Read { id, method, era, caps, log_level, meta, session } = read;
    let progress_token = meta.get(PROGRESS_TOKEN_KEY).filter(|t| t.is_string() || t.is_i64() || t.is_u64()).cloned();
    CtxInner {
        request_id: id,
        method,
        era,
        principal: env.principal,
        client: env.client,
        caps,
        progress_token,
        log_level,
        meta,
        cancel: env.cancel,
        out: env.out,
        input_responses: None,
        request_state: None,
        changes: server.inner.changes.clone(),
        close_stream: env.close_stream,
        backlog: env.backlog,
        task_params: None,
        session,
    }
}
