//! `task.status_changed`, built in: an occurrence for every status (or status
//! message) a task is written with, in both eras, read from the Tasks
//! handle's change log and shown only to the task's owner. The payload is
//! `taskId`, `status`, `statusMessage`, `lastUpdatedAt` and nothing else: the
//! client reads results and input requests with `tasks/get`, which checks
//! ownership again. The `eventId` is the change's position in the log, so
//! poll and push name one change alike.
//!
//! A subscriber without a principal receives nothing: anonymous tasks are
//! not told apart by who made them, and their ids are capabilities.

use super::source::{Filter, Page, Source};
use crate::clock::format_rfc3339_ms;
use crate::ext::tasks::Tasks;
use crate::ext::tasks::runtime::changes::{TaskChange, TaskChanges};
use crate::protocol::RpcError;
use crate::protocol::events::{DeliveryMode, EventDescriptor, EventOccurrence};
use crate::protocol::tasks::TaskStatus;
use crate::seq_log::ReadFrom;
use async_trait::async_trait;
use serde_json::{Map, Value, json};
use std::sync::Arc;
use tokio::sync::watch;

/// The event type's name.
pub const TASK_STATUS_CHANGED: &str = "task.status_changed";

/// The statuses delivered when the arguments name none: the ones a caller
/// who is not watching must act on.
const DEFAULT_STATUSES: [TaskStatus; 4] =
    [TaskStatus::InputRequired, TaskStatus::Completed, TaskStatus::Failed, TaskStatus::Cancelled];

const ALL_STATUSES: [&str; 5] = ["working", "input_required", "completed", "failed", "cancelled"];

/// Reads `task.status_changed` from a Tasks handle's change log.
pub(crate) struct TaskStatusSource {
    descriptor: EventDescriptor,
    changes: Arc<TaskChanges>,
}

/// A subscription's arguments.
struct TaskFilter {
    task_id: Option<String>,
    statuses: Vec<TaskStatus>,
}

impl TaskFilter {
    fn keeps(&self, c: &TaskChange) -> bool {
        self.statuses.contains(&c.status) && self.task_id.as_ref().is_none_or(|id| *id == c.task_id)
    }
}

fn descriptor() -> EventDescriptor {
    let input = json!({
        "type": "object",
        "properties": {
            "taskId": { "type": "string", "description": "Only this task" },
            "statuses": {
                "type": "array",
                "items": { "type": "string", "enum": ALL_STATUSES },
                "description": "Only these statuses (default: input_required, completed, failed, cancelled)"
            }
        }
    });
    let payload = json!({
        "type": "object",
        "properties": {
            "taskId": { "type": "string" },
            "status": { "type": "string", "enum": ALL_STATUSES },
            "statusMessage": { "type": "string" },
            "lastUpdatedAt": { "type": "string", "format": "date-time" }
        },
        "required": ["taskId", "status", "lastUpdatedAt"]
    });
    EventDescriptor::new(
        TASK_STATUS_CHANGED,
        "Fires when one of your tasks changes status (or status message); read the task with tasks/get",
        vec![DeliveryMode::Poll, DeliveryMode::Push],
        input,
        payload,
    )
}

/// The occurrence of change `c` at position `seq`.
fn occurrence(seq: u64, c: &TaskChange) -> EventOccurrence {
    let mut data = Map::new();
    data.insert("taskId".into(), c.task_id.clone().into());
    data.insert("status".into(), c.status.as_str().into());
    if let Some(m) = &c.status_message {
        data.insert("statusMessage".into(), m.clone().into());
    }
    let at = format_rfc3339_ms(c.last_updated_at_ms);
    data.insert("lastUpdatedAt".into(), at.clone().into());
    EventOccurrence::new(format!("tsc-{seq}"), TASK_STATUS_CHANGED, at, Value::Object(data))
}

impl TaskStatusSource {
    /// The source over `tasks`' change log (which `tasks` keeps from now on,
    /// bounded to `retained` changes and bytes if this makes it).
    pub(crate) fn new(tasks: &Tasks, retained: (usize, usize)) -> Self {
        Self { descriptor: descriptor(), changes: tasks.changes(retained.0, retained.1) }
    }
}

#[async_trait]
impl Source for TaskStatusSource {
    fn descriptor(&self) -> &EventDescriptor {
        &self.descriptor
    }

    fn epoch(&self) -> u64 {
        self.changes.epoch()
    }

    fn filter(&self, mut arguments: Map<String, Value>) -> Result<Filter, RpcError> {
        let task_id = match arguments.remove("taskId") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s),
            Some(_) => return Err(RpcError::invalid_params("arguments.taskId must be a string")),
        };
        let statuses = match arguments.remove("statuses") {
            None | Some(Value::Null) => DEFAULT_STATUSES.to_vec(),
            Some(v) => serde_json::from_value::<Vec<TaskStatus>>(v)
                .map_err(|_| RpcError::invalid_params("arguments.statuses must be an array of task statuses"))?,
        };
        Ok(Box::new(TaskFilter { task_id, statuses }))
    }

    fn head(&self) -> u64 {
        self.changes.head()
    }

    fn watch(&self) -> watch::Receiver<u64> {
        self.changes.watch()
    }

    async fn read(&self, owner: Option<&str>, filter: &Filter, from: ReadFrom) -> Result<Page, RpcError> {
        let Some(f) = filter.downcast_ref::<TaskFilter>() else {
            return Err(RpcError::internal("a filter of another event type"));
        };
        // Only the owner's tasks; an anonymous subscriber sees none.
        let Some(owner) = owner else {
            let r = self.changes.read(from, |_| false);
            return Ok(Page { events: Vec::new(), through: r.through, truncated: r.truncated, more: r.more });
        };
        let r = self.changes.read(from, |c| c.owner.as_deref() == Some(owner) && f.keeps(c));
        let events = r.entries.iter().map(|e| (e.seq, occurrence(e.seq, &e.item))).collect();
        Ok(Page { events, through: r.through, truncated: r.truncated, more: r.more })
    }
}
