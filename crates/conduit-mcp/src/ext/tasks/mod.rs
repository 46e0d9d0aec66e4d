//! The Tasks extension (`io.modelcontextprotocol/tasks`): tool calls that
//! answer at once with a task, polled with `tasks/get`, answered with
//! `tasks/update`, cancelled with `tasks/cancel`, and watched with
//! `notifications/tasks` on `subscriptions/listen`.
//!
//! It is off unless you install it with an enabled [`TasksConfig`]. A tool
//! returns a [`TaskSpec`](crate::task::TaskSpec); when the request declared
//! the extension the server stores the task (owned by the caller's principal)
//! before it answers, then your `start` function or `spawn`ed work drives it
//! through the [`Tasks`] handle. When the request did not declare it, `spawn`ed
//! work runs inline and the call answers with its result: a tool needs no
//! branch for clients without tasks.
//!
//! ```
//! use conduit_mcp::prelude::*;
//! use std::time::Duration;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let tasks = Tasks::new(TasksConfig::enabled()).expect("valid config");
//! let server = Server::builder("builds", "1.0.0")
//!     .extension(tasks.clone())
//!     .tool(Tool::new("build", "Build a ref")
//!         .param("ref", Param::string("Git ref").required())
//!         .handle(|_ctx, args| async move {
//!             let r = args["ref"].as_str().unwrap_or("main").to_owned();
//!             Ok(ToolOutput::Task(TaskSpec::new()
//!                 .ttl(Duration::from_secs(1800))
//!                 .poll_interval(Duration::from_secs(2))
//!                 .status_message("Queued")
//!                 .spawn(move |task| async move {
//!                     task.progress(format!("Building {r}")).await.ok();
//!                     Ok(CallToolResult::text(format!("built {r}")))
//!                 })))
//!         }))
//!     .build()
//!     .expect("valid server");
//! # let _ = server;
//! # }
//! ```
//!
//! The user guide is `docs/tasks.md`.
//!
//! The extension is built in three rooms: `store` (the [`TaskStore`]
//! contract, the [`TaskRecord`] it keeps, [`limits`], [`MemoryStore`] and the
//! `2025-11-25` era's listable store), `runtime` (the [`Tasks`] handle, work
//! launched under leases, recovery ([`recover`]), the janitor, the [`Notifier`],
//! [`TasksConfig`], and [`LegacyTasks`]) and `wire` (the extension's methods,
//! task creation and answers for both eras). The wire depends on the runtime,
//! the runtime on the store, never the other way. What a tool author
//! describes and drives a task with is [`crate::task`].
//!
// The guide (docs/tasks.md), its examples compiled as doc tests.
#![doc = include_str!("../../../guides/tasks.md")]

pub(crate) mod runtime;
pub(crate) mod store;
pub(crate) mod wire;

pub use runtime::{
    JanitorConfig, LegacyTasks, ListenNotifier, Notifier, NotifierConfig, Recovery, Tasks, TasksConfig, recover,
    recover_own, sweep,
};
pub use store::limits;
pub use store::{
    ChangePage, ChangeQuery, CreateCaps, Lease, MemoryStore, Owner, StatusFields, TaskChange, TaskChangeFeed,
    TaskFailure, TaskRecord, TaskStore, TerminalBound, UpdateFn, new_task_id,
};
pub use wire::MAX_LISTEN_TASK_IDS;

pub mod legacy_store {
    //! Legacy tasks: the task model of protocol revision `2025-11-25` (the seed's
    //! `ConduitMcp.Tasks`), stored apart from the extension's tasks.
    //!
    //! The legacy era's tasks are the same [`TaskRecord`](super::TaskRecord)s,
    //! driven by the same worker calls, in a store of their own: a
    //! [`LegacyTaskStore`] is a [`TaskStore`](super::TaskStore) that can also
    //! [`list`](LegacyTaskStore::list) an owner's tasks, which the legacy
    //! `tasks/list` needs and the modern contract forbids. Pages are sealed with a
    //! [`CursorKey`]: a cursor that was altered or issued to someone else is
    //! refused with [`StoreError::InvalidCursor`](crate::task::StoreError::InvalidCursor)
    //! (`-32602` on the wire).
    //!
    //! Here: the store trait and its memory store, the sealed cursor (the
    //! extension's `store` room), and [`LegacyTasks`], the Tasks runtime over
    //! such a store (plus `list` and `wait`) that a [`Tasks`](super::Tasks)
    //! handle owns as its twin (the `runtime` room). The `2025-11-25` wire
    //! (`tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel`) is
    //! `ext::legacy_task_wire`'s.

    pub use super::runtime::LegacyTasks;
    pub use super::store::legacy_store::{
        CursorKey, DEFAULT_PAGE_SIZE, LegacyTaskStore, ListPosition, MAX_PAGE_SIZE, MemoryLegacyStore, TaskPage,
        clamp_page_size,
    };
}
