//! Change notification: the `Notifier` trait and the default `ListenNotifier`.

use crate::ext::tasks::store::TaskRecord;
use crate::protocol::methods::TASKS_NOTIFICATION;
use crate::subscriptions::Subscription;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Told about every task change, right after the store write, in the task
/// that made it. A panic in it is logged and swallowed.
///
/// A notifier that delivers to clients must deliver only to the record's
/// owner. To keep the default listen delivery, call `listen.task_changed(task)`.
pub trait Notifier: Send + Sync + 'static {
    /// A task changed; `listen` is the built-in listen-stream delivery.
    fn task_changed(&self, task: &TaskRecord, listen: &ListenNotifier);
}

/// Delivers `notifications/tasks` to the `subscriptions/listen` streams that
/// named a task, and only to those whose principal owns it.
#[derive(Clone, Default)]
pub struct ListenNotifier {
    index: Arc<Mutex<HashMap<String, Vec<Watch>>>>,
}

/// One stream watching one task, and the task version it has already seen
/// (read when it subscribed, then each one sent): an older or repeated
/// change — a cross-node relay arriving late — is not sent again.
struct Watch {
    sub: Subscription,
    seen: u64,
}

impl std::fmt::Debug for ListenNotifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListenNotifier").finish_non_exhaustive()
    }
}

impl ListenNotifier {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `sub` for `task_id` (the caller checked ownership, reading
    /// the task at version `seen`), until the stream closes or the task ends.
    pub(crate) fn watch(&self, task_id: &str, sub: &Subscription, seen: u64) {
        if let Ok(mut idx) = self.index.lock() {
            idx.entry(task_id.to_owned()).or_default().push(Watch { sub: sub.clone(), seen });
        }
        let (index, id, key) = (Arc::downgrade(&self.index), task_id.to_owned(), sub.key());
        sub.on_close(move || {
            let Some(index) = index.upgrade() else { return };
            let mut idx = index.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(subs) = idx.get_mut(&id) {
                subs.retain(|w| w.sub.key() != key);
                if subs.is_empty() {
                    idx.remove(&id);
                }
            }
        });
    }

    /// Forgets every stream watching `task_id` (the task is gone: swept or deleted).
    pub fn forget(&self, task_id: &str) {
        if let Ok(mut idx) = self.index.lock() {
            idx.remove(task_id);
        }
    }

    /// How many (task, stream) entries the index keeps, open or not yet
    /// forgotten: an operator's gauge, and what a leak would grow.
    pub fn entries(&self) -> usize {
        self.index.lock().map(|i| i.values().map(Vec::len).sum()).unwrap_or(0)
    }

    /// The ids of the tasks some open stream watches (a cross-node notifier
    /// re-reads them after it reconnects, to catch up on changes it missed).
    pub fn watched(&self) -> Vec<String> {
        self.index
            .lock()
            .map(|i| {
                i.iter().filter(|(_, subs)| subs.iter().any(|w| !w.sub.is_closed())).map(|(id, _)| id.clone()).collect()
            })
            .unwrap_or_default()
    }

    /// How many streams watch `task_id`.
    pub fn watchers(&self, task_id: &str) -> usize {
        self.index
            .lock()
            .map(|i| i.get(task_id).map_or(0, |v| v.iter().filter(|w| !w.sub.is_closed()).count()))
            .unwrap_or(0)
    }

    /// Sends the task's current state to its watchers; forgets them once the task is terminal.
    pub fn task_changed(&self, task: &TaskRecord) {
        let targets: Vec<Subscription> = {
            let Ok(mut idx) = self.index.lock() else {
                return;
            };
            let Some(subs) = idx.get_mut(&task.task_id) else {
                return;
            };
            subs.retain(|w| !w.sub.is_closed());
            let mut out = Vec::new();
            for w in subs.iter_mut().filter(|w| w.seen < task.version) {
                w.seen = task.version;
                out.push(w.sub.clone());
            }
            if task.is_terminal() || subs.is_empty() {
                idx.remove(&task.task_id);
            }
            out
        };
        if targets.is_empty() {
            return;
        }
        let params = task.detailed();
        for s in targets.iter().filter(|s| s.owner() == task.owner.as_deref()) {
            s.send(TASKS_NOTIFICATION, params.clone());
        }
    }
}

impl Notifier for ListenNotifier {
    fn task_changed(&self, task: &TaskRecord, _listen: &ListenNotifier) {
        ListenNotifier::task_changed(self, task);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::jsonrpc::RequestId;
    use crate::subscriptions::{CoreFilter, Hub};

    #[test]
    fn a_change_older_than_what_the_stream_saw_is_not_sent() {
        let hub = Arc::new(Hub::default());
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let (sub, _reg) = hub.register(RequestId::Number(1), None, CoreFilter::default(), tx);
        let listen = ListenNotifier::new();
        let mut rec = TaskRecord::new("t1".into(), None, 0, None);
        rec.version = 2;
        listen.watch("t1", &sub, 2);
        // A relayed change the stream already saw when it subscribed, then a repeat.
        listen.task_changed(&rec);
        rec.version = 1;
        listen.task_changed(&rec);
        assert!(rx.try_recv().is_err(), "nothing newer than version 2 happened");
        rec.version = 3;
        listen.task_changed(&rec);
        listen.task_changed(&rec);
        assert!(rx.try_recv().is_ok(), "version 3 is sent");
        assert!(rx.try_recv().is_err(), "and only once");
        assert_eq!(listen.entries(), 1, "a live task stays watched");
    }
}
