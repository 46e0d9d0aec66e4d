//! [`TaskEvents`] and the follower behind it: observe (listen push, the
//! Events extension's `task.status_changed` stream, or poll),
//! answer new input keys once, stop at a terminal status, the TTL deadline,
//! or a task stuck waiting; each change of status goes to the task ledger.
//!
//! Fresh and resumed handles ([`Client::unfinished`](super::Client::unfinished))
//! share this one follower: a server's task status events, once the client
//! reads them, belong here, beside the listen push, so both kinds of
//! handle follow them.

use super::error::ClientError;
use super::event_hub::EventFeed;
use super::input;
use super::listen_hub::Subscription;
use super::outcome::{TaskEvent, ToolOutcome};
use super::time::parse_rfc3339_ms;
use super::tracker::Tracker;
use crate::protocol::mrtr::InputRequest;
use crate::protocol::tasks::{DetailedTask, TaskStatus};
use serde_json::Map;
use std::collections::HashSet;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::mpsc;

type Tx = mpsc::Sender<Result<TaskEvent, ClientError>>;

/// The shortest poll interval a server's `pollIntervalMs` can ask for
/// (`pollIntervalMs: 0` would be a request storm).
const MIN_SERVER_POLL: Duration = Duration::from_millis(100);

/// The stream of a task's [`TaskEvent`]s (also a `futures` `Stream`).
#[derive(Debug)]
pub struct TaskEvents {
    rx: mpsc::Receiver<Result<TaskEvent, ClientError>>,
}

impl TaskEvents {
    /// Starts following task `id`; `answer: false` only observes (input
    /// requests are reported, not answered).
    pub(crate) fn spawn(tracker: Arc<Tracker>, id: String, answer: bool) -> Self {
        let (tx, rx) = mpsc::channel(16);
        tokio::spawn(async move {
            if let Err(e) = follow(&tracker, &id, &tx, answer).await {
                if let (Some(r), Some(why)) = (tracker.recorder(), lost_reason(&e)) {
                    r.lost(&id, &why).await;
                }
                let _ = tx.send(Err(e)).await;
            }
        });
        Self { rx }
    }

    /// The next event; `None` after `Finished` or an error.
    pub async fn next(&mut self) -> Option<Result<TaskEvent, ClientError>> {
        self.rx.recv().await
    }
}

impl futures_util::Stream for TaskEvents {
    type Item = Result<TaskEvent, ClientError>;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}

/// Why a follow that ended with `e` lost its task for good (`None`: it may be followed again).
fn lost_reason(e: &ClientError) -> Option<String> {
    match e {
        ClientError::TaskNotFound(_) => Some(crate::client::ledger::NOT_KNOWN.to_owned()),
        ClientError::Expired => Some("expired: its TTL ended before it finished".to_owned()),
        _ => None,
    }
}

/// The deadline (ms since the epoch) of a task, when its `createdAt` and `ttlMs` are known.
fn deadline_ms(t: &DetailedTask) -> Option<i64> {
    let created = parse_rfc3339_ms(&t.task.created_at)?;
    Some(created.saturating_add(i64::try_from(t.task.ttl_ms?).unwrap_or(i64::MAX)))
}

async fn emit(tx: &Tx, ev: TaskEvent) -> Result<bool, ClientError> {
    Ok(tx.send(Ok(ev)).await.is_ok())
}

/// Runs the follower until the task ends, an error, or the consumer goes away.
async fn follow(tracker: &Arc<Tracker>, id: &str, tx: &Tx, answer: bool) -> Result<(), ClientError> {
    let era = tracker.era();
    let s = tracker.settings();
    let mut answered: HashSet<String> = HashSet::new();
    let mut last: Option<(TaskStatus, Option<String>)> = None;
    let mut idle_polls = 0u32;
    let mut interval = s.default_poll;
    let mut push: Option<Subscription> = None;
    // Without the listen push, `task.status_changed` on the client's one events stream (tried once).
    let mut events: Option<EventFeed> = None;
    let mut events_tried = false;
    // The status last written to the ledger: a write per change of status, not per message.
    let mut noted: Option<TaskStatus> = None;
    // Register for push before the first read: followers started together share one listen request.
    let mut pending = if s.push { tracker.hub().register(era, id) } else { None };
    let mut snapshot = era.get_task(id).await?;
    loop {
        let base = snapshot
            .task
            .poll_interval_ms
            .map_or(s.default_poll, |ms| Duration::from_millis(ms).max(MIN_SERVER_POLL))
            .max(Duration::from_millis(10));
        if noted != Some(snapshot.task.status) {
            noted = Some(snapshot.task.status);
            if let Some(r) = tracker.recorder() {
                r.status(id, snapshot.task.status).await;
            }
        }
        let seen = (snapshot.task.status, snapshot.task.status_message.clone());
        if last.as_ref() != Some(&seen) {
            last = Some(seen);
            interval = base;
            if !emit(tx, TaskEvent::Status(snapshot.task.clone())).await? {
                return Ok(());
            }
        } else {
            // Capped back-off while nothing changes (never faster than the server asks).
            interval = interval.mul_f32(1.5).clamp(base, s.max_poll.max(base));
        }
        if let Some(outcome) = ToolOutcome::of_task(&snapshot) {
            emit(tx, TaskEvent::Finished(outcome?)).await?;
            return Ok(());
        }
        if snapshot.task.status == TaskStatus::InputRequired {
            let new: Vec<(String, InputRequest)> = snapshot
                .input_requests
                .iter()
                .flatten()
                .filter(|(k, _)| !answered.contains(*k))
                .map(|(k, r)| (k.clone(), r.clone()))
                .collect();
            if !new.is_empty() {
                let keys: Vec<String> = new.iter().map(|(k, _)| k.clone()).collect();
                if !emit(tx, TaskEvent::InputRequested(keys.clone())).await? {
                    return Ok(());
                }
                if !answer {
                    // Observing only: report each key once, and leave the answering to others.
                    answered.extend(keys);
                    idle_polls = 0;
                    continue;
                }
                let mut responses = Map::new();
                for (k, r) in &new {
                    responses.insert(k.clone(), input::answer(era.connection().handler(), k, r).await?);
                }
                era.update_task(id, responses).await?;
                answered.extend(keys.iter().cloned());
                idle_polls = 0;
                if !emit(tx, TaskEvent::InputAnswered(keys)).await? {
                    return Ok(());
                }
                snapshot = era.get_task(id).await?;
                continue;
            }
            idle_polls += u32::from(answer);
            if idle_polls > s.stuck_polls {
                return Err(ClientError::Stuck);
            }
        } else {
            idle_polls = 0;
        }
        let now = (s.now_ms)();
        let deadline = deadline_ms(&snapshot);
        if deadline.is_some_and(|d| now >= d) {
            // One last look: the task may have ended right at its deadline.
            let last_look = era.get_task(id).await?;
            if last_look.task.status.is_terminal() {
                snapshot = last_look;
                continue;
            }
            return Err(ClientError::Expired);
        }
        let until_deadline = deadline.map(|d| Duration::from_millis(u64::try_from(d - now).unwrap_or(0)));
        if let Some(p) = pending.take() {
            push = p.acknowledged().await;
            if push.is_some() {
                // Catch a change made between the last read and the acknowledgment.
                snapshot = era.get_task(id).await?;
                continue;
            }
        }
        if push.is_none() && !events_tried {
            events_tried = true;
            events = tracker.event_hub().follow(era, id).await;
            if events.is_some() {
                // Catch a change made between the last read and the stream's start.
                snapshot = era.get_task(id).await?;
                continue;
            }
        }
        let wait = match (push.is_some() || events.is_some(), until_deadline) {
            // With push, polling is only a safety net.
            (true, d) => d.map_or(s.max_poll, |d| d.min(s.max_poll)),
            (false, d) => d.map_or(interval, |d| d.min(interval)),
        };
        let pushed = match (push.as_mut(), events.as_mut()) {
            (Some(sub), _) => tokio::select! {
                n = sub.rx.recv() => match n {
                    Some(t) => Some(t),
                    None => { push = None; None }
                },
                () = tokio::time::sleep(wait) => None,
                () = tx.closed() => return Ok(()),
            },
            (None, Some(feed)) => tokio::select! {
                // An occurrence is a hint: the task is read below.
                changed = feed.changed() => {
                    if !changed { events = None; }
                    None
                },
                () = tokio::time::sleep(wait) => None,
                () = tx.closed() => return Ok(()),
            },
            (None, None) => tokio::select! {
                () = tokio::time::sleep(wait) => None,
                () = tx.closed() => return Ok(()),
            },
        };
        snapshot = match pushed {
            Some(t) => t,
            None => era.get_task(id).await?,
        };
    }
}
