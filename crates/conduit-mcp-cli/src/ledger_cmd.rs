//! The commands that read the task ledger: `task list [URL]`, `task wait
//! URL --all` and `task forget TASK_ID`. Everything from the ledger or a
//! server is printed escaped (`sanitize`), task ids included.

use crate::follow_ui::follow;
use crate::ledger_args::{LedgerArgs, now_ms};
use crate::progress::Progress;
use crate::remote::{Exit, Remote, fail, usage};
use crate::task_cmd::WaitArgs;
use conduit_mcp::client::ledger::{LedgerEntry, LedgerFilter, SqliteLedger, TaskLedger, server_key};
use conduit_mcp::client::sanitize::{json_safe, one_line};
use conduit_mcp::client::{NoInput, Unfinished};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;

/// `task list` arguments.
#[derive(clap::Args, Debug)]
pub(crate) struct ListArgs {
    /// `[URL]`: only this server's tasks.
    #[arg(value_name = "URL")]
    positionals: Vec<String>,
    /// Show what the ledger holds without asking the servers (`tasks/get`).
    #[arg(long)]
    offline: bool,
    #[command(flatten)]
    ledger: LedgerArgs,
    #[command(flatten)]
    remote: Remote,
}

/// `task forget` arguments.
#[derive(clap::Args, Debug)]
pub(crate) struct ForgetArgs {
    /// `TASK_ID`.
    #[arg(value_name = "TASK_ID")]
    positionals: Vec<String>,
    /// Task ids that start with `-` (`main` moves them here; see `task_ids.rs`).
    #[arg(long = crate::task_ids::FLAG, hide = true, allow_hyphen_values = true)]
    dash_ids: Vec<String>,
    #[command(flatten)]
    ledger: LedgerArgs,
}

/// The ledger, which these commands cannot do without.
async fn required(args: &LedgerArgs) -> Result<SqliteLedger, Exit> {
    match args.open().await? {
        Some(l) => Ok(l),
        None => Err(usage("the task ledger is off (CONDUIT_MCP_LEDGER=off)")),
    }
}

/// How long ago `ms` was, in the largest whole unit.
fn age(ms: i64, now: i64) -> String {
    let s = (now - ms).max(0) / 1000;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86_400 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86_400),
    }
}

/// What the list shows as an entry's state.
fn state(e: &LedgerEntry, mine: Option<&str>) -> String {
    match (&e.lost, mine) {
        (Some(why), _) => format!("lost: {why}"),
        (None, _) if e.in_flight => "calling (no answer yet)".to_owned(),
        (None, Some(p)) if p != e.principal && e.is_unfinished() => {
            format!("{} (another principal's: not refreshed)", e.status.as_str())
        }
        _ => e.status.as_str().to_owned(),
    }
}

/// Runs `task list [URL]`: each server's unfinished tasks are refreshed
/// with `tasks/get` first (those it no longer knows become lost), then every
/// entry is printed: server, tool, age, status, task id.
pub(crate) async fn list(a: ListArgs) -> Exit {
    let server = match a.positionals.as_slice() {
        [] => None,
        [url] => Some(server_key(url)),
        _ => return usage("expected at most one URL"),
    };
    let ledger = match required(&a.ledger).await {
        Ok(l) => l,
        Err(e) => return e,
    };
    let mut filter = LedgerFilter::all();
    filter.server = server;
    let entries = match ledger.list(&filter).await {
        Ok(e) => e,
        Err(e) => return usage(e),
    };
    let mut by_server: BTreeMap<String, Vec<&LedgerEntry>> = BTreeMap::new();
    for e in &entries {
        by_server.entry(e.server.clone()).or_default().push(e);
    }
    let mut principals: BTreeMap<String, String> = BTreeMap::new();
    let mut exit = Exit::Ok;
    for (url, group) in &by_server {
        if a.offline || !group.iter().any(|e| e.is_unfinished()) {
            continue;
        }
        // A connection per server, with the credentials any command would use there.
        match a.remote.connect_recording(Some(url), NoInput, Some(ledger.clone())).await {
            Ok(client) => {
                if let Ok(p) = client.principal().await {
                    principals.insert(url.clone(), p);
                }
                if let Err(e) = client.unfinished().await {
                    eprint!("{}: not refreshed: ", one_line(url));
                    exit = fail(&e);
                }
            }
            Err(_) => {
                eprintln!("{}: not refreshed (the server could not be reached)", one_line(url));
                exit = Exit::Usage;
            }
        }
    }
    let entries = match ledger.list(&filter).await {
        Ok(e) => e,
        Err(e) => return usage(e),
    };
    let now = now_ms();
    for e in &entries {
        let mine = principals.get(&e.server).map(String::as_str);
        if a.remote.json {
            let v = json!({ "server": e.server, "tool": e.tool, "taskId": e.task_id, "status": e.status.as_str(),
                            "lost": e.lost, "createdMs": e.created_ms, "principal": e.principal,
                            "version": e.version, "resumable": e.resumable, "inFlight": e.in_flight });
            println!("{}", json_safe(&v.to_string()));
        } else {
            println!(
                "{}  {}  {}  {}  {}",
                one_line(&e.server),
                one_line(&e.tool),
                age(e.created_ms, now),
                one_line(&state(e, mine)),
                // A call in flight has no task id, only the client's own key.
                if e.in_flight { std::borrow::Cow::Borrowed("-") } else { one_line(&e.task_id) }
            );
        }
    }
    if entries.is_empty() && !a.remote.json {
        eprintln!("no tasks in the ledger");
    }
    exit
}

/// Runs `task forget TASK_ID`.
pub(crate) async fn forget(a: ForgetArgs) -> Exit {
    let mut ids = a.positionals;
    ids.extend(a.dash_ids);
    let [id] = ids.as_slice() else { return usage("expected exactly one TASK_ID") };
    let ledger = match required(&a.ledger).await {
        Ok(l) => l,
        Err(e) => return e,
    };
    match ledger.forget(id).await {
        Ok(0) => usage(format!("no task {} in the ledger", one_line(id))),
        Ok(_) => {
            eprintln!("forgot task {} (it was not cancelled)", one_line(id));
            Exit::Ok
        }
        Err(e) => usage(e),
    }
}

/// Runs `task wait URL --all`: every unfinished task of the ledger for URL
/// (and this principal), oldest first, one after the other, each with the
/// progress line and prompts of `call`. Lost ones are named first, with why.
/// Exits 0 when every task completed, else with the code of the last that
/// did not (2 for a lost one); Ctrl-C cancels the task being followed and stops.
pub(crate) async fn wait_all(a: WaitArgs) -> Exit {
    let (url, rest) = match a.remote.split(a.positionals) {
        Ok(x) => x,
        Err(e) => return e,
    };
    if url.is_none() {
        return usage("--all needs the server's URL (a stdio server's tasks are not in the ledger)");
    }
    if !rest.is_empty() {
        return usage("--all takes no TASK_ID");
    }
    let ledger = match required(&a.ledger).await {
        Ok(l) => l,
        Err(e) => return e,
    };
    let progress = Arc::new(Progress::new());
    let handler = match a.input.terminal(progress.clone()) {
        Ok(h) => h,
        Err(e) => return e,
    };
    let client = match a.remote.connect_recording(url.as_deref(), handler, Some(ledger)).await {
        Ok(c) => c,
        Err(e) => return e,
    };
    let found = match client.unfinished().await {
        Ok(f) => f,
        Err(e) => return fail(&e),
    };
    let mut exit = Exit::Ok;
    let mut resumed = Vec::new();
    for u in found {
        match u {
            Unfinished::Lost { entry, reason } => {
                let id = if entry.in_flight { "(no task id)".into() } else { one_line(&entry.task_id) };
                eprintln!("lost: {} {id}: {}", one_line(&entry.tool), one_line(&reason));
                exit = Exit::Usage;
            }
            Unfinished::Resumed { entry, task } => resumed.push((entry, task)),
            _ => {}
        }
    }
    if resumed.is_empty() && exit == Exit::Ok {
        eprintln!("no unfinished tasks in the ledger for {}", one_line(url.as_deref().unwrap_or_default()));
    }
    let n = resumed.len();
    let now = now_ms();
    for (i, (entry, task)) in resumed.into_iter().enumerate() {
        progress.restart();
        progress.show(format!(
            "[{}/{n}] {} {} (created {} ago)",
            i + 1,
            entry.tool,
            entry.task_id,
            age(entry.created_ms, now)
        ));
        match follow(&task, &progress, a.remote.json).await {
            Exit::Ok => {}
            Exit::Interrupted => return Exit::Interrupted,
            other => exit = other,
        }
    }
    exit
}
