//! The tools and resource only the 2025-11-25 leg calls: logging, sampling and
//! elicitation (written as MRTR `input_required`, which a legacy session turns
//! into real server→client requests), SSE polling, and the watched resource.

use crate::mrtr_tools::{Elicited, elicited};
use conduit_mcp::ServerBuilder;
use conduit_mcp::prelude::*;
use serde_json::json;
use std::time::Duration;

/// Registers the legacy-leg tools and the watched resource.
pub(crate) fn register(b: ServerBuilder) -> ServerBuilder {
    b.tool(Tool::new("test_tool_with_logging", "Logs three messages while it runs").handle(|ctx, _args| async move {
        for (i, text) in ["Tool execution started", "Tool processing data", "Tool execution completed"]
            .into_iter()
            .enumerate()
        {
            if i > 0 {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            ctx.log("info", json!(text));
        }
        Ok(CallToolResult::text("Logging test completed."))
    }))
    .tool(
        Tool::new("test_sampling", "Asks the client to sample a completion of the prompt")
            .param("prompt", Param::string("The prompt to sample"))
            .handle(|ctx, args| async move {
                if let Some(answer) = ctx.input_response("sample") {
                    let text = answer["content"]["text"].as_str().unwrap_or_default();
                    return Ok(CallToolResult::text(format!("LLM response: {text}")).into());
                }
                let prompt = args["prompt"].as_str().unwrap_or("Hello").to_owned();
                Ok(ToolOutput::from(InputRequired::new().request("sample", mrtr::sample_text(prompt, 100))))
            }),
    )
    .tool(
        Tool::new("test_elicitation", "Asks the user for a username and an email")
            .param("message", Param::string("What to ask"))
            .handle(|ctx, args| async move {
                let message = args["message"].as_str().unwrap_or("Please provide your information").to_owned();
                let schema = json!({ "type": "object", "properties": {
                    "username": { "type": "string", "description": "User's response" },
                    "email": { "type": "string", "description": "User's email address" }
                }, "required": ["username", "email"] });
                answered(&ctx, "user", message, schema)
            }),
    )
    .tool(Tool::new("test_elicitation_sep1034_defaults", "Elicits fields that all carry defaults (SEP-1034)").handle(
        |ctx, _args| async move {
            let schema = json!({ "type": "object", "properties": {
                "name": { "type": "string", "description": "User name", "default": "John Doe" },
                "age": { "type": "integer", "description": "User age", "default": 30 },
                "score": { "type": "number", "description": "User score", "default": 95.5 },
                "status": { "type": "string", "description": "User status",
                    "enum": ["active", "inactive", "pending"], "default": "active" },
                "verified": { "type": "boolean", "description": "Verification status", "default": true }
            }, "required": [] });
            answered(&ctx, "defaults", "Please review and update the form fields with defaults".into(), schema)
        },
    ))
    .tool(Tool::new("test_elicitation_sep1330_enums", "Elicits every enum shape of SEP-1330").handle(
        |ctx, _args| async move {
            let schema = json!({ "type": "object", "properties": {
                "untitledSingle": { "type": "string", "description": "Pick one", "enum": ["option1", "option2", "option3"] },
                "titledSingle": { "type": "string", "description": "Pick one (titled)", "oneOf": [
                    { "const": "value1", "title": "First Option" },
                    { "const": "value2", "title": "Second Option" },
                    { "const": "value3", "title": "Third Option" } ] },
                "legacyEnum": { "type": "string", "description": "Pick one (legacy)",
                    "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"] },
                "untitledMulti": { "type": "array", "description": "Pick some",
                    "items": { "type": "string", "enum": ["option1", "option2", "option3"] } },
                "titledMulti": { "type": "array", "description": "Pick some (titled)", "items": { "anyOf": [
                    { "const": "value1", "title": "First Choice" },
                    { "const": "value2", "title": "Second Choice" },
                    { "const": "value3", "title": "Third Choice" } ] } }
            }, "required": [] });
            answered(&ctx, "enums", "Please select options from the enum fields".into(), schema)
        },
    ))
    .tool(Tool::new("test_reconnection", "Closes its SSE stream mid-call; the answer follows the reconnection").handle(
        |ctx, _args| async move {
            ctx.close_stream();
            tokio::time::sleep(Duration::from_millis(100)).await;
            Ok(CallToolResult::text("Reconnection test completed successfully"))
        },
    ))
    .resource(
        Resource::new("test://watched-resource", "Watched resource")
            .description("A resource clients subscribe to")
            .mime_type("text/plain")
            .read(|_ctx, uri| async move { Ok(ResourceContents::text(uri, "text/plain", "Watched resource content")) }),
    )
}

/// Asks once under `key`, then reports what the user answered.
fn answered(ctx: &Ctx, key: &str, message: String, schema: serde_json::Value) -> Result<ToolOutput, RpcError> {
    Ok(match elicited(ctx, key)? {
        Elicited::Missing => InputRequired::new().request(key, mrtr::elicit(message, schema)).into(),
        Elicited::Accepted(content) => {
            CallToolResult::text(format!("User response: action=accept, content={}", json!(content))).into()
        }
        Elicited::Refused(action) => CallToolResult::text(format!("User response: action={action}")).into(),
    })
}
