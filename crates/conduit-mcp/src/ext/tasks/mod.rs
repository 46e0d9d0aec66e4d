//! The Tasks extension (`io.modelcontextprotocol/tasks`): tool calls that
//! answer at once with a task, polled with `tasks/get`, answered with
//! `tasks/update`, cancelled with `tasks/cancel`, and watched with
//! `notifications/tasks` on `subscriptions/listen`.
//!
//! It is off unless you install it with an enabled [`TasksConfig`]. A tool
//! returns a [`TaskSpec`](crate::tool::TaskSpec); when the request declared
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
// The guide (docs/tasks.md), its examples compiled as doc tests.
#![doc = include_str!("../../../guides/tasks.md")]

mod answers;
mod config;
pub(crate) mod config_toml;
mod create_rate;
mod creation;
mod extension;
mod janitor;
pub mod legacy_store;
pub mod limits;
mod memory;
mod notifier;
mod recovery;
mod rpc_error;
mod runtime;
mod store;
mod task;
mod task_id;
mod terminal;
mod worker;

pub use crate::tool::{HookError, StoreTransaction, TransactionHook, WrittenTask};
pub use config::{JanitorConfig, NotifierConfig, TasksConfig};
pub use extension::MAX_LISTEN_TASK_IDS;
pub use janitor::sweep;
pub use legacy_store::LegacyTasks;
pub use memory::MemoryStore;
pub use notifier::{ListenNotifier, Notifier};
pub use recovery::{Recovery, recover, recover_own};
pub use store::{CreateCaps, Owner, StatusFields, StoreError, TaskStore, TerminalBound, UpdateFn};
pub use task::{Lease, TaskFailure, TaskRecord};
pub use task_id::new_task_id;
pub use worker::Tasks;

pub(crate) use answers::{Answered, answer};
pub(crate) use creation::{Requested, create_task};
pub(crate) use janitor::start_janitor;
pub(crate) use rpc_error::store_error;
pub(crate) use terminal::ended;

use crate::server::{Extension, IntoExtension};
use std::sync::Arc;

/// Installs what the handle serves when its configuration enables it, and
/// nothing otherwise: the Tasks extension (`2026-07-28`), and the
/// `2025-11-25` tasks wire over its legacy twin (the paired one, or one made
/// now in memory).
impl IntoExtension for Tasks {
    fn into_extensions(self) -> Vec<Arc<dyn Extension>> {
        if !self.config().enabled {
            return Vec::new();
        }
        let twin = self.legacy_twin();
        let mut installed = vec![Arc::new(extension::TasksExtension { tasks: self }) as Arc<dyn Extension>];
        installed.extend(twin.into_iter().flat_map(IntoExtension::into_extensions));
        installed
    }
}
