//! The legacy (2025-11-25) tasks wire vocabulary: the flat `Task` of
//! `tasks/get`, `tasks/list`, `tasks/cancel` and `notifications/tasks/status`,
//! the nested `CreateTaskResult`, and the `_meta` key that ties a message to a
//! task. The modern shapes are in [`tasks`](super::tasks); the statuses are the
//! same [`TaskStatus`].

use super::tasks::TaskStatus;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// `_meta` key tying a message to a legacy task.
pub const RELATED_TASK_KEY: &str = "io.modelcontextprotocol/related-task";

/// The `_meta` value under [`RELATED_TASK_KEY`] for task `task_id`.
pub fn related_task(task_id: &str) -> Value {
    json!({ "taskId": task_id })
}

/// A task on 2025-11-25: flat, its lifetime in `ttl` (always present, `null` =
/// unlimited), its polling hint in `pollInterval`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct LegacyTask {
    /// The id (a capability).
    pub task_id: String,
    /// Current status (a tool error is `failed` on this era).
    pub status: TaskStatus,
    /// Current status message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// Creation time (RFC 3339).
    pub created_at: String,
    /// Last change (RFC 3339).
    pub last_updated_at: String,
    /// Lifetime from creation in milliseconds; required on the wire, `null` = unlimited.
    pub ttl: Option<u64>,
    /// Suggested polling interval in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval: Option<u64>,
}

impl LegacyTask {
    /// A task with the required fields.
    pub fn new(
        task_id: impl Into<String>,
        status: TaskStatus,
        created_at: impl Into<String>,
        last_updated_at: impl Into<String>,
        ttl: Option<u64>,
    ) -> Self {
        Self {
            task_id: task_id.into(),
            status,
            status_message: None,
            created_at: created_at.into(),
            last_updated_at: last_updated_at.into(),
            ttl,
            poll_interval: None,
        }
    }

    /// The JSON object, built by moving the fields (the same object serde writes).
    pub fn into_value(self) -> Value {
        let mut m = Map::new();
        m.insert("taskId".into(), Value::String(self.task_id));
        m.insert("status".into(), Value::from(self.status.as_str()));
        if let Some(s) = self.status_message {
            m.insert("statusMessage".into(), Value::String(s));
        }
        m.insert("createdAt".into(), Value::String(self.created_at));
        m.insert("lastUpdatedAt".into(), Value::String(self.last_updated_at));
        m.insert("ttl".into(), self.ttl.map_or(Value::Null, Value::from));
        if let Some(p) = self.poll_interval {
            m.insert("pollInterval".into(), Value::from(p));
        }
        Value::Object(m)
    }
}

/// The answer of a task-augmented `tools/call` on 2025-11-25: `{ "task": {..} }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LegacyCreateTaskResult {
    /// The task.
    pub task: LegacyTask,
}

impl LegacyCreateTaskResult {
    /// The result for `task`.
    pub fn new(task: LegacyTask) -> Self {
        Self { task }
    }

    /// The JSON object (see [`LegacyTask::into_value`]).
    pub fn into_value(self) -> Value {
        json!({ "task": self.task.into_value() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hand_built_object_is_what_serde_writes() {
        let mut t = LegacyTask::new("id", TaskStatus::Failed, "a", "b", None);
        assert_eq!(serde_json::to_value(&t).unwrap(), t.clone().into_value());
        assert!(t.clone().into_value()["ttl"].is_null());
        t.status_message = Some("m".into());
        t.ttl = Some(5);
        t.poll_interval = Some(7);
        let v = t.clone().into_value();
        assert_eq!(serde_json::to_value(&t).unwrap(), v);
        assert_eq!(
            (v["status"].as_str(), v["ttl"].as_u64(), v["pollInterval"].as_u64()),
            (Some("failed"), Some(5), Some(7))
        );
        let c = LegacyCreateTaskResult::new(t.clone());
        assert_eq!(serde_json::to_value(&c).unwrap(), c.into_value());
        let back: LegacyTask = serde_json::from_value(v).unwrap();
        assert_eq!(back, t);
    }
}
