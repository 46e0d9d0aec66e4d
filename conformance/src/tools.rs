//! The fixture's ordinary tools: content types, diagnostics, list-change
//! triggers, the `x-mcp-header` tool and the JSON Schema 2020-12 tool.
//! The Tasks scenarios' tools are in `tasks_tools`.
//!
//! Registration order is the `tools/list` order. `test_simple_text` must stay
//! first: `http-header-validation` calls `tools[0]` with `arguments: {}`.

use crate::assets::{PNG_BASE64, WAV_BASE64};
use conduit_mcp::ServerBuilder;
use conduit_mcp::prelude::*;
use serde_json::{Value, json};
use std::time::Duration;

/// Registers every tool of this module, `test_simple_text` first.
pub(crate) fn register(b: ServerBuilder) -> ServerBuilder {
    let b = content_tools(b);
    let b = diagnostic_tools(b);
    schema_tools(b)
}

/// `tools-call-*`: one tool per content type, plus the tool-level error.
fn content_tools(b: ServerBuilder) -> ServerBuilder {
    b.tool(
        Tool::new("test_simple_text", "Returns a simple text response")
            .handle(|_ctx, _args| async { Ok(CallToolResult::text("This is a simple text response for testing.")) }),
    )
    .tool(
        Tool::new("test_image_content", "Returns an image content block")
            .handle(|_ctx, _args| async { Ok(CallToolResult::new(vec![Content::image(PNG_BASE64, "image/png")])) }),
    )
    .tool(Tool::new("test_audio_content", "Returns an audio content block").handle(|_ctx, _args| async {
        Ok(CallToolResult::new(vec![Content::audio(WAV_BASE64.as_str(), "audio/wav")]))
    }))
    .tool(Tool::new("test_embedded_resource", "Returns an embedded resource content block").handle(
        |_ctx, _args| async {
            Ok(CallToolResult::new(vec![Content::resource(ResourceContents::text(
                "test://embedded-resource",
                "text/plain",
                "This is an embedded resource content.",
            ))]))
        },
    ))
    .tool(Tool::new("test_multiple_content_types", "Returns text, image and resource content blocks").handle(
        |_ctx, _args| async {
            Ok(CallToolResult::new(vec![
                Content::text("Multiple content types test:"),
                Content::image(PNG_BASE64, "image/png"),
                Content::resource(ResourceContents::text(
                    "test://mixed-content-resource",
                    "application/json",
                    json!({ "test": "data", "value": 123 }).to_string(),
                )),
            ]))
        },
    ))
    .tool(Tool::new("test_error_handling", "Always returns a tool-level error (isError: true)").handle(
        |_ctx, _args| async { Ok(CallToolResult::error("This tool intentionally returns an error for testing")) },
    ))
    .tool(Tool::new("test_tool_with_progress", "Reports progress 0, 50, 100 of 100, then returns").handle(
        |ctx, _args| async move {
            for (i, step) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                if i > 0 {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                ctx.progress(step, Some(100.0), None);
            }
            Ok(CallToolResult::text("Progress test completed."))
        },
    ))
}

/// The diagnostic tools of `server-stateless`, and the list-change triggers.
fn diagnostic_tools(b: ServerBuilder) -> ServerBuilder {
    b.tool(Tool::new("test_missing_capability", "Needs the sampling capability; -32021 without it").handle(
        |ctx, _args| async move {
            if !ctx.client_capabilities().sampling() {
                return Err(RpcError::missing_capability(json!({ "sampling": {} })));
            }
            Ok(CallToolResult::text("The request declared sampling."))
        },
    ))
    .tool(
        Tool::new(
            "test_streaming_elicitation",
            "Answers on the response stream without sending independent server-to-client requests",
        )
        .handle(|_ctx, _args| async {
            // A stateless server never sends an `elicitation/create` request on the
            // response stream; it would ask through an input_required result instead.
            Ok(CallToolResult::text("No server-to-client request was sent on this stream."))
        }),
    )
    .tool(Tool::new("test_logging_tool", "Logs only when the request set a log level").handle(
        |ctx, _args| async move {
            // `Ctx::log` is a no-op unless `_meta["io.modelcontextprotocol/logLevel"]` allows it.
            let logged = ctx.log("info", json!("test_logging_tool was called"));
            Ok(CallToolResult::text(if logged {
                "Logged one message."
            } else {
                "No log level requested; nothing logged."
            }))
        },
    ))
    .tool(Tool::new("test_trigger_tool_change", "Sends notifications/tools/list_changed to listen streams").handle(
        |ctx, _args| async move {
            let n = ctx.changes().tools_list_changed();
            Ok(CallToolResult::text(format!("tools/list_changed sent to {n} stream(s)")))
        },
    ))
    .tool(
        Tool::new("test_trigger_prompt_change", "Sends notifications/prompts/list_changed to listen streams").handle(
            |ctx, _args| async move {
                let n = ctx.changes().prompts_list_changed();
                Ok(CallToolResult::text(format!("prompts/list_changed sent to {n} stream(s)")))
            },
        ),
    )
}

/// The input schema of `json_schema_2020_12_tool`, verbatim from the suite.
fn json_schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": { "street": { "type": "string" }, "city": { "type": "string" } }
            }
        },
        "properties": {
            "name": { "type": "string" },
            "address": { "$ref": "#/$defs/address" },
            "contactMethod": { "type": "string", "enum": ["phone", "email"] },
            "phone": { "type": "string" },
            "email": { "type": "string" }
        },
        "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
        "if": { "properties": { "contactMethod": { "const": "phone" } }, "required": ["contactMethod"] },
        "then": { "required": ["phone"] },
        "else": { "required": ["email"] },
        "additionalProperties": false
    })
}

/// `json-schema-2020-12` and `http-custom-header-server-validation`.
fn schema_tools(b: ServerBuilder) -> ServerBuilder {
    b.tool(
        Tool::new("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features")
            .input_schema(json_schema_2020_12())
            .handle(|_ctx, args| async move { Ok(CallToolResult::text(format!("Received: {args}"))) }),
    )
    .tool(
        Tool::new("test_custom_header", "Echoes region; mirrors it into Mcp-Param-Region")
            .param("region", Param::string("A region name").header("Region").required())
            .handle(|_ctx, args| async move {
                let region = args.get("region").and_then(Value::as_str).unwrap_or_default();
                Ok(CallToolResult::text(format!("Region: {region}")))
            }),
    )
}
