//! [`StoreError`]: why a task store operation failed. It is part of the task
//! vocabulary, below the Tasks extension, because a worker's [`WorkerError`]
//! carries it as its source.
//!
//! [`WorkerError`]: super::WorkerError

use std::fmt;
use std::sync::Arc;

/// Why a store operation failed.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum StoreError {
    /// No such task, not the caller's, or expired. Deliberately one variant.
    NotFound,
    /// The task is terminal and cannot change.
    Terminal,
    /// `create` hit the row cap.
    TaskLimitReached,
    /// `create` hit the per-principal cap: the new task's owner holds
    /// [`CreateCaps::max_rows_per_owner`](crate::ext::tasks::CreateCaps::max_rows_per_owner) tasks already.
    OwnerLimitReached,
    /// A task with this id exists already.
    Duplicate,
    /// The update function refused the change (its reason).
    Refused(String),
    /// A list cursor that this store did not issue for this caller, or that
    /// was altered (`-32602` on the wire). Only listing stores return it.
    InvalidCursor,
    /// A [`TransactionHook`](super::TransactionHook) failed: its transaction
    /// rolled back, so neither the task write nor the hook's rows exist.
    #[non_exhaustive]
    Hook {
        /// The hook's error, as text.
        message: String,
        /// The hook's error itself.
        source: Arc<dyn std::error::Error + Send + Sync>,
    },
    /// The store cannot do what was asked (a transaction hook on a store
    /// without transactions); the operation changed nothing.
    Unsupported(String),
    /// The backend failed (database down, I/O, ...). Built with
    /// [`StoreError::backend`] or [`StoreError::backend_message`].
    #[non_exhaustive]
    Backend {
        /// What failed, whole: the operation and the backend's own words, so a
        /// log line of this error alone says everything.
        message: String,
        /// The backend's error, for programs that inspect it (downcast it to
        /// the driver's type); [`std::error::Error::source`] returns it.
        source: Option<Arc<dyn std::error::Error + Send + Sync>>,
    },
}

impl StoreError {
    /// A backend failure described by `message`, caused by `source`.
    pub fn backend(message: impl Into<String>, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        StoreError::Backend { message: message.into(), source: Some(Arc::new(source)) }
    }

    /// A backend failure with no underlying error to carry.
    pub fn backend_message(message: impl Into<String>) -> Self {
        StoreError::Backend { message: message.into(), source: None }
    }

    /// A [`TransactionHook`](super::TransactionHook)'s failure.
    pub fn hook(error: super::HookError) -> Self {
        StoreError::Hook { message: error.to_string(), source: Arc::from(error) }
    }

    /// The refusal of a store without transactions to run a hook.
    pub(crate) fn no_transactions(store: &str) -> Self {
        StoreError::Unsupported(format!(
            "the {store} store cannot write a task and other rows in one transaction (use a SQL store)"
        ))
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::NotFound => f.write_str("task not found"),
            StoreError::Terminal => f.write_str("task is terminal"),
            StoreError::TaskLimitReached => f.write_str("task limit reached"),
            StoreError::OwnerLimitReached => f.write_str("task limit reached for this principal"),
            StoreError::Duplicate => f.write_str("task id already exists"),
            StoreError::Refused(reason) => write!(f, "update refused: {reason}"),
            StoreError::InvalidCursor => f.write_str("invalid list cursor"),
            StoreError::Hook { message, .. } => write!(f, "transaction hook failed: {message}"),
            StoreError::Unsupported(what) => write!(f, "not supported by this store: {what}"),
            StoreError::Backend { message, .. } => write!(f, "store backend error: {message}"),
        }
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreError::Backend { source: Some(source), .. } => Some(&**source),
            StoreError::Hook { source, .. } => Some(&**source),
            _ => None,
        }
    }
}

/// Errors are equal when their variants and messages are; a backend error's
/// `source` is not compared (errors have no equality of their own).
impl PartialEq for StoreError {
    fn eq(&self, other: &Self) -> bool {
        use StoreError::*;
        match (self, other) {
            (NotFound, NotFound) | (Terminal, Terminal) | (TaskLimitReached, TaskLimitReached) => true,
            (Duplicate, Duplicate) | (InvalidCursor, InvalidCursor) | (OwnerLimitReached, OwnerLimitReached) => true,
            (Refused(a), Refused(b)) => a == b,
            (Backend { message: a, .. }, Backend { message: b, .. }) => a == b,
            (Hook { message: a, .. }, Hook { message: b, .. }) => a == b,
            (Unsupported(a), Unsupported(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for StoreError {}

#[cfg(test)]
mod tests {
    use super::StoreError;
    use crate::task::WorkerError;
    use std::error::Error as _;

    #[test]
    fn a_worker_error_keeps_the_store_error_and_its_cause() {
        let cause = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset by peer");
        let e = WorkerError::from(StoreError::backend("update the task: reset by peer", cause));
        assert_eq!(e.to_string(), "task store failed: store backend error: update the task: reset by peer");
        let store = e.source().and_then(|s| s.downcast_ref::<StoreError>()).expect("the store's error");
        assert!(matches!(store, StoreError::Backend { .. }));
        let io = store.source().and_then(|s| s.downcast_ref::<std::io::Error>()).expect("the driver's error");
        assert_eq!(io.kind(), std::io::ErrorKind::ConnectionReset);
        assert_eq!(WorkerError::from(StoreError::NotFound), WorkerError::NotFound);
    }
}
