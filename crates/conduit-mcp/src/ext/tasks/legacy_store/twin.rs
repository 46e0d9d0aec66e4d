//! Pairing the extension's [`Tasks`] with the legacy era's: a worker holding
//! either handle drives a task by id without knowing which era created it.

use super::handle::LegacyTasks;
use crate::ext::tasks::Tasks;

impl Tasks {
    /// Makes this handle's by-id worker calls (`status`, `cancelled`,
    /// `progress`, `complete`, `fail`, `require_input`) reach `legacy`'s
    /// tasks too, and tell `legacy`'s notifier and waiters about the change.
    /// Set once, on the extension's handle; later calls, and a pairing that
    /// would loop, are ignored.
    ///
    /// A task's id says which era's store it was made in, and a call reads that
    /// store first (one read; no miss in the other store before it). Ids never
    /// repeat across the two stores (32 random bytes each), so trying the other
    /// store next — for ids minted before the mark — can only find the one task
    /// the id names.
    pub fn drive_legacy(&self, legacy: &LegacyTasks) {
        let target = legacy.tasks();
        // Never a loop: not onto itself, nor onto a handle that falls back itself.
        if std::sync::Arc::ptr_eq(&self.inner, &target.inner) || target.inner.legacy.get().is_some() {
            return;
        }
        let _ = self.inner.legacy.set(target.clone());
    }

    /// Forgets the waker of task `id` (once nothing can wake it any more).
    pub(super) fn forget_waker(&self, id: &str) {
        if let Ok(mut w) = self.inner.wakers.lock() {
            w.remove(id);
        }
    }
}
