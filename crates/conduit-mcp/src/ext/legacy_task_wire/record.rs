//! A [`TaskRecord`] as the legacy (2025-11-25) wire shows it: the
//! [`LegacyTask`] of `tasks/get`, `tasks/list`, `tasks/cancel` and
//! `notifications/tasks/status`, the `CreateTaskResult`, and what `tasks/result`
//! returns. The record is era-neutral and the shapes are `protocol`'s; what this
//! era makes of a record (a tool error is `failed`) is decided here only.

use crate::ext::tasks::store::TaskRecord;
use crate::protocol::RpcError;
use crate::protocol::jsonrpc::ErrorCode;
use crate::protocol::legacy_tasks::{LegacyCreateTaskResult, LegacyTask, RELATED_TASK_KEY, related_task};
use crate::protocol::tasks::TaskStatus;
use serde_json::{Value, json};

/// Whether a completed task's result is a tool error (`isError: true`): on this era it is `failed`.
fn is_tool_error(rec: &TaskRecord) -> bool {
    rec.status == TaskStatus::Completed
        && rec.result.as_ref().and_then(|r| r.get("isError")).and_then(Value::as_bool) == Some(true)
}

/// The first text of a tool error, for a `failed` task's `statusMessage`.
fn error_text(rec: &TaskRecord) -> Option<String> {
    let content = rec.result.as_ref()?.get("content")?.as_array()?;
    content.iter().find_map(|c| c.get("text").and_then(Value::as_str)).map(|t| format!("Tool error: {t}"))
}

/// The status on this era.
pub(crate) fn status(rec: &TaskRecord) -> TaskStatus {
    if is_tool_error(rec) { TaskStatus::Failed } else { rec.status }
}

/// The `statusMessage` on this era: the worker's, else a failure's text.
pub(crate) fn status_message(rec: &TaskRecord) -> Option<String> {
    match (&rec.status_message, is_tool_error(rec)) {
        (Some(m), _) => Some(m.clone()),
        (None, true) => error_text(rec),
        (None, false) if rec.status == TaskStatus::Failed => rec.error.as_ref().map(|e| e.message.clone()),
        _ => None,
    }
}

/// The flat legacy `Task`: the record's wire fields with this era's status and message.
pub(crate) fn task(rec: &TaskRecord) -> LegacyTask {
    let mut t = rec.wire();
    t.status = status(rec);
    t.status_message = status_message(rec);
    LegacyTask::new(t)
}

/// The `CreateTaskResult`: `{task: {...}}`.
pub(crate) fn create_result(rec: &TaskRecord) -> Value {
    LegacyCreateTaskResult::new(task(rec)).into_value()
}

/// What `tasks/result` answers for a terminal task: what the call would have
/// returned (the result, or the same JSON-RPC error), with the related-task `_meta`.
pub(crate) fn outcome(rec: &TaskRecord) -> Result<Value, RpcError> {
    match rec.status {
        TaskStatus::Completed => {
            let mut r = rec.result.clone().unwrap_or_else(|| json!({ "content": [] }));
            if let Value::Object(m) = &mut r {
                match m.get_mut("_meta") {
                    Some(Value::Object(meta)) => {
                        meta.insert(RELATED_TASK_KEY.into(), related_task(&rec.task_id));
                    }
                    _ => {
                        m.insert("_meta".into(), json!({ RELATED_TASK_KEY: related_task(&rec.task_id) }));
                    }
                }
            }
            Ok(r)
        }
        TaskStatus::Failed => {
            let (code, message, data) = match &rec.error {
                Some(e) => (e.code, e.message.clone(), e.data.clone()),
                None => (-32603, "Task failed".to_owned(), None),
            };
            let mut e = RpcError::new(ErrorCode::from_code(code), message);
            e.data = data;
            Err(e)
        }
        _ => Err(RpcError::internal("Task was cancelled")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_errors_are_failed_with_a_message() {
        let mut rec = TaskRecord::new("t".into(), None, 1_000, Some(60_000));
        assert_eq!(task(&rec).into_value()["status"], "working");
        assert_eq!(task(&rec).into_value()["ttl"], 60_000);
        rec.result = Some(json!({ "content": [{ "type": "text", "text": "disk full" }], "isError": true }));
        rec.transition(TaskStatus::Completed, 2_000);
        let t = task(&rec).into_value();
        assert_eq!(t["status"], "failed");
        assert_eq!(t["statusMessage"], "Tool error: disk full");
        let r = outcome(&rec).expect("a tool error is a result");
        assert_eq!(r["isError"], true);
        assert_eq!(r["_meta"][RELATED_TASK_KEY]["taskId"], "t");
        rec.ttl_ms = None;
        assert!(task(&rec).into_value().as_object().is_some_and(|m| m["ttl"].is_null()));
    }
}
