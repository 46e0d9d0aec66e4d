//! A client's answers to a task's input requests, applied once for both eras:
//! the modern `tasks/update` hands in its `inputResponses`, the legacy
//! `tasks/result` each answer to a question it relayed. Each answer must be
//! well-formed for its request and within the byte bounds of
//! [`limits`](crate::ext::tasks::limits); when the last outstanding request is answered
//! the task goes back to `working` with every answer at once.

use super::rpc_error::store_error;
use crate::ext::tasks::runtime::Tasks;
use crate::ext::tasks::store::{Owner, TaskRecord, limits};
use crate::protocol::RpcError;
use crate::protocol::mrtr::InputKind;
use crate::protocol::tasks::TaskStatus;
use crate::task::StoreError;
use serde_json::{Map, Value};
use std::sync::Mutex;

/// What became of a set of answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answered {
    /// At least one answer was stored.
    Applied,
    /// The task waits for no input (it moved on, or never asked).
    NotWaiting,
    /// It waits, but no answer was for one of its outstanding requests, well-formed and within bounds.
    NoneAccepted,
}

/// Whether `v` is a well-formed answer to an input request of `kind`.
fn valid_response(kind: Option<InputKind>, v: &Value) -> bool {
    let Some(o) = v.as_object() else { return false };
    match kind {
        Some(InputKind::ElicitForm | InputKind::ElicitUrl) => {
            matches!(o.get("action").and_then(Value::as_str), Some("accept" | "decline" | "cancel"))
                && o.get("content").is_none_or(Value::is_object)
        }
        Some(InputKind::Sample | InputKind::SampleWithTools) => o.contains_key("role") && o.contains_key("content"),
        Some(InputKind::ListRoots) => o.get("roots").is_some_and(Value::is_array),
        None => false,
    }
}

/// `record` with `responses` applied, or why none was.
fn apply(record: &TaskRecord, responses: &Map<String, Value>, now: u64) -> Result<TaskRecord, Answered> {
    if record.status != TaskStatus::InputRequired {
        return Err(Answered::NotWaiting);
    }
    let mut n = record.clone();
    let mut applied = 0;
    let mut kept: usize = n.input_responses.values().chain(n.pending_responses.values()).map(limits::json_len).sum();
    for (k, v) in responses {
        let Some(req) = n.input_requests.get(k) else {
            continue;
        };
        if !valid_response(req.kind(), v) {
            continue;
        }
        // An answer past the bounds is ignored like a malformed one.
        let len = limits::json_len(v);
        if len > limits::MAX_ANSWER_BYTES || kept + len > limits::MAX_ANSWERS_BYTES {
            continue;
        }
        kept += len;
        n.input_requests.remove(k);
        n.pending_responses.insert(k.clone(), v.clone());
        applied += 1;
    }
    if applied == 0 {
        return Err(Answered::NoneAccepted);
    }
    if n.input_requests.is_empty() {
        let answers = std::mem::take(&mut n.pending_responses);
        n.input_responses.extend(answers);
        n.transition(TaskStatus::Working, now);
    } else {
        n.touch(now);
    }
    Ok(n)
}

/// Applies `responses` (input request key → answer) to task `id` of `owner`,
/// in one compare-and-swap write; wakes the worker when it is written.
pub(crate) async fn answer(
    tasks: &Tasks,
    id: &str,
    owner: Owner<'_>,
    responses: &Map<String, Value>,
) -> Result<Answered, RpcError> {
    let now = tasks.now();
    let refused = Mutex::new(None);
    let write = |r: &TaskRecord| {
        apply(r, responses, now).map_err(|why| {
            if let Ok(mut w) = refused.lock() {
                *w = Some(why);
            }
            StoreError::Refused("no answer applied".into())
        })
    };
    // With an answer hook (a queue re-enqueueing the job that asked), the
    // answer and the hook's rows commit together.
    let result = match &tasks.config().answer_hook {
        None => tasks.store().update(id, owner, &write).await,
        Some(hook) => tasks.store().update_with(id, owner, &write, hook.as_ref()).await,
    };
    match result {
        Ok(rec) => {
            tasks.after_write(&rec);
            Ok(Answered::Applied)
        }
        Err(StoreError::Refused(_)) => {
            Ok(refused.lock().ok().and_then(|mut w| w.take()).unwrap_or(Answered::NoneAccepted))
        }
        Err(e) => Err(store_error(e)),
    }
}
