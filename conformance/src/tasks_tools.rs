//! The tools the ten `tasks-*` scenarios call (conformance.md §5.1).
//!
//! Task work is `spawn`ed on the fixture's runtime and honours
//! `tasks/cancel`. `failing_job` and `test_tool_with_task` are task-required,
//! so a request that did not declare the extension gets `-32021`;
//! `slow_compute` is task-optional and runs synchronously without it.

use conduit_mcp::ServerBuilder;
use conduit_mcp::prelude::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

/// Longest `slow_compute` run accepted, in seconds.
pub const MAX_COMPUTE_SECONDS: f64 = 3_600.0;

/// How often pollers are told to come back.
pub const POLL: Duration = Duration::from_millis(200);

/// Registers the task fixtures. `greet` and `slow_compute` first: neither may be `tools[0]`
/// of the whole list (that is `test_simple_text`), and `failing_job` must never be.
pub(crate) fn register(b: ServerBuilder) -> ServerBuilder {
    b.tool(greet())
    .tool(slow_compute())
    .tool(
        Tool::new("failing_job", "A task-only job whose tool reports an error after about a second")
            .task_support(TaskSupport::Required)
            .handle(|_ctx, _args| async move {
                Ok(TaskSpec::new().poll_interval(POLL).spawn(|task| async move {
                    pause(&task, Duration::from_secs(1)).await?;
                    Ok(CallToolResult::error("The job failed: the input could not be processed"))
                }))
            }),
    )
    .tool(
        Tool::new("protocol_error_job", "A task-only job that ends with a JSON-RPC error")
            .task_support(TaskSupport::Required)
            .handle(|_ctx, _args| async move {
                Ok(TaskSpec::new().poll_interval(POLL).spawn(|task| async move {
                    pause(&task, Duration::from_millis(200)).await?;
                    Err(RpcError::internal("The job's handler failed"))
                }))
            }),
    )
    .tool(
        Tool::new("confirm_delete", "Deletes a file after the client confirms (asks mid-task)")
            .param("filename", Param::string("The file to delete"))
            .task_support(TaskSupport::Required)
            .handle(|_ctx, args| async move {
                let file = args.get("filename").and_then(Value::as_str).unwrap_or("the file").to_owned();
                Ok(TaskSpec::new().poll_interval(POLL).spawn(move |task| async move {
                    let answer = task.input("confirm", confirm(&format!("Delete {file}?"))).await.map_err(worker)?;
                    let yes = answer["action"] == "accept" && answer["content"]["confirm"] == true;
                    Ok(CallToolResult::text(if yes { format!("Deleted {file}.") } else { format!("Kept {file}.") }))
                }))
            }),
    )
    .tool(
        Tool::new("multi_input", "Asks two questions at once mid-task")
            .task_support(TaskSupport::Required)
            .handle(|_ctx, _args| async move {
                Ok(TaskSpec::new().poll_interval(POLL).spawn(|task| async move {
                    let asks: BTreeMap<String, _> =
                        [("first".to_owned(), confirm("First question?")), ("second".to_owned(), confirm("Second question?"))]
                            .into_iter()
                            .collect();
                    let answers = task.inputs(asks).await.map_err(worker)?;
                    Ok(CallToolResult::text(format!("Received {} answers.", answers.len())))
                }))
            }),
    )
    .tool(
        Tool::new("test_tool_with_task", "Asks for a name (input_required), then greets it from a task")
            .task_support(TaskSupport::Required)
            .handle(|ctx, _args| async move {
                let name = ctx
                    .input_response("user_name")
                    .filter(|a| a["action"] == "accept")
                    .and_then(|a| a["content"]["name"].as_str())
                    .map(String::from);
                let Some(name) = name else {
                    let schema = json!({ "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"] });
                    return Ok(InputRequired::new().request("user_name", mrtr::elicit("What is your name?", schema)).into());
                };
                Ok(ToolOutput::Task(TaskSpec::new().poll_interval(POLL).spawn(move |task| async move {
                    pause(&task, Duration::from_millis(200)).await?;
                    Ok(CallToolResult::text(format!("Hello, {name}!")))
                })))
            }),
    )
}

/// `greet`: answers `Hello, NAME!` at once; task support forbidden.
pub fn greet() -> Tool {
    Tool::new("greet", "Greets someone (synchronous only)")
        .param("name", Param::string("Who to greet").required())
        .task_support(TaskSupport::Forbidden)
        .handle(|_ctx, args| async move {
            let name = args.get("name").and_then(Value::as_str).unwrap_or("world");
            Ok(CallToolResult::text(format!("Hello, {name}!")))
        })
}

/// `slow_compute`: works for `seconds` seconds (at most [`MAX_COMPUTE_SECONDS`]) and
/// answers `computed LABEL`; a task, polled every [`POLL`] and honouring
/// `tasks/cancel`, when the request declares the extension; otherwise the server
/// runs the same work inline and answers synchronously.
pub fn slow_compute() -> Tool {
    Tool::new("slow_compute", "Works for `seconds` seconds: a task when the request declares the extension")
        .param("seconds", Param::number("How long to work, in seconds").keyword("minimum", json!(0)))
        .param("label", Param::string("A label echoed in the result"))
        .handle(|_ctx, args| async move {
            let seconds = args.get("seconds").and_then(Value::as_f64).unwrap_or(0.0);
            if !(0.0..=MAX_COMPUTE_SECONDS).contains(&seconds) {
                return Ok(CallToolResult::error(format!("seconds must be between 0 and {MAX_COMPUTE_SECONDS}")).into());
            }
            let label = args.get("label").and_then(Value::as_str).unwrap_or_default().to_owned();
            let text = format!("computed {label}").trim_end().to_owned();
            let work = Duration::from_secs_f64(seconds);
            Ok(ToolOutput::Task(TaskSpec::new().poll_interval(POLL).status_message("Computing").spawn(
                move |task| async move {
                    tokio::select! {
                        _ = tokio::time::sleep(work) => Ok(CallToolResult::text(text)),
                        _ = task.cancelled() => Err(RpcError::internal("cancelled")),
                    }
                },
            )))
        })
}

/// A yes/no elicitation.
fn confirm(message: &str) -> mrtr::Request {
    let schema =
        json!({ "type": "object", "properties": { "confirm": { "type": "boolean" } }, "required": ["confirm"] });
    mrtr::elicit(message, schema)
}

/// Waits `d`, or fails if the task is cancelled first.
async fn pause(task: &TaskContext, d: Duration) -> Result<(), RpcError> {
    tokio::select! {
        _ = tokio::time::sleep(d) => Ok(()),
        _ = task.cancelled() => Err(RpcError::internal("cancelled")),
    }
}

fn worker(e: WorkerError) -> RpcError {
    RpcError::internal(format!("the task could not get its input: {e}"))
}

#[cfg(test)]
mod tests {
    use conduit_mcp::ext::tasks::TasksConfig;
    use conduit_mcp::protocol::jsonrpc::Request;
    use conduit_mcp::protocol::{Message, RequestId};
    use conduit_mcp::server::RequestEnv;
    use serde_json::{Value, json};

    async fn call(tool: &str, arguments: Value) -> Value {
        let server = crate::server(TasksConfig::enabled()).expect("fixture server builds");
        let req = Request {
            id: RequestId::Number(1),
            method: "tools/call".into(),
            params: Some(json!({ "name": tool, "arguments": arguments, "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}
            }})),
        };
        let Message::Result { result, .. } = server.handle_request(req, RequestEnv::default()).await else {
            panic!("tools/call {tool} failed");
        };
        result
    }

    #[tokio::test]
    async fn greet_and_slow_compute_answer_without_the_extension() {
        let greet = call("greet", json!({ "name": "bench-1" })).await;
        assert_eq!(greet["content"][0]["text"], "Hello, bench-1!");
        let computed = call("slow_compute", json!({ "seconds": 0, "label": "w1" })).await;
        assert_eq!(computed["content"][0]["text"], "computed w1");
        let refused = call("slow_compute", json!({ "seconds": 7200 })).await;
        assert_eq!(refused["isError"], true);
    }
}
