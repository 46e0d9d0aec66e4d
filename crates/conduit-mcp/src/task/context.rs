//! What a task's work sees of its task: progress, mid-flight questions,
//! cancellation. The same handle whether the work runs as a stored task or
//! inline inside the call.

use super::StoreError;
use crate::protocol::mrtr::InputRequest;
use async_trait::async_trait;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

/// Why a worker-side operation on a task failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum WorkerError {
    /// No such task (or it expired).
    #[error("task not found")]
    NotFound,
    /// The task is terminal; nothing changes it any more.
    #[error("task is terminal")]
    Terminal,
    /// These input keys were used before on this task (keys are single-use).
    #[error("duplicate input keys: {0:?}")]
    DuplicateKeys(Vec<String>),
    /// Empty, or not built with `conduit_mcp::mrtr`.
    #[error("invalid input requests")]
    InvalidInputRequests,
    /// The creating request did not declare the capability these requests need.
    #[error("the client did not declare the capability {0}")]
    UndeclaredCapability(Value),
    /// The work runs inline in a call that cannot carry questions mid-flight
    /// (ask with MRTR instead, or let the client opt into tasks).
    #[error("this call runs inline and cannot ask the client for input mid-flight")]
    InputUnavailable,
    /// The task store failed (the store's error, whole, is the source).
    #[error("task store failed: {0}")]
    Store(#[source] StoreError),
}

impl From<StoreError> for WorkerError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound => Self::NotFound,
            StoreError::Terminal => Self::Terminal,
            e => Self::Store(e),
        }
    }
}

impl PartialEq for WorkerError {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::NotFound, Self::NotFound)
            | (Self::Terminal, Self::Terminal)
            | (Self::InvalidInputRequests, Self::InvalidInputRequests)
            | (Self::InputUnavailable, Self::InputUnavailable) => true,
            (Self::DuplicateKeys(a), Self::DuplicateKeys(b)) => a == b,
            (Self::UndeclaredCapability(a), Self::UndeclaredCapability(b)) => a == b,
            (Self::Store(a), Self::Store(b)) => a == b,
            _ => false,
        }
    }
}

/// Where a context's operations go: the task runtime for stored tasks, the
/// call itself for inline work.
#[async_trait]
pub(crate) trait TaskBackend: Send + Sync {
    /// Reports progress (the status message of a stored task; a progress
    /// notification of an inline call).
    async fn progress(&self, id: Option<&str>, message: String) -> Result<(), WorkerError>;

    /// Asks these questions and waits for every answer.
    async fn inputs(
        &self,
        id: Option<&str>,
        requests: BTreeMap<String, InputRequest>,
        cancel: &CancellationToken,
    ) -> Result<Map<String, Value>, WorkerError>;
}

/// A running task, as its `spawn`ed work sees it.
#[derive(Clone)]
pub struct TaskContext {
    id: Option<Arc<str>>,
    backend: Arc<dyn TaskBackend>,
    cancel: CancellationToken,
}

impl std::fmt::Debug for TaskContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskContext").field("inline", &self.id.is_none()).finish_non_exhaustive()
    }
}

impl TaskContext {
    pub(crate) fn new(id: Option<Arc<str>>, backend: Arc<dyn TaskBackend>, cancel: CancellationToken) -> Self {
        Self { id, backend, cancel }
    }

    /// The task id (a capability: keep it out of logs); `None` when the work
    /// runs inline, without a task.
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// Whether the work runs inline inside the call rather than as a stored task.
    pub fn is_inline(&self) -> bool {
        self.id.is_none()
    }

    /// Reports progress: the task's status message, or a
    /// `notifications/progress` of the call when it runs inline (if the
    /// request carried a progress token).
    pub async fn progress(&self, message: impl Into<String>) -> Result<(), WorkerError> {
        self.backend.progress(self.id.as_deref(), message.into()).await
    }

    /// Resolves once `tasks/cancel` ran, the inline call was cancelled, or the server shuts down.
    pub fn cancelled(&self) -> WaitForCancellationFuture<'_> {
        self.cancel.cancelled()
    }

    /// Whether the work was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Asks the client a question mid-flight and waits for the answer.
    ///
    /// The task moves to `input_required` until the client answers `key`
    /// with `tasks/update`; then it is `working` again and the answer returned.
    pub async fn input(&self, key: &str, request: InputRequest) -> Result<Value, WorkerError> {
        let mut map = BTreeMap::new();
        map.insert(key.to_owned(), request);
        let mut answers = self.inputs(map).await?;
        answers.remove(key).ok_or(WorkerError::Terminal)
    }

    /// Asks several questions at once (all pending together) and waits until
    /// every one is answered; returns the answers by key.
    pub async fn inputs(&self, requests: BTreeMap<String, InputRequest>) -> Result<Map<String, Value>, WorkerError> {
        self.backend.inputs(self.id.as_deref(), requests, &self.cancel).await
    }
}
