//! The server the `http_*` handler-family tests share (discover, tools,
//! prompts, resources, completion, notifications, listen): every kind of
//! handler registered once, so each family is tested beside the others.

use crate::common::echo_tool;
use async_trait::async_trait;
use conduit_mcp::prelude::*;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// Adds two integers.
#[derive(Deserialize, JsonSchema)]
struct Add {
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
}

#[async_trait]
impl TypedTool for Add {
    const NAME: &'static str = "add";
    const DESCRIPTION: &'static str = "Adds two integers";

    async fn run(self, _ctx: Ctx) -> Result<ToolOutput, RpcError> {
        Ok(CallToolResult::text((self.a + self.b).to_string()).into())
    }
}

struct Reverse;

#[async_trait]
impl ToolHandler for Reverse {
    fn info(&self) -> ToolInfo {
        ToolInfo::new(
            "reverse",
            "Reverses a string",
            json!({ "type": "object", "properties": { "text": { "type": "string" } }, "required": ["text"] }),
        )
    }

    async fn call(&self, _ctx: Ctx, args: Value) -> Result<ToolOutput, RpcError> {
        let text: String = args["text"].as_str().unwrap_or_default().chars().rev().collect();
        Ok(CallToolResult::text(text).into())
    }
}

/// The output schema of the `stats` tool: `{ count: integer }`.
pub fn stats_schema() -> Value {
    json!({ "type": "object", "properties": { "count": { "type": "integer" } }, "required": ["count"] })
}

/// The features server's builder: a tool, prompt and resource of each kind the tests call.
pub fn builder() -> ServerBuilder {
    Server::builder("features", "1.2.3")
        .instructions("Use echo to test.")
        .tool(echo_tool())
        .typed_tool::<Add>()
        .tool(Reverse)
        .tool(
            Tool::new("stats", "Counts things")
                .output_schema(stats_schema())
                .handle(|_ctx, _args| async { Ok(CallToolResult::structured(json!({ "count": 3 }))) }),
        )
        .tool(
            Tool::new("bad_stats", "Breaks its own output schema")
                .output_schema(stats_schema())
                .handle(|_ctx, _args| async { Ok(CallToolResult::structured(json!({ "count": "three" }))) }),
        )
        .tool(
            Tool::new("progress", "Reports progress, then finishes")
                .param("steps", Param::integer("How many steps").required())
                .handle(|ctx, args| async move {
                    let steps = args["steps"].as_u64().unwrap_or(1);
                    for i in 1..=steps {
                        ctx.progress(i as f64, Some(steps as f64), Some(&format!("step {i}")));
                    }
                    Ok(CallToolResult::text("done"))
                }),
        )
        .tool(Tool::new("chatty", "Logs at info").handle(|ctx, _args| async move {
            let sent = ctx.log("info", json!("hello from chatty"));
            Ok(CallToolResult::text(sent.to_string()))
        }))
        .prompt(Prompt::new("greet", "Greets someone").argument("name", "Who", true).handle(|_ctx, args| async move {
            Ok(GetPromptResult::new(vec![PromptMessage::user(Content::text(format!("Hello, {}!", args["name"])))]))
        }))
        .resource(
            Resource::new("test://static", "Static")
                .mime_type("text/plain")
                .read(|_ctx, uri| async move { Ok(ResourceContents::text(uri, "text/plain", "static text")) }),
        )
        .resource_template(ResourceTemplate::new("test://items/{id}", "Items").read(|_ctx, uri, vars| async move {
            let id = vars.get("id").cloned().unwrap_or_default();
            if id == "missing" {
                return Err(conduit_mcp::server::resource_not_found(&uri));
            }
            Ok(ResourceContents::text(uri, "text/plain", format!("item {id}")))
        }))
        .completion(|_ctx, params| async move {
            let prefix = params["argument"]["value"].as_str().unwrap_or_default().to_owned();
            let values: Vec<&str> = ["Ada", "Alan", "Grace"].into_iter().filter(|n| n.starts_with(&prefix)).collect();
            Ok(json!({ "values": values, "total": values.len(), "hasMore": false }))
        })
}

/// The features server, built.
pub fn server() -> Server {
    builder().build().expect("valid server")
}
