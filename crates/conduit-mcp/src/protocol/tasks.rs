//! The Tasks extension's wire vocabulary (`io.modelcontextprotocol/tasks`,
//! SEP-2663): its id, the task status, and the task shapes as serde types.

use super::jsonrpc::RpcError;
use super::mrtr::InputRequest;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The id of the Tasks extension, the key under `capabilities.extensions`.
pub const TASKS_EXTENSION_ID: &str = "io.modelcontextprotocol/tasks";

/// Where a task is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// The work is running.
    Working,
    /// The work waits for answers to `inputRequests`.
    InputRequired,
    /// Finished with a `CallToolResult` (which may have `isError: true`).
    Completed,
    /// Ended with a JSON-RPC error.
    Failed,
    /// Cancelled by `tasks/cancel` (or the server).
    Cancelled,
}

impl TaskStatus {
    /// `completed`, `failed` and `cancelled` are final.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::InputRequired => "input_required",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// Parses a wire name.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "working" => Self::Working,
            "input_required" => Self::InputRequired,
            "completed" => Self::Completed,
            "failed" => Self::Failed,
            "cancelled" => Self::Cancelled,
            _ => return None,
        })
    }
}

/// The fields every task shape shares.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Task {
    /// The id (a capability).
    pub task_id: String,
    /// Current status.
    pub status: TaskStatus,
    /// Current status message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// Creation time (RFC 3339).
    pub created_at: String,
    /// Last change (RFC 3339).
    pub last_updated_at: String,
    /// Lifetime from creation; required on the wire, `null` = unlimited.
    pub ttl_ms: Option<u64>,
    /// Suggested polling interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<u64>,
}

impl Task {
    /// A task with the required fields.
    pub fn new(
        task_id: impl Into<String>,
        status: TaskStatus,
        created_at: impl Into<String>,
        last_updated_at: impl Into<String>,
        ttl_ms: Option<u64>,
    ) -> Self {
        Self {
            task_id: task_id.into(),
            status,
            status_message: None,
            created_at: created_at.into(),
            last_updated_at: last_updated_at.into(),
            ttl_ms,
            poll_interval_ms: None,
        }
    }
}

impl Task {
    /// The JSON object, built by moving the fields (the same object serde writes; the hot
    /// paths use this to avoid copying every string once more).
    pub fn into_map(self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("taskId".into(), Value::String(self.task_id));
        m.insert("status".into(), Value::from(self.status.as_str()));
        if let Some(s) = self.status_message {
            m.insert("statusMessage".into(), Value::String(s));
        }
        m.insert("createdAt".into(), Value::String(self.created_at));
        m.insert("lastUpdatedAt".into(), Value::String(self.last_updated_at));
        m.insert("ttlMs".into(), self.ttl_ms.map_or(Value::Null, Value::from));
        if let Some(p) = self.poll_interval_ms {
            m.insert("pollIntervalMs".into(), Value::from(p));
        }
        m
    }
}

/// The answer of a `tools/call` that became a task: the task, flat, with `resultType: "task"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CreateTaskResult {
    /// Always `"task"`.
    #[serde(rename = "resultType")]
    pub result_type: String,
    /// The task.
    #[serde(flatten)]
    pub task: Task,
}

impl CreateTaskResult {
    /// The result for `task`.
    pub fn new(task: Task) -> Self {
        Self { result_type: "task".into(), task }
    }

    /// The JSON object (see [`Task::into_map`]).
    pub fn into_value(self) -> Value {
        let mut m = self.task.into_map();
        m.insert("resultType".into(), Value::String(self.result_type));
        Value::Object(m)
    }
}

/// A task with what its status carries: `inputRequests` while `input_required`,
/// `result` once `completed`, `error` once `failed`. The `tasks/get` result
/// (plus `resultType`) and the `notifications/tasks` params (plus `_meta`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct DetailedTask {
    /// The shared fields.
    #[serde(flatten)]
    pub task: Task,
    /// The outstanding requests (`input_required`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<BTreeMap<String, InputRequest>>,
    /// The tool's result (`completed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The JSON-RPC error (`failed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RpcError>,
}

impl DetailedTask {
    /// A detailed task with nothing but the shared fields.
    pub fn new(task: Task) -> Self {
        Self { task, input_requests: None, result: None, error: None }
    }

    /// The JSON object (see [`Task::into_map`]).
    pub fn into_map(self) -> Map<String, Value> {
        let mut m = self.task.into_map();
        if let Some(r) = self.input_requests {
            m.insert("inputRequests".into(), serde_json::to_value(r).unwrap_or(Value::Null));
        }
        if let Some(r) = self.result {
            m.insert("result".into(), r);
        }
        if let Some(e) = self.error {
            m.insert("error".into(), serde_json::to_value(e).unwrap_or(Value::Null));
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn wire_shapes() {
        let t = Task::new("id", TaskStatus::Working, "a", "b", None);
        let c = serde_json::to_value(CreateTaskResult::new(t.clone())).unwrap();
        assert_eq!(c["resultType"], "task");
        assert!(c.as_object().unwrap().contains_key("ttlMs") && c["ttlMs"].is_null());
        assert!(c.get("pollIntervalMs").is_none() && c.get("statusMessage").is_none());
        let mut d = DetailedTask::new(Task { status: TaskStatus::Completed, ttl_ms: Some(5), ..t });
        d.result = Some(json!({"content": []}));
        let v = serde_json::to_value(&d).unwrap();
        assert_eq!(v["status"], "completed");
        assert_eq!(v["ttlMs"], 5);
        assert!(v.get("error").is_none() && v.get("inputRequests").is_none());
        let back: DetailedTask = serde_json::from_value(v).unwrap();
        assert_eq!(back, d);
    }

    #[test]
    fn moving_conversions_write_what_serde_writes() {
        let mut t = Task::new("id", TaskStatus::InputRequired, "a", "b", Some(9));
        t.status_message = Some("waiting".into());
        t.poll_interval_ms = Some(200);
        let c = CreateTaskResult::new(t.clone());
        assert_eq!(serde_json::to_value(&c).unwrap(), c.into_value());
        let mut d = DetailedTask::new(t.clone());
        let mut ir = BTreeMap::new();
        ir.insert("k".to_owned(), serde_json::from_value(json!({"method": "roots/list"})).unwrap());
        d.input_requests = Some(ir);
        assert_eq!(serde_json::to_value(&d).unwrap(), Value::Object(d.clone().into_map()));
        let mut f = DetailedTask::new(Task { status: TaskStatus::Failed, ttl_ms: None, ..t });
        f.error = Some(RpcError::internal("x").data(json!({"a": 1})));
        assert_eq!(serde_json::to_value(&f).unwrap(), Value::Object(f.clone().into_map()));
    }
}
