//! [`TaskHandle`]: one task on the server, to read, answer, cancel or follow
//! to the end; [`TaskEvent`] and [`ToolOutcome`], what following yields.

use super::client::{Client, tool_result};
use super::error::ClientError;
use super::follow;
use crate::protocol::methods::{TASKS_CANCEL, TASKS_GET, TASKS_UPDATE};
use crate::protocol::tasks::{DetailedTask, Task, TaskStatus};
use crate::protocol::tools::CallToolResult;
use crate::protocol::{Era, ErrorCode, RpcError};
use serde_json::{Map, Value};
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::mpsc;

/// How a tool call ended. A tool error (`isError`) is `Completed`; only a
/// JSON-RPC error while the task ran is `Failed`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ToolOutcome {
    /// The tool's result.
    Completed(CallToolResult),
    /// The task failed with this error.
    Failed(RpcError),
    /// The task was cancelled (its last status message, if any).
    Cancelled(Option<String>),
}

impl ToolOutcome {
    /// Reads the outcome of a terminal task; `None` while it is not terminal.
    pub fn of_task(t: &DetailedTask) -> Option<Result<Self, ClientError>> {
        Some(match t.task.status {
            TaskStatus::Completed => match &t.result {
                Some(r) => tool_result(r.clone()).map(Self::Completed),
                None => Err(ClientError::Protocol("a completed task without a result".into())),
            },
            TaskStatus::Failed => Ok(Self::Failed(
                t.error.clone().unwrap_or_else(|| RpcError::internal("the task failed without an error object")),
            )),
            TaskStatus::Cancelled => Ok(Self::Cancelled(t.task.status_message.clone())),
            _ => return None,
        })
    }
}

/// What following a task yields, in order; the last item is `Finished` (or an error).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum TaskEvent {
    /// A new status or status message (the first observation too).
    Status(Task),
    /// The task asks for input under these keys (they are answered next).
    InputRequested(Vec<String>),
    /// The answers for these keys were sent (`tasks/update`).
    InputAnswered(Vec<String>),
    /// The task is terminal.
    Finished(ToolOutcome),
}

/// A task on the server. Dropping a handle, or a follow stream, never
/// cancels the task; [`TaskHandle::cancel`] does.
#[derive(Debug, Clone)]
pub struct TaskHandle {
    pub(crate) client: Client,
    id: String,
    created: Option<Task>,
}

impl TaskHandle {
    pub(crate) fn new(client: Client, id: String, created: Option<Task>) -> Self {
        Self { client, id, created }
    }

    /// The task id (a bearer capability: keep it private).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The task as created, when this handle came from `tools/call`.
    pub fn created(&self) -> Option<&Task> {
        self.created.as_ref()
    }

    fn params(&self) -> Map<String, Value> {
        let mut p = Map::new();
        p.insert("taskId".into(), Value::String(self.id.clone()));
        p
    }

    async fn task_request(&self, method: &str, params: Map<String, Value>) -> Result<Value, ClientError> {
        match self.client.inner.request(method, params, Vec::new()).await {
            Err(ClientError::Rpc(e)) if e.error_code() == ErrorCode::InvalidParams => {
                Err(ClientError::TaskNotFound(e.message))
            }
            other => other,
        }
    }

    /// `tasks/get`: the task now (on the legacy era, with its result fetched once terminal).
    pub async fn get(&self) -> Result<DetailedTask, ClientError> {
        if self.client.inner.era() == Era::Legacy {
            return super::legacy::get_task(self).await;
        }
        let v = self.task_request(TASKS_GET, self.params()).await?;
        serde_json::from_value(v).map_err(|e| ClientError::Protocol(format!("tasks/get: not a task: {e}")))
    }

    /// `tasks/update` with these answers, by key.
    pub async fn update(&self, responses: Map<String, Value>) -> Result<(), ClientError> {
        if self.client.inner.era() == Era::Legacy {
            return Err(ClientError::Protocol("tasks/update does not exist on the legacy era".into()));
        }
        let mut p = self.params();
        p.insert("inputResponses".into(), Value::Object(responses));
        self.task_request(TASKS_UPDATE, p).await.map(drop)
    }

    /// `tasks/cancel`: asks the server to cancel (cooperative; the task may still complete).
    pub async fn cancel(&self) -> Result<(), ClientError> {
        self.task_request(TASKS_CANCEL, self.params()).await.map(drop)
    }

    /// Follows the task: status changes, input asked and answered (through
    /// the client's [`InputHandler`](super::InputHandler)), then the outcome.
    /// Push over the client's one `subscriptions/listen` stream when the
    /// server acknowledges the task, polling at `pollIntervalMs` otherwise.
    pub fn follow(&self) -> TaskEvents {
        let (tx, rx) = mpsc::channel(16);
        tokio::spawn(follow::run(self.clone(), tx, true));
        TaskEvents { rx }
    }

    /// Like [`follow`](Self::follow), but only observes: input requests are
    /// reported (each key once) and left for someone else to answer.
    pub fn watch(&self) -> TaskEvents {
        let (tx, rx) = mpsc::channel(16);
        tokio::spawn(follow::run(self.clone(), tx, false));
        TaskEvents { rx }
    }

    /// Follows the task to the end and returns how it ended.
    pub async fn wait(&self) -> Result<ToolOutcome, ClientError> {
        let mut events = self.follow();
        while let Some(ev) = events.next().await {
            if let TaskEvent::Finished(o) = ev? {
                return Ok(o);
            }
        }
        Err(ClientError::Transport("the follower stopped before the task ended".into()))
    }
}

/// The stream of a task's [`TaskEvent`]s (also a `futures` `Stream`).
#[derive(Debug)]
pub struct TaskEvents {
    rx: mpsc::Receiver<Result<TaskEvent, ClientError>>,
}

impl TaskEvents {
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
