//! The SSE side of Streamable HTTP: a request's streamed answer, and the
//! `2025-11-25` session's own event stream (GET).
//!
//! A request's stream ends its wait as soon as it can no longer bring the
//! answer: an event over the size cap, or a close before the response, is
//! one error at once. On a legacy session a stream that closed after naming
//! an event id is resumed with `Last-Event-ID` (the spec's "SSE polling"),
//! again while each resumed stream names a new event id; the resuming GET
//! answers within the client's timeout or the wait ends. The `retry` a server
//! names is honoured between [`MIN_RETRY`] and the client's timeout.

use super::{Shared, is_sse, parse};
use crate::client::error::{ClientError, TransportError};
use crate::client::sanitize::{ERROR_EXCERPT, excerpt};
use crate::client::sse::SseReader;
use crate::client::wire::ReplyTx;
use crate::protocol::RequestId;
use crate::protocol::jsonrpc::Incoming;
use futures_util::StreamExt;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// The shortest wait before reconnecting that the client honours (`retry: 0` is not a storm).
pub(super) const MIN_RETRY: Duration = Duration::from_millis(500);
/// The wait before reconnecting when the server names no `retry`.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// The longest wait between reconnects of the session's event stream when
/// they keep bringing nothing (the wait doubles each time until then).
const MAX_QUIET_BACKOFF: Duration = Duration::from_secs(30);

/// How long to wait before reconnecting after `reader`'s stream closed: its
/// `retry`, at least [`MIN_RETRY`], at most the client's `timeout`.
fn retry_after(reader: &SseReader, timeout: Duration) -> Duration {
    reader.retry_ms.map_or(DEFAULT_RETRY, Duration::from_millis).clamp(MIN_RETRY, timeout.max(MIN_RETRY))
}

/// A fresh reader that goes on where `old` stopped (its last event id and `retry`).
fn continued(old: &SseReader, sh: &Shared) -> SseReader {
    let mut next = SseReader::new(sh.opts.max_line, sh.opts.max_message);
    next.last_id.clone_from(&old.last_id);
    next.retry_ms = old.retry_ms;
    next
}

/// Opens the legacy event stream (GET), resuming after `last_id` when given.
pub(super) async fn open_get(
    sh: &Shared,
    version: &str,
    last_id: Option<&str>,
) -> Result<reqwest::Response, ClientError> {
    let build = || {
        let rb = sh.request(reqwest::Method::GET, version).header("accept", "text/event-stream");
        match last_id {
            Some(id) => rb.header("last-event-id", id),
            None => rb,
        }
    };
    let resp = sh.send_authorized(build).await?;
    let status = resp.status().as_u16();
    if status == 401 || status == 403 {
        return Err(sh.credential.refused(status));
    }
    if !resp.status().is_success() || !is_sse(&resp) {
        return Err(ClientError::Transport(TransportError::http(
            status,
            format!("the server answered the GET with HTTP {status}, not an event stream"),
        )));
    }
    Ok(resp)
}

/// What a legacy request's stream needs to resume, and to leave the
/// session's table of pending requests when it ends.
pub(super) struct Resume {
    shared: Weak<Shared>,
    version: String,
    id: RequestId,
}

impl Resume {
    pub(super) fn new(sh: &Arc<Shared>, version: &str, id: RequestId) -> Self {
        Self { shared: Arc::downgrade(sh), version: version.to_owned(), id }
    }
}

impl Drop for Resume {
    fn drop(&mut self) {
        if let Some(s) = self.shared.upgrade() {
            s.pending.lock().unwrap_or_else(|p| p.into_inner()).remove(&self.id);
        }
    }
}

/// How one stream of a request ended.
enum Ended {
    /// The response came, or nobody waits for it any more.
    Done,
    /// The stream cannot go on (a limit): why.
    Failed(String),
    /// It closed before the response; why, when something went wrong on the way.
    Closed(Option<String>),
}

/// Reads a request's SSE answer into `tx`, resuming it on a legacy session
/// (see the module docs). `id` is the request's: a response for another
/// request is handed to the session's table (legacy) or skipped.
pub(super) async fn read_request_stream(
    resp: reqwest::Response,
    tx: ReplyTx,
    mut reader: SseReader,
    id: RequestId,
    resume: Option<Resume>,
) {
    let mut resp = resp;
    let mut resumed_after: Option<String> = None;
    loop {
        let shared = resume.as_ref().map(|r| &r.shared);
        let why = match read_one(resp, &tx, &mut reader, &id, shared).await {
            Ended::Done => return,
            Ended::Failed(why) => return tx.fail(why),
            Ended::Closed(why) => why,
        };
        let (Some(r), Some(last)) = (&resume, reader.last_id.clone()) else {
            if let Some(why) = why {
                tx.fail(why);
            }
            return;
        };
        let shown = excerpt(&last, ERROR_EXCERPT).into_owned();
        if resumed_after.as_ref() == Some(&last) {
            return tx.fail(format!(
                "the server closed the stream again without the answer, resumed with Last-Event-ID {shown}"
            ));
        }
        let Some(sh) = r.shared.upgrade() else { return };
        let wait = retry_after(&reader, sh.opts.timeout);
        drop(sh);
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = tx.closed() => return,
        }
        let Some(sh) = r.shared.upgrade() else { return };
        match open_get(&sh, &r.version, Some(&last)).await {
            Ok(next) => {
                reader = continued(&reader, &sh);
                resp = next;
                resumed_after = Some(last);
            }
            Err(e) => return tx.fail(format!("resuming with Last-Event-ID {shown}: {e}")),
        }
    }
}

/// Reads one stream of a request until its response, a limit, or its end.
async fn read_one(
    resp: reqwest::Response,
    tx: &ReplyTx,
    reader: &mut SseReader,
    id: &RequestId,
    shared: Option<&Weak<Shared>>,
) -> Ended {
    let mut body = resp.bytes_stream();
    let mut unreadable = None;
    loop {
        let chunk = tokio::select! {
            c = body.next() => c,
            () = tx.closed() => return Ended::Done,
        };
        let chunk = match chunk {
            Some(Ok(chunk)) => chunk,
            Some(Err(e)) => return Ended::Closed(Some(format!("the connection broke before the answer: {e}"))),
            None => break,
        };
        let events = match reader.feed(&chunk) {
            Ok(events) => events,
            Err(why) => return Ended::Failed(why),
        };
        for data in events {
            if data.trim().is_empty() {
                continue;
            }
            let msg = match parse(data.as_bytes()) {
                Ok(msg) => msg,
                Err(e) => {
                    tracing::debug!("skipping an unreadable SSE event: {e}");
                    unreadable = Some(e.to_string());
                    continue;
                }
            };
            if let Incoming::Response(r) = &msg {
                if r.id.as_ref().is_some_and(|other| other != id) {
                    if let Some(s) = shared.and_then(Weak::upgrade) {
                        s.route(msg);
                    }
                    continue;
                }
                let _ = tx.send(msg);
                return Ended::Done;
            }
            // Waits while the reader is behind: the socket is not read meanwhile.
            if tx.send_held(msg, data.len()).await.is_err() {
                return Ended::Done;
            }
        }
    }
    Ended::Closed(
        unreadable.map(|e| format!("the server closed the stream without the answer after an unreadable event ({e})")),
    )
}

/// Reads the legacy event stream, reconnecting after `retry` (with
/// `Last-Event-ID`) while the client lives and the server lets it; streams
/// that bring no message make the wait double, up to [`MAX_QUIET_BACKOFF`].
pub(super) async fn events(sh: Weak<Shared>, mut resp: reqwest::Response, mut reader: SseReader, version: String) {
    let mut quiet = 0u32;
    loop {
        let mut body = resp.bytes_stream();
        let mut brought = false;
        while let Some(Ok(chunk)) = body.next().await {
            let Some(s) = sh.upgrade() else { return };
            let events = match reader.feed(&chunk) {
                Ok(events) => events,
                Err(why) => {
                    tracing::warn!("closing the server's event stream: {why}");
                    return;
                }
            };
            for data in events.iter().filter(|d| !d.trim().is_empty()) {
                brought = true;
                if let Ok(msg) = parse(data.as_bytes()) {
                    s.route(msg);
                }
            }
        }
        quiet = if brought { 0 } else { quiet.saturating_add(1) };
        let Some(s) = sh.upgrade() else { return };
        let base = retry_after(&reader, s.opts.timeout);
        let wait = base.saturating_mul(1 << quiet.saturating_sub(1).min(16)).min(MAX_QUIET_BACKOFF.max(base));
        drop(s);
        tokio::time::sleep(wait).await;
        let Some(s) = sh.upgrade() else { return };
        match open_get(&s, &version, reader.last_id.clone().as_deref()).await {
            Ok(r) => {
                reader = continued(&reader, &s);
                resp = r;
            }
            Err(e) => {
                tracing::debug!("the server's event stream ended: {e}");
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_is_floored_and_capped_by_the_timeout() {
        let mut r = SseReader::new(64, 64);
        let timeout = Duration::from_secs(5);
        assert_eq!(retry_after(&r, timeout), DEFAULT_RETRY);
        r.retry_ms = Some(0);
        assert_eq!(retry_after(&r, timeout), MIN_RETRY);
        r.retry_ms = Some(3_600_000);
        assert_eq!(retry_after(&r, timeout), timeout);
        assert_eq!(retry_after(&r, Duration::from_millis(1)), MIN_RETRY);
    }
}
