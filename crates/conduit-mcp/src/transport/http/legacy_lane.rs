//! The legacy (2025-11-25) lane of Streamable HTTP: requests inside a session
//! (`Mcp-Session-Id`), the session's stand-alone GET stream, `DELETE`.
//!
//! A request answered on its first poll, with nothing sent before its answer, gets
//! plain JSON. Every other message of a session travels on one of its SSE streams
//! ([`EventLog`](crate::session::EventLog)): a priming event with `retry` first,
//! event ids on everything, replay after `Last-Event-ID`. Unlike the modern
//! lane, a request keeps running when its connection drops (only
//! `notifications/cancelled` stops it), and its answer waits in the buffer.
//! The streams' responses, and what ends a GET stream, are in `legacy_stream`.

use super::AppState;
use super::admit::{Admitted, admit};
use super::headers::McpHeaders;
use super::legacy_stream::{GetStream, get_sse, sse};
use super::status::json_body;
use super::stream_auth::StreamCredentials;
use crate::auth::Principal;
use crate::protocol::RpcError;
use crate::protocol::jsonrpc::{ErrorClass, ErrorCode, Message, Request, Response as RpcResponse};
use crate::protocol::legacy_session::SESSION_ID_HEADER;
use crate::protocol::version::Era;
use crate::server::{RequestEnv, SessionSlot};
use crate::session::{Event as LogEvent, LegacySession, Routed, SessionError};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::FutureExt;
use std::sync::Arc;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use tokio_util::sync::CancellationToken;

/// A 4xx with a JSON-RPC error body and no id.
fn refuse(status: StatusCode, code: ErrorCode, message: &str) -> Response {
    json_body(status, &Message::Error { id: None, error: RpcError::new(code, message) })
}

/// 404: the session is unknown, expired, ended, or another principal's (indistinguishable).
fn not_found() -> Response {
    refuse(StatusCode::NOT_FOUND, ErrorCode::Other(-32001), "Session not found")
}

/// The session `Mcp-Session-Id` names, when the legacy era is served; `Ok(None)` without the header.
pub(super) async fn session_of(
    st: &AppState,
    headers: &HeaderMap,
    principal: Option<&Principal>,
) -> Result<Option<Arc<LegacySession>>, Response> {
    let Some(raw) = headers.get(SESSION_ID_HEADER) else { return Ok(None) };
    if !st.server.serves(Era::Legacy) {
        return Ok(None);
    }
    let Ok(id) = raw.to_str() else { return Err(not_found()) };
    let owner = principal.map(|p| p.id());
    match st.server.inner.sessions.resolve(id.trim(), owner).await {
        Ok(s) => Ok(Some(s)),
        Err(SessionError::NotFound) => Err(not_found()),
        Err(e) => {
            tracing::warn!(error = %e, "session store failed");
            Err(refuse(StatusCode::SERVICE_UNAVAILABLE, ErrorCode::InternalError, "session store unavailable"))
        }
    }
}

/// A client's response POSTed into its session: handed to the request waiting for it, here
/// or (through the session relay) on the node that sent the request (202).
pub(super) fn legacy_response(
    st: &AppState,
    session: &LegacySession,
    principal: Option<&Principal>,
    r: RpcResponse,
) -> Response {
    let owner = principal.map(|p| p.id());
    match st.server.inner.sessions.route_response(session, owner, r.id, r.outcome) {
        Routed::Delivered | Routed::Forwarded => StatusCode::ACCEPTED.into_response(),
        Routed::NobodyWaits => refuse(
            StatusCode::BAD_REQUEST,
            ErrorCode::InvalidRequest,
            "No request of this session awaits this response",
        ),
        Routed::TooLarge(limit) => refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::InvalidRequest,
            &format!(
                "The response is larger than the {limit} bytes that can be forwarded to the node holding the call"
            ),
        ),
        Routed::RelayDown => {
            refuse(StatusCode::SERVICE_UNAVAILABLE, ErrorCode::InternalError, "response relay unavailable")
        }
    }
}

fn accepts_sse(headers: &HeaderMap) -> bool {
    headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).is_some_and(|v| v.contains("text/event-stream"))
}

/// A request inside a session: run detached from the connection; the answer is an SSE
/// stream (when the client accepts one) or the JSON response.
///
/// Most requests answer on their first poll without sending anything before the answer:
/// those get a plain JSON response at once, with no stream opened, no task spawned and
/// nothing buffered (there is no stream to resume). The others run in their own task and
/// answer on a request stream of the session's [`EventLog`](crate::session::EventLog).
pub(super) async fn legacy_request(
    st: &Arc<AppState>,
    session: Arc<LegacySession>,
    caller: Admitted,
    headers: &HeaderMap,
    req: Request,
) -> Response {
    let id = req.id.clone();
    let cancel = CancellationToken::new();
    let close = CancellationToken::new();
    session.track(id.clone(), cancel.clone());
    let (tx, mut rx) = unbounded_channel::<Message>();
    // Without an SSE stream nothing but the answer can reach the client: no outlet, so a
    // handler that needs to ask the client fails at once instead of waiting for an answer.
    let sse_ok = accepts_sse(headers);
    let env = RequestEnv::admitted(caller.principal, caller.client, cancel.clone(), sse_ok.then_some(tx))
        .headers(Box::new(McpHeaders::from_headers(headers, st.config.require_task_name)))
        .session(Arc::new(SessionSlot::http(Some(session.clone()))))
        .close_stream(close.clone());
    let server = st.server.clone();
    let mut handler = Box::pin(async move { server.handle_request(req, env).await });
    if let Some(answer) = (&mut handler).now_or_never() {
        session.untrack(&id);
        let sent_first = rx.try_recv().ok();
        if sent_first.is_none() && !close.is_cancelled() {
            return if cancel.is_cancelled() {
                StatusCode::ACCEPTED.into_response()
            } else {
                json_answer_now(&st.config, answer)
            };
        }
        // It sent something first, or closed its stream: the stream carries it all, as below.
        let (stream_id, conn) = session.events.open_request_stream();
        if close.is_cancelled() {
            session.events.detach(stream_id);
        }
        for m in sent_first.into_iter().chain(std::iter::from_fn(|| rx.try_recv().ok())) {
            session.events.send(stream_id, m);
        }
        if cancel.is_cancelled() {
            session.events.end(stream_id);
        } else {
            session.events.send(stream_id, answer);
        }
        return if sse_ok { sse(st, &session, conn) } else { json_answer(&st.config, conn).await };
    }
    let (stream_id, conn) = session.events.open_request_stream();
    let s = session.clone();
    tokio::spawn(async move {
        let (mut closed, mut drained) = (false, false);
        let answer = loop {
            tokio::select! {
                biased;
                m = rx.recv(), if !drained => match m {
                    Some(m) => s.events.send(stream_id, m),
                    None => drained = true, // no outlet (or it closed): only the answer remains
                },
                // Before the answer: a handler that closed its stream and then answered at once
                // still has its answer buffered for the reconnection, not sent on the old connection.
                _ = close.cancelled(), if !closed => {
                    closed = true;
                    s.events.detach(stream_id);
                }
                answer = &mut handler => break answer,
            }
        };
        while let Ok(m) = rx.try_recv() {
            s.events.send(stream_id, m);
        }
        if close.is_cancelled() && !closed {
            s.events.detach(stream_id);
        }
        s.untrack(&id);
        // A cancelled request gets no response; its stream ends all the same.
        if cancel.is_cancelled() {
            s.events.end(stream_id);
        } else {
            s.events.send(stream_id, answer);
        }
    });
    if sse_ok { sse(st, &session, conn) } else { json_answer(&st.config, conn).await }
}

/// A response as JSON: legacy clients read JSON-RPC errors from 200s; a request that is
/// invalid as such is a 400, and a missing scope is the modern era's 403 with its challenge
/// (both eras step up alike).
fn json_answer_now(cfg: &super::HttpConfig, m: Message) -> Response {
    let status = match m {
        Message::Error { id, error } if error.class() == ErrorClass::InsufficientScope => {
            return super::status::error_response(cfg, id, error);
        }
        Message::Error { ref error, .. } if error.class() == ErrorClass::InvalidRequest => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    };
    json_body(status, &m)
}

/// Waits for the response on a stream and answers it as JSON (what came before it is dropped).
async fn json_answer(cfg: &super::HttpConfig, mut conn: UnboundedReceiver<LogEvent>) -> Response {
    while let Some((_, m)) = conn.recv().await {
        if let Some(m) = m.filter(Message::is_response) {
            return json_answer_now(cfg, m);
        }
    }
    StatusCode::ACCEPTED.into_response()
}

/// A request admitted for GET or DELETE: its session, headers, principal and client key.
type SessionRequest = (Arc<LegacySession>, HeaderMap, Admitted);

/// What GET and DELETE both need first: the request admitted (authentication, Host) and its
/// legacy session resolved for that principal; outside a legacy session, 405 (the modern lane
/// has neither method).
async fn session_request(st: &AppState, request: axum::extract::Request) -> Result<SessionRequest, Response> {
    let parts = request.into_parts().0;
    let admitted = admit(st, &parts).await?;
    match session_of(st, &parts.headers, admitted.principal.as_ref()).await? {
        Some(session) => Ok((session, parts.headers, admitted)),
        None => Err(super::method_not_allowed().await),
    }
}

/// GET: the session's stand-alone stream, or with `Last-Event-ID` the rest of an earlier stream.
/// Outside a legacy session: 405 (the modern lane has no GET). Either counts against its
/// client's stream caps (429 with `Retry-After` past them), ends once it has carried nothing
/// for the idle timeout, and ends when its credentials stop proving its principal.
pub(super) async fn handle_get(State(st): State<Arc<AppState>>, request: axum::extract::Request) -> Response {
    let (session, headers, Admitted { principal, client }) = match session_request(&st, request).await {
        Ok(admitted) => admitted,
        Err(refused) => return refused,
    };
    if !accepts_sse(&headers) {
        return refuse(StatusCode::NOT_ACCEPTABLE, ErrorCode::InvalidRequest, "GET needs Accept: text/event-stream");
    }
    let slot = match super::stream_cap::hold(&st, &client) {
        Ok(slot) => slot,
        Err(e) => return super::stream_cap::refused(&st.config, None, e),
    };
    let credentials = StreamCredentials::of(&st.config, &headers, principal.as_ref());
    let resumed = headers.get("last-event-id").and_then(|v| v.to_str().ok()).and_then(|id| session.events.resume(id));
    let conn = resumed.unwrap_or_else(|| session.events.open_standalone());
    get_sse(&st, &session, conn, GetStream::new(slot, credentials, st.config.listen_idle_timeout))
}

/// DELETE: ends the session (204); 404 when it is unknown. Outside a legacy session: 405.
pub(super) async fn handle_delete(State(st): State<Arc<AppState>>, request: axum::extract::Request) -> Response {
    let (session, _, Admitted { principal, .. }) = match session_request(&st, request).await {
        Ok(admitted) => admitted,
        Err(refused) => return refused,
    };
    let owner = principal.as_ref().map(|p| p.id());
    match st.server.inner.sessions.close(&session.id(), owner).await {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(_) => not_found(),
    }
}
