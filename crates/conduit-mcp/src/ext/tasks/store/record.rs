//! The task record and its wire form.

use crate::clock::format_rfc3339_ms;
use crate::protocol::jsonrpc::{ErrorCode, RpcError};
use crate::protocol::meta::ClientCapabilities;
use crate::protocol::mrtr::InputRequest;
use crate::protocol::tasks::{CreateTaskResult, DetailedTask, Task};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

use crate::protocol::tasks::TaskStatus;

/// A JSON-RPC error object stored on a failed task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskFailure {
    /// The code.
    pub code: i64,
    /// The message.
    pub message: String,
    /// Optional detail.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl From<RpcError> for TaskFailure {
    fn from(e: RpcError) -> Self {
        Self { code: e.code, message: e.message, data: e.data }
    }
}

/// The node running a task's work, and until when its claim holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// The node id.
    pub node: String,
    /// Epoch milliseconds after which the claim has lapsed.
    pub expires_at_ms: u64,
}

/// One stored task.
///
/// Stores keep it whole (the SQL stores as a JSON document beside indexed
/// columns); `version` increases on every write.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TaskRecord {
    /// The id: 43 url-safe characters from 32 random bytes. A capability: never log it.
    pub task_id: String,
    /// The principal id that created it (`None` when unauthenticated).
    pub owner: Option<String>,
    /// Current status.
    pub status: TaskStatus,
    /// Current status message.
    pub status_message: Option<String>,
    /// Creation time, epoch ms.
    pub created_at_ms: u64,
    /// Last change, epoch ms.
    pub last_updated_at_ms: u64,
    /// Lifetime from creation; `None` = unlimited.
    pub ttl_ms: Option<u64>,
    /// Suggested polling interval.
    pub poll_interval_ms: Option<u64>,
    /// Outstanding input requests (non-empty only while `input_required`).
    pub input_requests: BTreeMap<String, InputRequest>,
    /// Every input key ever issued (keys are single-use over the task's life).
    pub issued_keys: BTreeSet<String>,
    /// Answers to a round still in progress (hidden until the round is complete).
    pub pending_responses: Map<String, Value>,
    /// Answers of completed rounds, visible to the worker.
    pub input_responses: Map<String, Value>,
    /// The result, once `completed`.
    pub result: Option<Value>,
    /// The error, once `failed`.
    pub error: Option<TaskFailure>,
    /// Capabilities of the `tools/call` that created the task (gates input requests).
    pub client_capabilities: ClientCapabilities,
    /// The tool that created it.
    pub tool: Option<String>,
    /// Arguments of the creating call, kept only for resumable work.
    pub resume_args: Option<Value>,
    /// The node running its work, for `spawn`ed work.
    pub lease: Option<Lease>,
    /// When the task reached a terminal state (for unlimited-TTL eviction).
    pub terminal_at_ms: Option<u64>,
    /// Compare-and-swap counter.
    pub version: u64,
}

impl TaskRecord {
    /// The record as a [`TransactionHook`](crate::task::TransactionHook) sees it.
    pub fn written(&self) -> crate::task::WrittenTask<'_> {
        crate::task::WrittenTask::new(&self.task_id, self.owner.as_deref(), self.status, self.version)
    }

    /// A new `working` record.
    pub fn new(task_id: String, owner: Option<String>, now_ms: u64, ttl_ms: Option<u64>) -> Self {
        Self {
            task_id,
            owner,
            status: TaskStatus::Working,
            status_message: None,
            created_at_ms: now_ms,
            last_updated_at_ms: now_ms,
            ttl_ms,
            poll_interval_ms: None,
            input_requests: BTreeMap::new(),
            issued_keys: BTreeSet::new(),
            pending_responses: Map::new(),
            input_responses: Map::new(),
            result: None,
            error: None,
            client_capabilities: ClientCapabilities::default(),
            tool: None,
            resume_args: None,
            lease: None,
            terminal_at_ms: None,
            version: 0,
        }
    }

    /// When the task expires (`created_at + ttl`), or `None` if unlimited.
    pub fn expires_at_ms(&self) -> Option<u64> {
        self.ttl_ms.map(|t| self.created_at_ms.saturating_add(t))
    }

    /// Whether the task is past its lifetime at `now_ms`.
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expires_at_ms().is_some_and(|e| now_ms > e)
    }

    /// The bytes of the record as JSON: what a SQL store keeps of it (its
    /// `doc`), and what a terminal task counts for under a
    /// [`TerminalBound`](super::TerminalBound).
    pub fn stored_len(&self) -> usize {
        crate::bounds::json_len(self)
    }

    /// Whether the task is in a final state.
    pub fn is_terminal(&self) -> bool {
        self.status.is_terminal()
    }

    /// Moves to `status` at `now_ms`, recording the terminal time.
    pub fn transition(&mut self, status: TaskStatus, now_ms: u64) {
        self.status = status;
        self.touch(now_ms);
        if status.is_terminal() {
            self.terminal_at_ms = Some(self.last_updated_at_ms);
            self.input_requests.clear();
            self.lease = None;
        }
    }

    /// Bumps `lastUpdatedAt` (never backwards).
    pub fn touch(&mut self, now_ms: u64) {
        self.last_updated_at_ms = self.last_updated_at_ms.max(now_ms);
    }

    /// The task on the wire (the fields every shape shares).
    pub fn wire(&self) -> Task {
        let created = format_rfc3339_ms(self.created_at_ms);
        // Equal on a new task: format once.
        let updated = if self.last_updated_at_ms == self.created_at_ms {
            created.clone()
        } else {
            format_rfc3339_ms(self.last_updated_at_ms)
        };
        let mut t = Task::new(self.task_id.clone(), self.status, created, updated, self.ttl_ms);
        t.status_message = self.status_message.clone();
        t.poll_interval_ms = self.poll_interval_ms;
        t
    }

    /// The `CreateTaskResult` (flat, `resultType: "task"`).
    pub fn create_result(&self) -> Value {
        CreateTaskResult::new(self.wire()).into_value()
    }

    /// The `DetailedTask`: the `tasks/get` result without `resultType`, and the
    /// `notifications/tasks` params without `_meta`. One function for both.
    pub fn detailed(&self) -> Map<String, Value> {
        let mut d = DetailedTask::new(self.wire());
        match self.status {
            TaskStatus::InputRequired => d.input_requests = Some(self.input_requests.clone()),
            TaskStatus::Completed => {
                // The stored result is era-neutral; on this era every result carries `resultType`.
                let mut r = self.result.clone().unwrap_or_else(|| serde_json::json!({ "content": [] }));
                if let Value::Object(m) = &mut r
                    && !m.contains_key("resultType")
                {
                    m.insert("resultType".into(), "complete".into());
                }
                d.result = Some(r);
            }
            TaskStatus::Failed => {
                let e = self.error.clone().unwrap_or(TaskFailure {
                    code: -32603,
                    message: "Task failed".into(),
                    data: None,
                });
                let mut err = RpcError::new(ErrorCode::from_code(e.code), e.message);
                err.data = e.data;
                d.error = Some(err);
            }
            TaskStatus::Working | TaskStatus::Cancelled => {}
        }
        d.into_map()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_shapes() {
        let mut t = TaskRecord::new("id".into(), None, 1_000, Some(5_000));
        let c = t.create_result();
        assert_eq!(c["resultType"], "task");
        assert_eq!(c["ttlMs"], 5_000);
        assert!(c.get("pollIntervalMs").is_none() && c.get("result").is_none());
        t.ttl_ms = None;
        assert!(t.create_result()["ttlMs"].is_null());
        assert!(t.create_result().as_object().unwrap().contains_key("ttlMs"));
        t.result = Some(serde_json::json!({"content": []}));
        t.transition(TaskStatus::Completed, 2_000);
        let d = t.detailed();
        assert_eq!(d["status"], "completed");
        assert!(d.contains_key("result") && !d.contains_key("resultType"));
        assert_eq!(d["result"]["resultType"], "complete");
        assert_eq!(t.terminal_at_ms, Some(2_000));
    }

    #[test]
    fn expiry() {
        let t = TaskRecord::new("id".into(), None, 1_000, Some(10));
        assert!(!t.is_expired(1_010));
        assert!(t.is_expired(1_011));
        assert!(!TaskRecord::new("id".into(), None, 0, None).is_expired(u64::MAX));
    }
}
