//! A tool that runs as a task: it answers at once with a task id, reports
//! progress while it works, and stops half way to ask the client a question.
//!
//! ```text
//! cargo run -p conduit-mcp --example task_progress_input        # 127.0.0.1:8080, or give HOST:PORT
//! cargo run -p conduit-mcp --features client --example client_task -- http://127.0.0.1:8080/mcp
//! ```
//!
//! The same tool serves every client: one that declared the Tasks extension
//! (2026-07-28) or asked for a task (2025-11-25) gets a task it follows;
//! any other gets the work run inline, and the result as the call's answer.

use conduit_mcp::prelude::*;
use serde_json::json;
use std::time::Duration;

fn deploy() -> Tool {
    Tool::new("deploy", "Deploys a service, asking for confirmation before the switch-over")
        .param("service", Param::string("What to deploy").required())
        .task_support(TaskSupport::Optional)
        .handle(|_ctx, args| async move {
            let service = args["service"].as_str().unwrap_or("app").to_owned();
            // `spawn`: the work runs on this node after the task is stored; the
            // call itself answers now.
            Ok(TaskSpec::new().status_message("queued").poll_interval(Duration::from_millis(500)).spawn(
                move |task| async move {
                    for step in ["building", "testing", "staging"] {
                        // Progress is the task's statusMessage (notifications/tasks on a listen stream).
                        task.progress(format!("{service}: {step}")).await.ok();
                        tokio::time::sleep(Duration::from_millis(300)).await;
                    }
                    // Mid-flight input: the task turns `input_required` until the client
                    // answers with tasks/update; the work waits here meanwhile.
                    let schema = json!({ "type": "object", "properties": { "confirm": { "type": "boolean" } } });
                    let answer = task
                        .input("confirm", mrtr::elicit(format!("Switch {service} over to the new version?"), schema))
                        .await
                        .map_err(|e| RpcError::internal(e.to_string()))?;
                    let confirmed = answer["action"] == "accept" && answer["content"]["confirm"] == true;
                    if !confirmed {
                        return Ok(CallToolResult::text(format!("{service}: left on the old version")));
                    }
                    task.progress(format!("{service}: switching over")).await.ok();
                    Ok(CallToolResult::text(format!("{service}: deployed")))
                },
            ))
        })
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let tasks = Tasks::new(TasksConfig::enabled()).expect("a valid configuration");
    let server = Server::builder("task-progress-input", "1.0.0")
        .extension(tasks) // both eras' tasks, in memory
        .tool(deploy())
        .build()
        .expect("a valid server");
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8080".into());
    let bound = http::bind(addr.parse().expect("HOST:PORT")).await?;
    println!("listening on http://{}/mcp", bound.local_addr());
    bound.serve(server, HttpConfig::default(), async { tokio::signal::ctrl_c().await.unwrap_or_default() }).await
}
