//! `notifications/tasks/status`: while a legacy task lives, each change of its
//! status (or status message) is sent to the session that created it — its
//! stand-alone stream on HTTP, the process output on stdio — by the node that
//! created it. The notification is optional in 2025-11-25: a client that only
//! polls `tasks/get` or waits on `tasks/result` loses nothing without it.

use super::record;
use crate::ext::tasks::runtime::LegacyTasks;
use crate::ext::tasks::store::{Owner, TaskRecord};
use crate::protocol::jsonrpc::Message;
use crate::protocol::methods::TASKS_STATUS;
use crate::protocol::tasks::TaskStatus;
use crate::session::LegacySession;
use std::sync::{Arc, Weak};

/// What a notification reports: the status on this era and its message.
fn seen(rec: &TaskRecord) -> (TaskStatus, Option<String>) {
    (record::status(rec), record::status_message(rec))
}

/// Follows task `rec` until it is terminal, gone, or its session ends, notifying
/// `session` of every change after the one it was created with.
pub(super) fn follow(tasks: LegacyTasks, rec: &TaskRecord, session: &Arc<LegacySession>) {
    let (id, owner) = (rec.task_id.clone(), rec.owner.clone());
    let session: Weak<LegacySession> = Arc::downgrade(session);
    let mut last = seen(rec);
    if rec.is_terminal() {
        return;
    }
    tokio::spawn(async move {
        loop {
            let changed = tasks.wait(&id, Owner::Is(owner.as_deref()), |r| seen(r) != last).await;
            let Ok(rec) = changed else { return };
            let Some(s) = session.upgrade() else { return };
            let now = seen(&rec);
            if now != last {
                s.send_unsolicited(Message::notification(TASKS_STATUS, record::task(&rec).into_value()));
                last = now;
            }
            if rec.is_terminal() {
                return;
            }
        }
    });
}
