//! Following a task by the Events extension's `task.status_changed` on an
//! `events/stream` of its own, where the server offers it and the listen
//! push did not take the task: each occurrence is only a hint (its payload
//! has the id, status, message and time), so the follower reads the whole
//! task with `tasks/get` on each one, and polls no more than its safety net
//! while the stream lives. A refused stream is remembered on the client so
//! its other followers do not ask again; when the stream ends the follower
//! polls.

use super::error::ClientError;
use super::event_stream::{EventStream, StreamEvent};
use super::events::EventQuery;
use super::tracker::Tracker;
use serde_json::{Map, Value, json};

/// The built-in event type a server announces task changes with.
pub(crate) const TASK_STATUS_CHANGED: &str = "task.status_changed";

/// Opens `task.status_changed` for task `id` (every status), waits for the
/// stream to be active, and returns it; `None` when the server does not
/// offer it (remembered) or the stream could not be opened.
pub(crate) async fn open(tracker: &Tracker, id: &str) -> Option<EventStream> {
    if !tracker.follows_by_events() {
        return None;
    }
    let arguments: Map<String, Value> = json!({
        "taskId": id,
        "statuses": ["working", "input_required", "completed", "failed", "cancelled"],
    })
    .as_object()
    .cloned()
    .unwrap_or_default();
    let query = EventQuery::new(TASK_STATUS_CHANGED).arguments(arguments);
    let mut stream = match EventStream::open(tracker.era().as_ref(), &query).await {
        Ok(s) => s,
        Err(ClientError::Rpc(e)) => {
            tracing::debug!(code = e.code, "task.status_changed is not offered on a push stream; polling");
            tracker.events_refused();
            return None;
        }
        Err(e) => {
            tracing::debug!("could not open task.status_changed: {e}; polling");
            return None;
        }
    };
    match stream.next().await {
        Some(Ok(StreamEvent::Active { .. })) => Some(stream),
        _ => None,
    }
}

/// Waits for the next occurrence on `stream`: `true` for one (read the
/// task), `false` when the stream ended (terminated, closed, or broken).
pub(crate) async fn next_change(stream: &mut EventStream) -> bool {
    loop {
        match stream.next().await {
            Some(Ok(StreamEvent::Event(_))) => return true,
            Some(Ok(StreamEvent::Terminated(e))) => {
                tracing::debug!(code = e.code, "task.status_changed stream terminated; polling");
                return false;
            }
            Some(Ok(_)) => continue,
            Some(Err(e)) => {
                tracing::debug!("task.status_changed stream broke: {e}; polling");
                return false;
            }
            None => return false,
        }
    }
}
