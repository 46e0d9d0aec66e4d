//! The reference server's demo tools.

use conduit_mcp::ext::events::webhook::egress::{Egress, EgressPolicy};
use conduit_mcp::ext::events::webhook::{WebhookConfig, WebhookRules, WebhookStore};
use conduit_mcp::ext::events::{Events, EventsConfig};
use conduit_mcp::ext::tasks::Owner;
use conduit_mcp::prelude::*;
use conduit_mcp::protocol::version::ServedEras;
use conduit_mcp::session::SessionConfig;
use conduit_mcp::task::StoreError;
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

/// Scopes a tool needs (`--tool-scope`, `[oauth.tool_scopes]`), by tool name.
pub(crate) type ToolScopes = std::collections::BTreeMap<String, Vec<String>>;

/// What the server answers: the eras, how legacy sessions are kept, the tools' scopes.
pub(crate) struct Serving<'a> {
    pub(crate) eras: ServedEras,
    pub(crate) sessions: SessionConfig,
    pub(crate) tool_scopes: &'a ToolScopes,
    /// The key Events cursors are sealed with (SQL stores: the database's; else a random one).
    pub(crate) events_cursor_key: Option<[u8; 32]>,
    /// Webhook delivery of events (`None`: off).
    pub(crate) webhooks: Option<WebhookConfig>,
}

/// Webhook delivery under `rules`: out through the egress they allow, state in `store`.
pub(crate) fn webhook_config(
    rules: &WebhookRules,
    store: std::sync::Arc<dyn WebhookStore>,
) -> Result<WebhookConfig, String> {
    let mut policy = EgressPolicy::new();
    policy.allow_origins = rules.allow_origins.clone();
    policy.allow_loopback = rules.allow_loopback;
    policy.timeout = rules.attempt_timeout();
    policy.root_certificates_pem = rules.root_certificates_pem.clone();
    let egress = Egress::new(&policy).map_err(|e| e.to_string())?;
    let config = rules.apply(WebhookConfig::new(store, std::sync::Arc::new(egress)));
    config.validate().map_err(|e| e.to_string())?;
    Ok(config)
}

/// `tool` with the scopes configured for it.
fn scoped(tool: Tool, scopes: &ToolScopes) -> Tool {
    let name = tool.info().name;
    match scopes.get(&name) {
        Some(s) => tool.scopes(s.iter().cloned()),
        None => tool,
    }
}

/// Builds the demo server; the tasks handle (both eras) is installed when the extension is enabled.
pub(crate) fn server(tasks: Option<&Tasks>, serving: Serving<'_>) -> Result<Server, String> {
    let scopes = serving.tool_scopes;
    let mut names = Vec::new();
    let mut tool = |t: Tool| {
        names.push(t.info().name);
        scoped(t, scopes)
    };
    let mut b = Server::builder("conduit-mcp-reference", env!("CARGO_PKG_VERSION"))
        .eras(serving.eras)
        .sessions(serving.sessions)
        .instructions(
            "Demo server. `echo` answers at once. With the Tasks extension declared, `build` runs as a task \
             reporting progress, `deploy` asks for confirmation mid-flight, and `sleep` waits until cancelled.",
        )
        .tool(tool(
            Tool::new("echo", "Echo the text back")
                .param("text", Param::string("Text to echo").required())
                .annotations(json!({ "readOnlyHint": true }))
                .handle(
                    |_ctx, args| async move { Ok(CallToolResult::text(args["text"].as_str().unwrap_or_default())) },
                ),
        ))
        .tool(tool(
            Tool::new("build", "Build a ref: a task that reports progress in its status message")
                .param("ref", Param::string("Git ref to build").required())
                .param(
                    "steps",
                    Param::integer("How many steps").keyword("minimum", json!(1)).keyword("maximum", json!(20)),
                )
                .handle(|_ctx, args| async move {
                    // The ref is repeated in every step and in the answer, which a session
                    // keeps for replay and a task keeps as its result: a bounded label, not
                    // whatever the client sent (issue 20, finding 4).
                    let r = args["ref"].as_str().unwrap_or("main").to_owned();
                    let r = conduit_mcp::bounds::cut_text(r, conduit_mcp::bounds::MAX_CLIENT_INFO_FIELD_BYTES);
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
        ));
    if tasks.is_some() {
        // Task-only tools are listed only where they can run.
        b = b.tool(tool(crate::demo_tasks::deploy())).tool(tool(crate::demo_tasks::sleep()));
    }
    b = b
        .tool(tool(Tool::new("ask_name", "Ask the user's name, then greet them (elicitation)").handle(
            |ctx, _args| async move {
                if let Some(a) = ctx.input_response("name") {
                    let name = a["content"]["name"].as_str().unwrap_or("stranger");
                    return Ok(CallToolResult::text(format!("Hello, {name}!")).into());
                }
                let schema =
                    json!({ "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"] });
                Ok(ToolOutput::from(InputRequired::new().request("name", mrtr::elicit("What is your name?", schema))))
            },
        )))
        .tool(tool(
            Tool::new("ask_model", "Ask the client's model to complete a prompt (sampling)")
                .param("prompt", Param::string("What to ask"))
                .handle(|ctx, args| async move {
                    if let Some(a) = ctx.input_response("answer") {
                        let text = a["content"]["text"].as_str().unwrap_or_default();
                        return Ok(CallToolResult::text(format!("The model said: {text}")).into());
                    }
                    let prompt = args["prompt"].as_str().unwrap_or("Say hello").to_owned();
                    Ok(ToolOutput::from(InputRequired::new().request("answer", mrtr::sample_text(prompt, 100))))
                }),
        ));
    if let Some(t) = tasks {
        let worker = t.clone();
        // task.status_changed by poll and push, with no configuration; by webhook too when the
        // operator named egress rules.
        let mut config = match serving.events_cursor_key {
            Some(key) => EventsConfig::new().cursor_key(key),
            None => EventsConfig::new(),
        };
        if let Some(w) = serving.webhooks {
            config = config.webhooks(w);
        }
        let events = Events::new(config).map_err(|e| e.to_string())?;
        events.task_status(t);
        b = b
            .extension(t.clone())
            .extension(events)
            .tool(tool(
                Tool::new("job", "Queue a job for an external worker (finish it with `complete_job`)")
                    .param("name", Param::string("What the job is"))
                    .task_support(TaskSupport::Required)
                    .handle(|_ctx, args| async move {
                        // The task keeps a short label, not whatever the client sent.
                        let name: String = args["name"].as_str().unwrap_or("job").chars().take(64).collect();
                        Ok(TaskSpec::new().status_message(format!("Queued: {name}")))
                    }),
            ))
            .tool(tool(
                Tool::new("complete_job", "Act as a worker: complete a queued job's task by id")
                    .param("taskId", Param::string("The task to complete").required())
                    .param("text", Param::string("The job's output"))
                    .handle(move |ctx, args| {
                        let worker = worker.clone();
                        async move {
                            let id = args["taskId"].as_str().unwrap_or_default();
                            let text = args["text"].as_str().unwrap_or("done").to_owned();
                            // The caller's own queued jobs only: another principal's task,
                            // a missing one, and one whose work runs on a node (it holds a
                            // lease: not a job for an external worker) all read the same.
                            let unknown = || Ok(CallToolResult::error("no queued job of yours has this id"));
                            match worker.store().get(id, Owner::Is(ctx.owner())).await {
                                Ok(rec) if rec.lease.is_none() => {}
                                Ok(_) | Err(StoreError::NotFound) => return unknown(),
                                Err(e) => return Err(RpcError::internal(format!("the task store failed: {e}"))),
                            }
                            match worker.complete(id, CallToolResult::text(text), Some("Done".into())).await {
                                Ok(()) => Ok(CallToolResult::text("completed")),
                                Err(WorkerError::NotFound) => unknown(),
                                Err(WorkerError::Terminal) => Ok(CallToolResult::error("this job already finished")),
                                Err(e) => Err(RpcError::internal(format!("could not complete the job: {e}"))),
                            }
                        }
                    }),
            ))
            .tool(tool(
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
            ));
    }
    if let Some(unknown) = scopes.keys().find(|k| !names.contains(k)) {
        return Err(format!("--tool-scope {unknown}: no such tool (tools: {})", names.join(", ")));
    }
    b.build().map_err(|e| e.to_string())
}
