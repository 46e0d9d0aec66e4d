//! `conduit-mcp task get|wait|cancel URL TASK_ID` and
//! `conduit-mcp watch URL TASK_ID...` (`task list`, `task wait URL --all`
//! and `task forget` read the ledger: `ledger_cmd.rs`).

use crate::call_cmd::InputArgs;
use crate::follow_ui::{follow, print_outcome};
use crate::progress::Progress;
use crate::remote::{Exit, Remote, fail, usage};
use conduit_mcp::client::sanitize::{json_safe, one_line};
use conduit_mcp::client::{NoInput, TaskEvent, ToolOutcome};
use conduit_mcp::protocol::tasks::Task;
use futures_util::StreamExt;
use std::sync::Arc;

/// `task` subcommands.
#[derive(clap::Subcommand, Debug)]
pub(crate) enum TaskCommand {
    /// Print the task's current state (`tasks/get`).
    Get(TaskArgs),
    /// Follow the task to its end from its id, with the same progress and prompts as `call`.
    Wait(WaitArgs),
    /// Ask the server to cancel the task (`tasks/cancel`).
    Cancel(TaskArgs),
    /// List the tasks in the ledger (every server, or URL's), their status refreshed with `tasks/get`.
    List(crate::ledger_cmd::ListArgs),
    /// Remove a task from the ledger (the task itself is not cancelled).
    Forget(crate::ledger_cmd::ForgetArgs),
}

/// `task get|cancel` arguments.
#[derive(clap::Args, Debug)]
pub(crate) struct TaskArgs {
    /// `URL TASK_ID` (no URL with `--stdio`).
    #[arg(value_name = "URL TASK_ID")]
    positionals: Vec<String>,
    /// Task ids that start with `-` (`main` moves them here; see `task_ids.rs`).
    #[arg(long = crate::task_ids::FLAG, hide = true, allow_hyphen_values = true)]
    dash_ids: Vec<String>,
    #[command(flatten)]
    remote: Remote,
}

/// `task wait` arguments.
#[derive(clap::Args, Debug)]
pub(crate) struct WaitArgs {
    #[command(flatten)]
    pub(crate) input: InputArgs,
    /// Every unfinished task the ledger holds for URL, one after the other (instead of TASK_ID).
    #[arg(long)]
    pub(crate) all: bool,
    /// `URL TASK_ID` (no URL with `--stdio`; no TASK_ID with `--all`).
    #[arg(value_name = "URL TASK_ID")]
    pub(crate) positionals: Vec<String>,
    /// Task ids that start with `-` (`main` moves them here; see `task_ids.rs`).
    #[arg(long = crate::task_ids::FLAG, hide = true, allow_hyphen_values = true)]
    dash_ids: Vec<String>,
    #[command(flatten)]
    pub(crate) ledger: crate::ledger_args::LedgerArgs,
    #[command(flatten)]
    pub(crate) remote: Remote,
}

/// `watch` arguments.
#[derive(clap::Args, Debug)]
pub(crate) struct WatchArgs {
    /// `URL TASK_ID...` (no URL with `--stdio`).
    #[arg(value_name = "URL TASK_ID")]
    positionals: Vec<String>,
    /// Task ids that start with `-` (`main` moves them here; see `task_ids.rs`).
    #[arg(long = crate::task_ids::FLAG, hide = true, allow_hyphen_values = true)]
    dash_ids: Vec<String>,
    #[command(flatten)]
    remote: Remote,
}

fn one_id(rest: Vec<String>) -> Result<String, Exit> {
    match <[String; 1]>::try_from(rest) {
        Ok([id]) => Ok(id),
        Err(_) => Err(usage("expected exactly one TASK_ID")),
    }
}

/// Runs a `task` subcommand.
pub(crate) async fn run(cmd: TaskCommand) -> Exit {
    match cmd {
        TaskCommand::Get(a) => get_or_cancel(a, false).await,
        TaskCommand::Cancel(a) => get_or_cancel(a, true).await,
        TaskCommand::Wait(a) if a.all => crate::ledger_cmd::wait_all(a).await,
        TaskCommand::Wait(a) => wait(a).await,
        TaskCommand::List(a) => crate::ledger_cmd::list(a).await,
        TaskCommand::Forget(a) => crate::ledger_cmd::forget(a).await,
    }
}

async fn get_or_cancel(a: TaskArgs, cancel: bool) -> Exit {
    let (url, mut rest) = match a.remote.split(a.positionals) {
        Ok(x) => x,
        Err(e) => return e,
    };
    rest.extend(a.dash_ids);
    let id = match one_id(rest) {
        Ok(id) => id,
        Err(e) => return e,
    };
    let client = match a.remote.connect(url.as_deref(), NoInput).await {
        Ok(c) => c,
        Err(e) => return e,
    };
    let task = client.task(id);
    if cancel {
        return match task.cancel().await {
            Ok(()) => {
                eprintln!("cancellation requested");
                Exit::Ok
            }
            Err(e) => fail(&e),
        };
    }
    match task.get().await {
        Ok(d) if a.remote.json => {
            println!("{}", json_safe(&serde_json::to_string(&d).unwrap_or_default()));
            Exit::Ok
        }
        Ok(d) => {
            println!("{}", line(&d.task));
            if let Some(Ok(o)) = ToolOutcome::of_task(&d) { print_outcome(&o, false) } else { Exit::Ok }
        }
        Err(e) => fail(&e),
    }
}

pub(crate) fn line(t: &Task) -> String {
    let msg = t.status_message.as_deref().map(|m| format!("  {}", one_line(m))).unwrap_or_default();
    format!("{}  {}{msg}", one_line(&t.task_id), t.status.as_str())
}

async fn wait(a: WaitArgs) -> Exit {
    let (url, mut rest) = match a.remote.split(a.positionals) {
        Ok(x) => x,
        Err(e) => return e,
    };
    rest.extend(a.dash_ids);
    let id = match one_id(rest) {
        Ok(id) => id,
        Err(e) => return e,
    };
    let progress = Arc::new(Progress::new());
    let handler = match a.input.terminal(progress.clone()) {
        Ok(h) => h,
        Err(e) => return e,
    };
    // The ledger notes how the task ends, when it holds it.
    let ledger = if url.is_some() {
        match a.ledger.open().await {
            Ok(l) => l,
            Err(e) => return e,
        }
    } else {
        None
    };
    let client = match a.remote.connect_recording(url.as_deref(), handler, ledger).await {
        Ok(c) => c,
        Err(e) => return e,
    };
    follow(&client.task(id), &progress, a.remote.json).await
}

/// Runs `watch`: one line (or JSON object) per change, until every task is terminal.
pub(crate) async fn watch(a: WatchArgs) -> Exit {
    let (url, mut ids) = match a.remote.split(a.positionals) {
        Ok(x) => x,
        Err(e) => return e,
    };
    ids.extend(a.dash_ids);
    if ids.is_empty() {
        return usage("expected at least one TASK_ID");
    }
    let client = match a.remote.connect(url.as_deref(), NoInput).await {
        Ok(c) => c,
        Err(e) => return e,
    };
    let streams = ids.iter().map(|id| client.task(id.clone()).watch()).collect::<Vec<_>>();
    let mut all = futures_util::stream::select_all(streams);
    let mut exit = Exit::Ok;
    while let Some(ev) = tokio::select! {
        ev = all.next() => ev,
        _ = tokio::signal::ctrl_c() => return Exit::Interrupted,
    } {
        match ev {
            Ok(TaskEvent::Status(t)) if a.remote.json => {
                println!("{}", json_safe(&serde_json::to_string(&t).unwrap_or_default()))
            }
            Ok(TaskEvent::Status(t)) => println!("{}", line(&t)),
            Ok(TaskEvent::InputRequested(keys)) if !a.remote.json => {
                println!("  asks for input: {}", one_line(&keys.join(", ")))
            }
            Ok(_) => {}
            Err(e) => exit = fail(&e),
        }
    }
    exit
}
