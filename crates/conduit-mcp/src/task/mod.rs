//! What a tool author uses to describe and drive a task.
//!
//! A tool that runs for long answers with a [`TaskSpec`] (inside
//! [`ToolOutput::Task`](crate::tool::ToolOutput::Task)): its lifetime, polling
//! interval and first status message, and where its work comes from
//! ([`TaskWork`]: a function started with the task id, a future the server
//! runs, work registered by name that any node can restart, or a
//! [`TransactionHook`] that commits with the task). A tool's
//! [`TaskSupport`] says whether it may, must or must not run as one.
//!
//! Work the server runs sees its task through a [`TaskContext`] (progress,
//! questions to the client mid-flight, cancellation); what fails there is a
//! [`WorkerError`], which carries the task store's [`StoreError`] when the
//! store was the cause. [`StoreTransaction`] and [`WrittenTask`] are what a
//! transaction hook is lent.
//!
//! The Tasks extension that stores and serves these tasks is
//! [`ext::tasks`](crate::ext::tasks).

mod context;
mod spec;
mod store_error;
mod transaction;

pub(crate) use context::TaskBackend;
pub use context::{TaskContext, WorkerError};
pub use spec::{ResumableFn, SpawnedWork, TaskSpec, TaskStart, TaskSupport, TaskWork, WorkFuture};
pub use store_error::StoreError;
pub use transaction::{HookError, StoreTransaction, TransactionHook, WrittenTask};
