//! One POST: the guard, authentication, the body, then the request through
//! the server, answered as JSON or, when notifications come first, as SSE.

use super::AppState;
use super::admit::{Admitted, admit};
use super::headers::McpHeaders;
use super::legacy_lane::{legacy_request, legacy_response, session_of};
use super::status::{error_response, json_body, json_bytes};
use super::stream_auth::StreamCredentials;
use crate::protocol::jsonrpc::{Incoming, Message, RpcError, parse_incoming};
use crate::protocol::legacy_session::SESSION_ID_HEADER;
use crate::protocol::methods::LISTEN;
use crate::quota::Backlog;
use crate::server::{Answer, RequestEnv, SessionSlot};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::stream;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::unbounded_channel;
use tokio_util::sync::CancellationToken;

/// Answers one POST.
pub(super) async fn handle_post(State(st): State<Arc<AppState>>, request: axum::extract::Request) -> Response {
    // The request's own header map, not a copy (the `HeaderMap` extractor clones it).
    let (parts, body) = request.into_parts();
    let cfg = &st.config;
    let Admitted { principal, client } = match admit(&st, &parts).await {
        Ok(a) => a,
        Err(refused) => return refused,
    };
    let headers: HeaderMap = parts.headers;
    // A legacy session named by `Mcp-Session-Id` (404 when unknown, expired or another's).
    let session = match session_of(&st, &headers, principal.as_ref()).await {
        Ok(s) => s,
        Err(refused) => return refused,
    };
    // Content type.
    let is_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if !is_json {
        return error_response(cfg, None, RpcError::parse_error("Content-Type must be application/json"));
    }
    let bytes: Bytes = match axum::body::to_bytes(body, cfg.body_limit).await {
        Ok(b) => b,
        Err(e) if super::body::is_timeout(&e) => {
            let mut r = error_response(cfg, None, RpcError::invalid_request(e.to_string()));
            *r.status_mut() = StatusCode::REQUEST_TIMEOUT;
            return r;
        }
        Err(_) => {
            let mut r =
                error_response(cfg, None, RpcError::invalid_request(format!("body exceeds {} bytes", cfg.body_limit)));
            *r.status_mut() = StatusCode::PAYLOAD_TOO_LARGE;
            return r;
        }
    };
    let parsed = parse_incoming(&bytes);
    // Requests (and bodies that are none) count against the client's rate; its answers do not.
    let counted = match &parsed {
        Ok(Incoming::Request(r)) => Some(Some(r.id.clone())),
        Err((id, _)) => Some(id.clone()),
        Ok(_) => None,
    };
    if let Some(id) = counted
        && let Some(refused) = super::throttle::refusal(&st, &client, id)
    {
        return refused;
    }
    let req = match (parsed, &session) {
        (Ok(Incoming::Request(r)), None) => r,
        (Ok(Incoming::Request(r)), Some(s)) => {
            return legacy_request(&st, s.clone(), Admitted { principal, client }, &headers, r).await;
        }
        (Ok(Incoming::Notification { method, params }), Some(s)) => {
            st.server.handle_legacy_notification(s, &method, params.as_ref()).await;
            return StatusCode::ACCEPTED.into_response();
        }
        (Ok(Incoming::Notification { .. }), None) => return StatusCode::ACCEPTED.into_response(),
        (Ok(Incoming::Response(r)), Some(s)) => return legacy_response(&st, s, principal.as_ref(), r),
        (Ok(Incoming::Response(r)), None) => {
            return error_response(cfg, r.id, RpcError::invalid_request("clients may not send responses"));
        }
        (Err((id, e)), _) => return error_response(cfg, id, e),
    };
    // A listen stream holds one of its client's slots until it ends, ends once idle, and
    // ends when its credentials stop proving its principal.
    let (slot_held, idle, mut credentials) = if req.method == LISTEN {
        match super::stream_cap::hold(&st, &client) {
            Ok(held) => {
                (Some(held), Some(cfg.listen_idle_timeout), StreamCredentials::of(cfg, &headers, principal.as_ref()))
            }
            Err(e) => return super::stream_cap::refused(cfg, Some(req.id), e),
        }
    } else {
        (None, None, None)
    };
    let keep_alive = cfg.keep_alive;
    let server = st.server.clone();
    let cancel = CancellationToken::new();
    let (tx, mut rx) = unbounded_channel::<Message>();
    // An `initialize` opens its session in this slot.
    let slot = Arc::new(SessionSlot::http(None));
    // What the handler queued and the connection has not taken yet (an event stream bounds it).
    let backlog = Arc::new(Backlog::new());
    let env = RequestEnv::admitted(principal, client, cancel.clone(), Some(tx))
        .headers(Box::new(McpHeaders::from_headers(&headers, cfg.require_task_name)))
        .session(slot.clone())
        .backlog(backlog.clone());
    // Run the handler in this task: most requests answer without notifications,
    // and then no task is spawned. If a notification comes first, the handler
    // moves to its own task and the answer becomes an SSE stream. Dropping this
    // future (the client went away) drops the handler too.
    let mut handler = Box::pin(async move { server.answer(req, env).await });
    // Declared after the handler so that, if this future is dropped, the token
    // fires before the handler is dropped (locals drop in reverse order).
    let guard = (cancel.clone().drop_guard(), slot_held);
    let first = tokio::select! {
        biased;
        msg = &mut handler => match rx.try_recv() {
            // Notifications were queued before the answer: stream them, then the answer.
            Ok(note) => {
                let (tx2, rx2) = unbounded_channel();
                let _ = tx2.send(note);
                while let Ok(m) = rx.try_recv() {
                    let _ = tx2.send(m);
                }
                let _ = tx2.send(msg.into_message(&st.server));
                rx = rx2;
                rx.recv().await.map(Answer::plain)
            }
            Err(_) => Some(msg),
        },
        note = rx.recv() => {
            let (tx2, rx2) = unbounded_channel();
            if let Some(n) = note {
                let _ = tx2.send(n);
            }
            let mut rx_old = std::mem::replace(&mut rx, rx2);
            let idle_cancel = cancel.clone();
            let stamper = st.server.clone();
            tokio::spawn(async move {
                // A listen stream that forwards nothing for `idle` is cancelled: its
                // handler then answers with the closing result, which ends the stream.
                let far = Duration::from_secs(365 * 24 * 3600);
                let idle_for = idle.unwrap_or(far);
                let quiet = tokio::time::sleep(idle_for);
                // Its credentials are checked at their limit, and at every keep-alive after.
                let recheck = tokio::time::sleep(credentials.as_ref().map_or(far, |c| c.check_in(keep_alive)));
                tokio::pin!(quiet, recheck);
                // Once they no longer hold, nothing but the closing result goes out.
                let mut lapsed = false;
                // Forward what the handler sends until it answers, then the answer.
                // (Anything sent after the answer is dropped: nothing follows a response.)
                loop {
                    tokio::select! {
                        biased;
                        m = rx_old.recv() => match m {
                            Some(m) => {
                                if lapsed || !still_held(&mut credentials).await {
                                    lapsed = true;
                                    idle_cancel.cancel();
                                    continue;
                                }
                                if tx2.send(m).is_err() {
                                    return; // the client went away: drop the handler
                                }
                                quiet.as_mut().reset(tokio::time::Instant::now() + idle_for);
                            }
                            None => {
                                let _ = tx2.send(handler.await.into_message(&stamper));
                                return;
                            }
                        },
                        answer = &mut handler => {
                            if !lapsed && still_held(&mut credentials).await {
                                while let Ok(m) = rx_old.try_recv() {
                                    let _ = tx2.send(m);
                                }
                            }
                            let _ = tx2.send(answer.into_message(&stamper));
                            return;
                        }
                        () = &mut quiet, if idle.is_some() => {
                            tracing::debug!("ending a listen stream that carried nothing for its idle timeout");
                            idle_cancel.cancel();
                            quiet.as_mut().reset(tokio::time::Instant::now() + far);
                        }
                        () = &mut recheck, if credentials.is_some() && !lapsed => {
                            if still_held(&mut credentials).await {
                                let next = credentials.as_ref().map_or(far, |c| c.check_in(keep_alive));
                                recheck.as_mut().reset(tokio::time::Instant::now() + next);
                            } else {
                                lapsed = true;
                                idle_cancel.cancel();
                            }
                        }
                    }
                }
            });
            rx.recv().await.map(Answer::plain)
        }
    };
    let Some(first) = first else {
        return error_response(cfg, None, RpcError::internal("request handler stopped"));
    };
    if first.is_response() {
        drop(guard);
        let mut r = if first.is_error() {
            match first.into_message(&st.server) {
                Message::Error { id, error } => error_response(cfg, id, error),
                m => json_body(StatusCode::OK, &m),
            }
        } else {
            json_bytes(StatusCode::OK, first.to_json_bytes(&st.server))
        };
        if let Some(opened) = slot.get()
            && let Ok(v) = HeaderValue::from_str(&opened.id())
        {
            r.headers_mut().insert(SESSION_ID_HEADER, v);
        }
        return r;
    }
    // Notifications came first: stream them, then the response, then end.
    let first = first.into_message(&st.server);
    let events = stream::unfold((Some(first), rx, false, Some(guard)), move |(pending, mut rx, done, guard)| {
        let backlog = backlog.clone();
        async move {
            if done {
                drop(guard);
                return None;
            }
            let msg = match pending {
                Some(m) => m,
                None => rx.recv().await?,
            };
            let end = msg.is_response();
            let text = msg.to_json();
            // The connection polls for the next frame only when it can write it.
            backlog.taken(text.len());
            Some((Ok::<_, Infallible>(Event::default().data(text)), (None, rx, end, guard)))
        }
    });
    let mut r = Sse::new(events).keep_alive(KeepAlive::new().interval(cfg.keep_alive)).into_response();
    r.headers_mut().insert("x-accel-buffering", HeaderValue::from_static("no"));
    r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

/// Whether a stream's credentials (if it has any that end) still prove its principal.
async fn still_held(credentials: &mut Option<StreamCredentials>) -> bool {
    match credentials {
        Some(c) => c.hold().await,
        None => true,
    }
}
