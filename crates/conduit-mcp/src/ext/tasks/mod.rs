//! The Tasks extension (`io.modelcontextprotocol/tasks`): tool calls that
//! answer at once with a task, polled with `tasks/get`, answered with
//! `tasks/update`, cancelled with `tasks/cancel`, and watched with
//! `notifications/tasks` on `subscriptions/listen`.
//!
//! It is off unless you install it. A tool returns [`TaskSpec`]; the server
//! stores the task (owned by the caller's principal) before it answers,
//! then your `start` function or `spawn`ed work drives it through the
//! [`Tasks`] handle.
//!
//! ```
//! use conduit_mcp::prelude::*;
//! use conduit_mcp::ext::tasks::{Tasks, TasksConfig, TaskSpecExt};
//! use std::time::Duration;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let tasks = Tasks::new(TasksConfig::enabled()).expect("valid config");
//! let server = Server::builder("builds", "1.0.0")
//!     .extension(tasks.extension())
//!     .tool(Tool::new("build", "Build a ref")
//!         .param("ref", Param::string("Git ref").required())
//!         .handle(|ctx, args| async move {
//!             let r = args["ref"].as_str().unwrap_or("main").to_owned();
//!             if !ctx.tasks_declared() {
//!                 return Ok(ToolOutput::Complete(CallToolResult::text(format!("built {r}"))));
//!             }
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

mod config;
mod janitor;
mod memory;
mod notifier;
mod routes;
mod store;
mod task;
mod worker;

pub use crate::tool::{TaskSpec, TaskSupport};
pub use config::{ConfigError, JanitorConfig, NotifierConfig, TasksConfig};
pub use janitor::{Recovery, recover, recover_own, sweep};
pub use memory::MemoryStore;
pub use notifier::{ListenNotifier, Notifier, TASKS_NOTIFICATION};
pub use routes::MAX_LISTEN_TASK_IDS;
pub use store::{Owner, StatusFields, StoreError, TaskStore, UpdateFn, apply_cancel, apply_status};
pub use task::{Lease, TaskFailure, TaskRecord, TaskStatus};
pub use worker::{TaskContext, TaskSpecExt, Tasks, WorkerError};

use crate::server::Extension;
use std::sync::Arc;

impl Tasks {
    /// The extension to install with `ServerBuilder::extension`.
    pub fn extension(&self) -> Arc<dyn Extension> {
        Arc::new(routes::TasksExtension { tasks: self.clone() })
    }
}

/// A task id: 43 url-safe characters from 32 random bytes.
pub fn new_task_id() -> String {
    routes::new_task_id()
}
