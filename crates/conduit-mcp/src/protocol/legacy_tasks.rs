//! The legacy (2025-11-25) tasks wire vocabulary: the flat `Task` of
//! `tasks/get`, `tasks/list`, `tasks/cancel` and `notifications/tasks/status`,
//! the nested `CreateTaskResult`, and the `_meta` key that ties a message to a
//! task.
//!
//! A legacy task has the fields of the modern [`Task`], two of them under
//! other names (`ttl` for `ttlMs`, `pollInterval` for `pollIntervalMs`): one
//! type holds both, and only the names differ here.

use super::tasks::Task;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value, json};

/// `_meta` key tying a message to a legacy task.
pub const RELATED_TASK_KEY: &str = "io.modelcontextprotocol/related-task";

/// The modern names and this era's, of the fields named differently.
const RENAMED: [(&str, &str); 2] = [("ttlMs", "ttl"), ("pollIntervalMs", "pollInterval")];

/// The `_meta` value under [`RELATED_TASK_KEY`] for task `task_id`.
pub fn related_task(task_id: &str) -> Value {
    json!({ "taskId": task_id })
}

/// Moves each renamed field from one name to the other.
fn rename(m: &mut Map<String, Value>, to_legacy: bool) {
    for (modern, legacy) in RENAMED {
        let (from, to) = if to_legacy { (modern, legacy) } else { (legacy, modern) };
        if let Some(v) = m.remove(from) {
            m.insert(to.into(), v);
        }
    }
}

/// A task on 2025-11-25: [`Task`]'s fields, its lifetime in `ttl` (always
/// present, `null` = unlimited) and its polling hint in `pollInterval`.
/// On this era a tool's error result makes the task `failed`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LegacyTask {
    /// The fields, as the modern era names them in code.
    pub task: Task,
}

impl LegacyTask {
    /// The legacy shape of `task`.
    pub fn new(task: Task) -> Self {
        Self { task }
    }

    /// The JSON object.
    pub fn into_value(self) -> Value {
        let mut m = self.task.into_map();
        rename(&mut m, true);
        Value::Object(m)
    }
}

impl Serialize for LegacyTask {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.clone().into_value().serialize(s)
    }
}

impl<'de> Deserialize<'de> for LegacyTask {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut m = Map::<String, Value>::deserialize(d)?;
        rename(&mut m, false);
        Task::deserialize(Value::Object(m)).map(Self::new).map_err(serde::de::Error::custom)
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
    use crate::protocol::tasks::TaskStatus;

    #[test]
    fn this_era_names_ttl_and_poll_interval_its_own_way() {
        let mut t = Task::new("id", TaskStatus::Failed, "a", "b", None);
        let v = LegacyTask::new(t.clone()).into_value();
        assert!(v["ttl"].is_null() && v.get("ttlMs").is_none() && v.get("pollInterval").is_none());
        t.status_message = Some("m".into());
        t.ttl_ms = Some(5);
        t.poll_interval_ms = Some(7);
        let legacy = LegacyTask::new(t);
        let v = legacy.clone().into_value();
        assert_eq!(serde_json::to_value(&legacy).unwrap(), v);
        assert_eq!(
            (v["status"].as_str(), v["ttl"].as_u64(), v["pollInterval"].as_u64()),
            (Some("failed"), Some(5), Some(7))
        );
        assert!(v.get("ttlMs").is_none() && v.get("pollIntervalMs").is_none());
        let back: LegacyTask = serde_json::from_value(v).unwrap();
        assert_eq!(back, legacy);
        let c = LegacyCreateTaskResult::new(legacy);
        assert_eq!(serde_json::to_value(&c).unwrap(), c.into_value());
    }
}
