//! The SSE response of a legacy (2025-11-25) session's stream: the events of
//! its [`EventLog`](crate::session::EventLog) connection, framed with their ids
//! (the priming event, with `retry`, first), keep-alive comments while idle,
//! and for a GET stream what ends it besides its client: carrying nothing for
//! [`listen_idle_timeout`](super::HttpConfig::listen_idle_timeout), or
//! credentials that no longer prove its principal (`stream_auth`). It holds
//! its slot under the stream caps (`stream_cap`) until it ends.
//!
//! While the response is open its session is in use: it is refreshed in the
//! store often enough that it is neither evicted nor expired.

use super::AppState;
use super::stream_auth::StreamCredentials;
use super::stream_cap::StreamSlot;
use crate::session::{Event as LogEvent, LegacySession, StreamOpen};
use axum::body::Body;
use axum::http::{HeaderValue, header};
use axum::response::Response;
use futures_util::stream;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::Instant;

/// How long a client waits before reconnecting to a closed stream (the SSE `retry` field).
const RETRY: Duration = Duration::from_millis(500);

/// What a GET stream holds and watches.
pub(super) struct GetStream {
    /// Its place under the stream caps, given back when it ends.
    _slot: StreamSlot,
    /// The credentials it was opened with, when they end.
    credentials: Option<StreamCredentials>,
    /// How long it may carry nothing.
    idle: Duration,
}

impl GetStream {
    /// A GET stream in `slot`, opened with `credentials`, ended after `idle` without a message.
    pub(super) fn new(slot: StreamSlot, credentials: Option<StreamCredentials>, idle: Duration) -> Self {
        Self { _slot: slot, credentials, idle }
    }
}

/// One open response: its connection, and what it watches.
struct Open {
    conn: UnboundedReceiver<LogEvent>,
    st: Arc<AppState>,
    session: Arc<LegacySession>,
    _open: StreamOpen,
    get: Option<(GetStream, Instant)>,
}

/// The SSE response of a request's stream (it ends with the request's answer).
pub(super) fn sse(st: &Arc<AppState>, session: &Arc<LegacySession>, conn: UnboundedReceiver<LogEvent>) -> Response {
    response(st, session, conn, None)
}

/// The SSE response of a GET stream (stand-alone, or resumed with `Last-Event-ID`).
pub(super) fn get_sse(
    st: &Arc<AppState>,
    session: &Arc<LegacySession>,
    conn: UnboundedReceiver<LogEvent>,
    get: GetStream,
) -> Response {
    response(st, session, conn, Some(get))
}

fn response(
    st: &Arc<AppState>,
    session: &Arc<LegacySession>,
    conn: UnboundedReceiver<LogEvent>,
    get: Option<GetStream>,
) -> Response {
    // Awake at least every keep-alive, and often enough to keep the session seen.
    let wake = st.config.keep_alive.min(st.server.inner.sessions.seen_every());
    let get = get.map(|g| {
        let quiet_until = Instant::now() + g.idle;
        (g, quiet_until)
    });
    let open = Open { conn, st: st.clone(), session: session.clone(), _open: StreamOpen::new(session), get };
    let frames = stream::unfold(open, move |mut open| async move {
        let frame = next_frame(&mut open, wake).await?;
        Some((Ok::<_, Infallible>(frame), open))
    });
    let mut r = Response::new(Body::from_stream(frames));
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

/// The next frame, or `None` when the stream ends. Framed here because the priming
/// event needs its empty `data:` line.
async fn next_frame(open: &mut Open, wake: Duration) -> Option<String> {
    let mut wait = wake;
    if let Some((g, quiet_until)) = &open.get {
        wait = wait.min(quiet_until.saturating_duration_since(Instant::now()));
        if let Some(c) = &g.credentials {
            wait = wait.min(c.check_in(wake));
        }
    }
    let got = tokio::time::timeout(wait, open.conn.recv()).await;
    if let Ok(None) = got {
        return None;
    }
    if let Some((g, quiet_until)) = &mut open.get {
        // Nothing more goes out once the credentials no longer hold; what this stream is
        // sent stays in the replay buffer for the client's next connection.
        if let Some(c) = &mut g.credentials
            && !c.hold().await
        {
            return None;
        }
        match &got {
            Err(_) if Instant::now() >= *quiet_until => {
                tracing::debug!("ending a GET stream that carried nothing for its idle timeout");
                return None;
            }
            Ok(Some((_, Some(_)))) => *quiet_until = Instant::now() + g.idle,
            _ => {}
        }
    }
    let frame = match got {
        Err(_) => ":\n\n".to_owned(),
        Ok(None) => return None,
        Ok(Some((id, None))) => format!("id: {id}\nretry: {}\ndata: \n\n", RETRY.as_millis()),
        Ok(Some((id, Some(m)))) => format!("event: message\nid: {id}\ndata: {}\n\n", m.to_json()),
    };
    open.st.server.inner.sessions.stream_alive(&open.session).await;
    Some(frame)
}
