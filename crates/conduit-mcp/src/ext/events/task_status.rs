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
use crate::ext::tasks::store::{ChangeQuery, Owner, TaskChange, TaskChangeFeed};
use crate::protocol::RpcError;
use crate::protocol::events::{DeliveryMode, EventDescriptor, EventOccurrence};
use crate::protocol::tasks::TaskStatus;
use crate::seq_log::ReadFrom;
use crate::task::StoreError;
use async_trait::async_trait;
use serde_json::{Map, Value, json};
use std::sync::Arc;
use tokio::sync::watch;

/// A failed read of the change log, as the poll or stream answers it (no detail).
fn store_error(e: crate::task::StoreError) -> RpcError {
    tracing::warn!(error = %e, "reading the task change log failed");
    RpcError::internal("the task change log could not be read")
}

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
    changes: Arc<dyn TaskChangeFeed>,
    tasks: Tasks,
}

/// A subscription's arguments.
struct TaskFilter {
    task_id: Option<String>,
    statuses: Vec<TaskStatus>,
}

fn descriptor(webhooks: bool) -> EventDescriptor {
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
        if webhooks {
            vec![DeliveryMode::Poll, DeliveryMode::Push, DeliveryMode::Webhook]
        } else {
            vec![DeliveryMode::Poll, DeliveryMode::Push]
        },
        input,
        payload,
    )
}

/// The occurrence of change `c`; its id is its position in the log.
fn occurrence(c: &TaskChange) -> EventOccurrence {
    let mut data = Map::new();
    data.insert("taskId".into(), c.task_id.clone().into());
    data.insert("status".into(), c.status.as_str().into());
    if let Some(m) = &c.status_message {
        data.insert("statusMessage".into(), m.clone().into());
    }
    let at = format_rfc3339_ms(c.last_updated_at_ms);
    data.insert("lastUpdatedAt".into(), at.clone().into());
    EventOccurrence::new(format!("tsc-{}", c.seq), TASK_STATUS_CHANGED, at, Value::Object(data))
}

impl TaskStatusSource {
    /// The source over `tasks`' change log (which `tasks` keeps from now on,
    /// bounded to `retained` changes and bytes if this makes it); offered by
    /// webhook too when `webhooks`.
    pub(crate) fn new(tasks: &Tasks, retained: (usize, usize), webhooks: bool) -> Self {
        Self { descriptor: descriptor(webhooks), changes: tasks.changes(retained.0, retained.1), tasks: tasks.clone() }
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

    async fn head(&self) -> Result<u64, RpcError> {
        self.changes.head().await.map_err(store_error)
    }

    fn watch(&self) -> watch::Receiver<u64> {
        self.tasks.change_watch()
    }

    async fn read(&self, owner: Option<&str>, filter: &Filter, from: ReadFrom) -> Result<Page, RpcError> {
        let Some(f) = filter.downcast_ref::<TaskFilter>() else {
            return Err(RpcError::internal("a filter of another event type"));
        };
        // Only the owner's tasks; an anonymous subscriber sees none (no owner matches).
        let owner = owner.unwrap_or_default();
        let statuses = if owner.is_empty() { &[][..] } else { &f.statuses[..] };
        let query = ChangeQuery::new(from.after, owner, statuses, from.max_entries)
            .task(f.task_id.as_deref())
            .floor(from.floor_ms);
        let page = self.changes.read(query).await.map_err(store_error)?;
        let events = page.changes.iter().map(|c| (c.seq, occurrence(c))).collect();
        Ok(Page { events, through: page.through, truncated: page.truncated, more: page.more, settling: page.settling })
    }

    /// A subscription to one task that is terminal now (or that is not the
    /// subscriber's, or gone: it never shows one) has nothing to wait for.
    async fn ended(&self, owner: Option<&str>, filter: &Filter) -> Result<bool, RpcError> {
        let Some(id) = filter.downcast_ref::<TaskFilter>().and_then(|f| f.task_id.as_deref()) else {
            return Ok(false);
        };
        let Some(owner) = owner.filter(|o| !o.is_empty()) else { return Ok(true) };
        let who = Owner::Is(Some(owner));
        let found = match self.tasks.store().get(id, who).await {
            Err(StoreError::NotFound) => match self.tasks.legacy() {
                Some(legacy) => legacy.legacy_store().get(id, who).await,
                None => Err(StoreError::NotFound),
            },
            other => other,
        };
        match found {
            Ok(record) => Ok(record.status.is_terminal()),
            Err(StoreError::NotFound) => Ok(true),
            Err(e) => Err(store_error(e)),
        }
    }

    /// A subscription to one task (`taskId`) sees nothing after its terminal
    /// status: a terminal task is never written again.
    fn is_last(&self, filter: &Filter, event: &EventOccurrence) -> bool {
        let one_task = filter.downcast_ref::<TaskFilter>().is_some_and(|f| f.task_id.is_some());
        let status = event.data.get("status").cloned().and_then(|s| serde_json::from_value::<TaskStatus>(s).ok());
        one_task && status.is_some_and(TaskStatus::is_terminal)
    }
}
