//! The by-id worker calls: read a task, report progress, ask for input,
//! finish it. Each reads the store the id was minted for first, then the
//! paired era's.

use super::Tasks;
use crate::ext::tasks::store::limits::bound_status_message;
use crate::ext::tasks::store::{Owner, StatusFields, TaskRecord, is_legacy_task_id};
use crate::protocol::RpcError;
use crate::protocol::mrtr::{InputKind, InputRequest};
use crate::protocol::tasks::TaskStatus;
use crate::protocol::tools::CallToolResult;
use crate::task::{StoreError, WorkerError};
use std::collections::BTreeMap;
use std::sync::Mutex;

impl Tasks {
    /// The task's current state (not owner-scoped).
    pub async fn status(&self, id: &str) -> Result<TaskRecord, WorkerError> {
        let (first, next) = self.by_id(id);
        match (first.inner.store.get(id, Owner::Any).await, next) {
            (Err(StoreError::NotFound), Some(next)) => Ok(next.inner.store.get(id, Owner::Any).await?),
            (r, _) => Ok(r?),
        }
    }

    /// The runtime whose store a by-id call on `id` reads first (the one the id
    /// was minted for), and the paired one it tries when the first has no such task.
    fn by_id(&self, id: &str) -> (&Tasks, Option<&Tasks>) {
        match self.inner.legacy.get() {
            Some(legacy) if is_legacy_task_id(id) => (legacy.tasks(), Some(self)),
            Some(legacy) => (self, Some(legacy.tasks())),
            None => (self, None),
        }
    }

    /// Whether `tasks/cancel` ran; `false` for an unknown id.
    pub async fn cancelled(&self, id: &str) -> bool {
        self.status(id).await.is_ok_and(|t| t.status == TaskStatus::Cancelled)
    }

    /// Updates `statusMessage` and `lastUpdatedAt` without changing the status.
    pub async fn progress(&self, id: &str, message: impl Into<String>) -> Result<(), WorkerError> {
        let message = bound_status_message(message.into());
        let (first, next) = self.by_id(id);
        match (first.progress_here(id, &message).await, next) {
            (Err(WorkerError::NotFound), Some(next)) => next.progress_here(id, &message).await,
            (r, _) => r,
        }
    }

    /// [`progress`](Self::progress) in this runtime's store only.
    async fn progress_here(&self, id: &str, message: &str) -> Result<(), WorkerError> {
        let now = self.now();
        let rec = self
            .inner
            .store
            .update(id, Owner::Any, &|r: &TaskRecord| {
                if r.is_terminal() {
                    return Err(StoreError::Terminal);
                }
                let mut n = r.clone();
                n.status_message = Some(message.to_owned());
                n.touch(now);
                Ok(n)
            })
            .await?;
        self.after_write(&rec);
        Ok(())
    }

    async fn finish(&self, id: &str, status: TaskStatus, fields: StatusFields) -> Result<(), WorkerError> {
        let (first, next) = self.by_id(id);
        // The fields are copied only when there is a store to try next.
        let retry = next.map(|next| (next, fields.clone()));
        match (first.finish_here(id, status, fields).await, retry) {
            (Err(WorkerError::NotFound), Some((next, fields))) => next.finish_here(id, status, fields).await,
            (r, _) => r,
        }
    }

    /// [`finish`](Self::finish) in this runtime's store only.
    async fn finish_here(&self, id: &str, status: TaskStatus, fields: StatusFields) -> Result<(), WorkerError> {
        let rec = self.inner.store.put_status(id, status, fields).await.inspect_err(|e| {
            if matches!(e, StoreError::Backend { .. }) {
                crate::metrics::store_error("finish");
            }
        })?;
        match status {
            TaskStatus::Completed => crate::metrics::task_finished("completed"),
            TaskStatus::Failed => crate::metrics::task_finished("failed"),
            TaskStatus::Cancelled => crate::metrics::task_finished("cancelled"),
            _ => {}
        }
        self.after_write(&rec);
        super::super::terminal::ended(self, &rec).await;
        Ok(())
    }

    /// `completed` with `result` (what the tool would have returned; `isError: true` included).
    pub async fn complete(
        &self,
        id: &str,
        result: CallToolResult,
        status_message: Option<String>,
    ) -> Result<(), WorkerError> {
        let fields = StatusFields { status_message, result: Some(result.to_value()), error: None };
        self.finish(id, TaskStatus::Completed, fields).await
    }

    /// `failed` with a JSON-RPC error.
    pub async fn fail(&self, id: &str, error: RpcError, status_message: Option<String>) -> Result<(), WorkerError> {
        let fields = StatusFields { status_message, result: None, error: Some(error.into()) };
        self.finish(id, TaskStatus::Failed, fields).await
    }

    /// `input_required` with these requests (keys single-use over the task's life).
    pub async fn require_input(
        &self,
        id: &str,
        requests: BTreeMap<String, InputRequest>,
        status_message: Option<String>,
    ) -> Result<(), WorkerError> {
        let status_message = status_message.map(bound_status_message);
        if requests.is_empty() || requests.values().any(|r| r.kind().is_none()) {
            return Err(WorkerError::InvalidInputRequests);
        }
        let (first, next) = self.by_id(id);
        match (first.require_input_here(id, &requests, &status_message).await, next) {
            (Err(WorkerError::NotFound), Some(next)) => next.require_input_here(id, &requests, &status_message).await,
            (r, _) => r,
        }
    }

    /// [`require_input`](Self::require_input) in this runtime's store only.
    async fn require_input_here(
        &self,
        id: &str,
        requests: &BTreeMap<String, InputRequest>,
        status_message: &Option<String>,
    ) -> Result<(), WorkerError> {
        let now = self.now();
        let refusal: Mutex<Option<WorkerError>> = Mutex::new(None);
        let refuse = |e: WorkerError| {
            if let Ok(mut r) = refusal.lock() {
                *r = Some(e);
            }
            Err(StoreError::Refused("input requests refused".into()))
        };
        let result = self
            .inner
            .store
            .update(id, Owner::Any, &|r: &TaskRecord| {
                if r.is_terminal() {
                    return Err(StoreError::Terminal);
                }
                let dup: Vec<String> = requests.keys().filter(|k| r.issued_keys.contains(*k)).cloned().collect();
                if !dup.is_empty() {
                    return refuse(WorkerError::DuplicateKeys(dup));
                }
                for req in requests.values() {
                    let kind = req.kind().unwrap_or(InputKind::ElicitForm);
                    if !r.client_capabilities.declares_input(kind) {
                        return refuse(WorkerError::UndeclaredCapability(crate::mrtr::required_capability(kind)));
                    }
                }
                let mut n = r.clone();
                for (k, v) in requests {
                    n.issued_keys.insert(k.clone());
                    n.input_requests.insert(k.clone(), v.clone());
                }
                if status_message.is_some() {
                    n.status_message = status_message.clone();
                }
                n.transition(TaskStatus::InputRequired, now);
                Ok(n)
            })
            .await;
        match result {
            Ok(rec) => {
                self.after_write(&rec);
                Ok(())
            }
            Err(StoreError::Refused(_)) => {
                Err(refusal.lock().ok().and_then(|mut r| r.take()).unwrap_or(WorkerError::InvalidInputRequests))
            }
            Err(e) => Err(e.into()),
        }
    }
}
