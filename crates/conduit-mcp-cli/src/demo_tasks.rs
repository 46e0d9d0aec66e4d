//! The demo's task-only tools that need no worker of their own: `deploy` (asks
//! for a confirmation mid-flight) and `sleep` (waits until cancelled). The
//! server lists them only with the Tasks extension enabled: without it they
//! could never run.

use conduit_mcp::prelude::*;
use serde_json::json;
use std::time::Duration;

/// `deploy`: a task that asks for confirmation (an elicitation) before it ends.
pub(crate) fn deploy() -> Tool {
    Tool::new("deploy", "Deploy to an environment: a task that asks for confirmation mid-flight")
        .param("environment", Param::string("Where to deploy").required())
        .task_support(TaskSupport::Required)
        .handle(|ctx, args| async move {
            // It will ask for confirmation: without elicitation declared the task
            // could only fail, so the call is refused before one is made.
            if !ctx.client_capabilities().elicitation_form() {
                return Err(RpcError::missing_capability(json!({ "elicitation": {} })));
            }
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
        })
}

/// `sleep`: a task that waits until cancelled, or `seconds` pass.
pub(crate) fn sleep() -> Tool {
    Tool::new("sleep", "Wait until cancelled (or `seconds` pass): try tasks/cancel on it")
        .param("seconds", Param::integer("Upper bound").keyword("minimum", json!(1)).keyword("maximum", json!(3600)))
        .task_support(TaskSupport::Required)
        .handle(|_ctx, args| async move {
            let secs = args["seconds"].as_u64().unwrap_or(600);
            Ok(TaskSpec::new().spawn(move |task| async move {
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(secs)) => Ok(CallToolResult::text("woke up")),
                    _ = task.cancelled() => Err(RpcError::internal("cancelled")),
                }
            }))
        })
}
