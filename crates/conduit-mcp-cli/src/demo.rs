//! The reference server's demo tools.

use conduit_mcp::ext::tasks::Tasks;
use conduit_mcp::prelude::*;
use conduit_mcp::server::BuildError;
use serde_json::json;
use std::time::Duration;

/// Registers the demo's resumable work on this node (every node registers the same).
pub(crate) fn register_workers(tasks: &Tasks) {
    tasks.resumable("countdown", |task, args| async move {
        let from = args["from"].as_u64().unwrap_or(10);
        for left in (1..=from).rev() {
            let _ = task.progress(format!("{left} left")).await;
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                _ = task.cancelled() => return Err(RpcError::internal("cancelled")),
            }
        }
        Ok(CallToolResult::text(format!("counted down from {from}")))
    });
}

/// Builds the demo server; `tasks` is installed when the extension is enabled.
pub(crate) fn server(tasks: Option<&Tasks>) -> Result<Server, BuildError> {
    let mut b = Server::builder("conduit-mcp-reference", env!("CARGO_PKG_VERSION"))
        .instructions(
            "Demo server. `echo` answers at once. With the Tasks extension declared, `build` runs as a task \
             reporting progress, `deploy` asks for confirmation mid-flight, and `sleep` waits until cancelled.",
        )
        .tool(
            Tool::new("echo", "Echo the text back")
                .param("text", Param::string("Text to echo").required())
                .annotations(json!({ "readOnlyHint": true }))
                .handle(
                    |_ctx, args| async move { Ok(CallToolResult::text(args["text"].as_str().unwrap_or_default())) },
                ),
        )
        .tool(
            Tool::new("build", "Build a ref: a task that reports progress in its status message")
                .param("ref", Param::string("Git ref to build").required())
                .param(
                    "steps",
                    Param::integer("How many steps").keyword("minimum", json!(1)).keyword("maximum", json!(20)),
                )
                .handle(|_ctx, args| async move {
                    let r = args["ref"].as_str().unwrap_or("main").to_owned();
                    let steps = args["steps"].as_u64().unwrap_or(5);
                    // A task when the client declared the extension; otherwise the
                    // same work runs inline, its steps sent as progress notifications.
                    Ok(ToolOutput::Task(
                        TaskSpec::new().poll_interval(Duration::from_millis(500)).status_message("Queued").spawn(
                            move |task| async move {
                                for i in 1..=steps {
                                    tokio::select! {
                                        _ = tokio::time::sleep(Duration::from_millis(500)) => {}
                                        _ = task.cancelled() => return Err(RpcError::internal("build cancelled")),
                                    }
                                    let _ = task.progress(format!("Building {r}: step {i}/{steps}")).await;
                                }
                                Ok(CallToolResult::text(format!("built {r} in {steps} steps")))
                            },
                        ),
                    ))
                }),
        )
        .tool(
            Tool::new("deploy", "Deploy to an environment: a task that asks for confirmation mid-flight")
                .param("environment", Param::string("Where to deploy").required())
                .task_support(TaskSupport::Required)
                .handle(|_ctx, args| async move {
                    let env = args["environment"].as_str().unwrap_or("staging").to_owned();
                    Ok(TaskSpec::new().status_message("Preparing").spawn(move |task| async move {
                        let schema = json!({
                            "type": "object",
                            "properties": { "confirm": { "type": "boolean", "description": "Deploy now?" } },
                            "required": ["confirm"]
                        });
                        let answer = task
                            .input("confirm", mrtr::elicit(format!("Deploy to {env}?"), schema))
                            .await
                            .map_err(|e| RpcError::internal(format!("no confirmation: {e}")))?;
                        let yes = answer["action"] == "accept" && answer["content"]["confirm"] == true;
                        if yes {
                            Ok(CallToolResult::text(format!("deployed to {env}")))
                        } else {
                            Ok(CallToolResult::error(format!("deployment to {env} was not confirmed")))
                        }
                    }))
                }),
        )
        .tool(
            Tool::new("sleep", "Wait until cancelled (or `seconds` pass): try tasks/cancel on it")
                .param(
                    "seconds",
                    Param::integer("Upper bound").keyword("minimum", json!(1)).keyword("maximum", json!(3600)),
                )
                .task_support(TaskSupport::Required)
                .handle(|_ctx, args| async move {
                    let secs = args["seconds"].as_u64().unwrap_or(600);
                    Ok(TaskSpec::new().spawn(move |task| async move {
                        tokio::select! {
                            _ = tokio::time::sleep(Duration::from_secs(secs)) => Ok(CallToolResult::text("woke up")),
                            _ = task.cancelled() => Err(RpcError::internal("cancelled")),
                        }
                    }))
                }),
        );
    if let Some(t) = tasks {
        let worker = t.clone();
        b = b
            .extension(t.clone())
            .tool(
                Tool::new("job", "Queue a job for an external worker (finish it with `complete_job`)")
                    .param("name", Param::string("What the job is"))
                    .task_support(TaskSupport::Required)
                    .handle(|_ctx, args| async move {
                        // The task keeps a short label, not whatever the client sent.
                        let name: String = args["name"].as_str().unwrap_or("job").chars().take(64).collect();
                        Ok(TaskSpec::new().status_message(format!("Queued: {name}")))
                    }),
            )
            .tool(
                Tool::new("complete_job", "Act as a worker: complete a queued job's task by id")
                    .param("taskId", Param::string("The task to complete").required())
                    .param("text", Param::string("The job's output"))
                    .handle(move |_ctx, args| {
                        let worker = worker.clone();
                        async move {
                            let id = args["taskId"].as_str().unwrap_or_default();
                            let text = args["text"].as_str().unwrap_or("done").to_owned();
                            match worker.complete(id, CallToolResult::text(text), Some("Done".into())).await {
                                Ok(()) => Ok(CallToolResult::text("completed")),
                                Err(e) => Ok(CallToolResult::error(format!("could not complete the task: {e}"))),
                            }
                        }
                    }),
            )
            .tool(
                Tool::new("countdown", "Count down (resumable: restarted on a live node if this one dies)")
                    .param(
                        "from",
                        Param::integer("Where to start").keyword("minimum", json!(1)).keyword("maximum", json!(3600)),
                    )
                    .task_support(TaskSupport::Required)
                    .handle(|_ctx, args| async move {
                        let from = args["from"].as_u64().unwrap_or(10);
                        Ok(TaskSpec::new().spawn_resumable("countdown", json!({ "from": from })))
                    }),
            );
    }
    b.build()
}
