//! Following a task in the terminal (shared by `call` and `task wait`): the
//! progress line, the outcome on stdout, the exit code, and Ctrl-C, which
//! sends `tasks/cancel` and exits 130.

use crate::progress::Progress;
use crate::remote::{Exit, fail};
use conduit_mcp::client::sanitize::{json_safe, one_line, terminal_safe};
use conduit_mcp::client::{TaskEvent, TaskHandle, ToolOutcome};
use conduit_mcp::protocol::content::Content;
use conduit_mcp::protocol::tools::CallToolResult;

/// Prints a tool result (its text content, or the raw JSON) and returns the exit code.
pub(crate) fn print_result(r: &CallToolResult, json: bool) -> Exit {
    if json {
        println!("{}", json_safe(&r.to_value().to_string()));
    } else {
        for c in &r.content {
            match c {
                Content::Text { text, .. } => println!("{}", terminal_safe(text)),
                other => {
                    let v = serde_json::to_value(other).unwrap_or_default();
                    println!("[{} content]", one_line(v.get("type").and_then(|t| t.as_str()).unwrap_or("other")));
                }
            }
        }
        if r.content.is_empty()
            && let Some(s) = &r.structured_content
        {
            println!("{}", json_safe(&s.to_string()));
        }
    }
    if r.is_error == Some(true) { Exit::ToolError } else { Exit::Ok }
}

/// Prints how a tool call ended and returns the exit code.
pub(crate) fn print_outcome(o: &ToolOutcome, json: bool) -> Exit {
    match o {
        ToolOutcome::Completed(r) => print_result(r, json),
        ToolOutcome::Failed(e) => {
            eprintln!("error: the task failed: {} (code {})", one_line(&e.message), e.code);
            Exit::ToolError
        }
        ToolOutcome::Cancelled(m) => {
            eprintln!("cancelled{}", m.as_deref().map(|m| format!(": {}", one_line(m))).unwrap_or_default());
            Exit::Cancelled
        }
        _ => Exit::Usage,
    }
}

/// Follows `task` to the end with a progress line; Ctrl-C cancels it.
pub(crate) async fn follow(task: &TaskHandle, progress: &Progress, json: bool) -> Exit {
    let mut events = task.follow();
    loop {
        let ev = tokio::select! {
            ev = events.next() => ev,
            _ = tokio::signal::ctrl_c() => {
                progress.finish();
                eprintln!("interrupted: cancelling task {}", one_line(task.id()));
                if let Err(e) = task.cancel().await {
                    eprintln!("error: could not cancel: {e}");
                }
                return Exit::Interrupted;
            }
        };
        match ev {
            Some(Ok(TaskEvent::Status(t))) => progress.task(&t),
            Some(Ok(TaskEvent::InputRequested(_))) => progress.show("input_required: the server asks for input".into()),
            Some(Ok(TaskEvent::Finished(o))) => {
                progress.finish();
                return print_outcome(&o, json);
            }
            Some(Ok(_)) => {}
            Some(Err(e)) => {
                progress.finish();
                let code = fail(&e);
                if matches!(e, conduit_mcp::client::ClientError::Input(_)) {
                    eprintln!(
                        "the task is left as it is: `conduit-mcp task wait` resumes it ({})",
                        one_line(task.id())
                    );
                }
                return code;
            }
            None => {
                progress.finish();
                eprintln!("error: lost track of the task");
                return Exit::Usage;
            }
        }
    }
}
