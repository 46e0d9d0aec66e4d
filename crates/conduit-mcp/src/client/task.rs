//! [`TaskHandle`]: one task on the server, to read, answer, cancel or follow
//! to the end. The era it is spoken in is the client's ([`super::era`]):
//! nothing here asks which.

use super::error::ClientError;
use super::follow::TaskEvents;
use super::outcome::{TaskEvent, ToolOutcome};
use super::tracker::Tracker;
use crate::protocol::tasks::{DetailedTask, Task};
use serde_json::{Map, Value};
use std::fmt;
use std::sync::Arc;

/// A task on the server. Dropping a handle, or a follow stream, never
/// cancels the task; [`TaskHandle::cancel`] does.
#[derive(Clone)]
pub struct TaskHandle {
    tracker: Arc<Tracker>,
    id: String,
    created: Option<Task>,
}

impl fmt::Debug for TaskHandle {
    // The id is a bearer capability: it is not printed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskHandle").field("created", &self.created.as_ref().map(|t| t.status)).finish_non_exhaustive()
    }
}

impl TaskHandle {
    /// The handle of a task a `tools/call` just created.
    pub(crate) fn new(tracker: Arc<Tracker>, task: Task) -> Self {
        Self { tracker, id: task.task_id.clone(), created: Some(task) }
    }

    /// The handle of a task known by its id alone.
    pub(crate) fn resumed(tracker: Arc<Tracker>, id: String) -> Self {
        Self { tracker, id, created: None }
    }

    /// The task id (a bearer capability: keep it private).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The task as created, when this handle came from `tools/call`.
    pub fn created(&self) -> Option<&Task> {
        self.created.as_ref()
    }

    /// `tasks/get`: the task now (on the legacy era, with its result fetched once terminal).
    pub async fn get(&self) -> Result<DetailedTask, ClientError> {
        self.tracker.era().get_task(&self.id).await
    }

    /// `tasks/update` with these answers, by key (the legacy era has no
    /// such method: its server asks with requests, answered as they come).
    pub async fn update(&self, responses: Map<String, Value>) -> Result<(), ClientError> {
        self.tracker.era().update_task(&self.id, responses).await
    }

    /// `tasks/cancel`: asks the server to cancel (cooperative; the task may still complete).
    pub async fn cancel(&self) -> Result<(), ClientError> {
        self.tracker.era().cancel_task(&self.id).await
    }

    /// Follows the task: status changes, input asked and answered (through
    /// the client's [`InputHandler`](super::InputHandler)), then the outcome.
    /// Push over the client's one `subscriptions/listen` stream when the
    /// server acknowledges the task, polling at `pollIntervalMs` otherwise.
    pub fn follow(&self) -> TaskEvents {
        TaskEvents::spawn(self.tracker.clone(), self.id.clone(), true)
    }

    /// Like [`follow`](Self::follow), but only observes: input requests are
    /// reported (each key once) and left for someone else to answer.
    pub fn watch(&self) -> TaskEvents {
        TaskEvents::spawn(self.tracker.clone(), self.id.clone(), false)
    }

    /// Follows the task to the end and returns how it ended.
    pub async fn wait(&self) -> Result<ToolOutcome, ClientError> {
        let mut events = self.follow();
        while let Some(ev) = events.next().await {
            if let TaskEvent::Finished(o) = ev? {
                return Ok(o);
            }
        }
        Err(ClientError::transport("the follower stopped before the task ended"))
    }
}
