//! A small stdio MCP server (used by `tests/stdio.rs`).
//!
//! Tools: `echo` (returns its text), `slow` (waits until cancelled), `count`
//! (reports progress `n` times), `touch` (announces a change to listen
//! streams), `ask` (elicits a name) and `nap` (answers after 200 ms). Resources `test://a` and `test://b` exist so listen streams can
//! subscribe to them. Run it and type one JSON-RPC request per line:
//!
//! ```text
//! cargo run --example stdio_echo
//! {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}
//! ```
//!
//! Only MCP messages go to stdout; diagnostics go to stderr.

use conduit_mcp::prelude::*;
use tokio_util::sync::CancellationToken;

/// Says on stderr how the `slow` tool ended, even if its future is dropped.
struct Stopped(CancellationToken);

impl Drop for Stopped {
    fn drop(&mut self) {
        eprintln!("slow: stopped, cancelled={}", self.0.is_cancelled());
    }
}

fn server() -> Server {
    Server::builder("stdio-echo", "1.0.0")
        .tool(Tool::new("echo", "Echoes the text back").param("text", Param::string("What to echo").required()).handle(
            |_ctx, args| async move { Ok(CallToolResult::text(args["text"].as_str().unwrap_or_default().to_owned())) },
        ))
        .tool(Tool::new("slow", "Waits until the request is cancelled").handle(|ctx, _args| async move {
            let _stopped = Stopped(ctx.cancellation().clone());
            ctx.progress(0.0, None, Some("waiting for cancellation"));
            ctx.cancellation().cancelled().await;
            Ok(CallToolResult::text("cancelled"))
        }))
        .tool(
            Tool::new("count", "Reports progress n times, then finishes")
                .param("n", Param::integer("How many steps").required())
                .handle(|ctx, args| async move {
                    let n = args["n"].as_u64().unwrap_or(0);
                    for i in 1..=n {
                        ctx.progress(i as f64, Some(n as f64), None);
                    }
                    Ok(CallToolResult::text(format!("counted {n}")))
                }),
        )
        .tool(
            Tool::new("touch", "Announces a change: \"tools\", \"prompts\" or a resource URI")
                .param("what", Param::string("What changed").required())
                .handle(|ctx, args| async move {
                    let what = args["what"].as_str().unwrap_or_default();
                    let changes = ctx.changes();
                    let notified = match what {
                        "tools" => changes.tools_list_changed(),
                        "resources" => changes.resources_list_changed(),
                        uri => changes.resource_updated(uri),
                    };
                    Ok(CallToolResult::text(notified.to_string()))
                }),
        )
        .tool(Tool::new("ask", "Asks the user's name (MRTR; a real request on a legacy session)").handle(
            |ctx, _args| async move {
                if let Some(a) = ctx.input_response("name") {
                    let name = a["content"]["name"].as_str().unwrap_or("?");
                    return Ok(CallToolResult::text(format!("Hello, {name}!")).into());
                }
                let schema = serde_json::json!({ "type": "object", "properties": { "name": { "type": "string" } } });
                Ok(ToolOutput::from(InputRequired::new().request("name", mrtr::elicit("Your name?", schema))))
            },
        ))
        .tool(Tool::new("nap", "Answers after a short nap (work still running at end of input)").handle(
            |_ctx, _args| async move {
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                Ok(CallToolResult::text("rested"))
            },
        ))
        .resource(
            Resource::new("test://a", "A")
                .read(|_ctx, uri| async move { Ok(ResourceContents::text(uri, "text/plain", "a")) }),
        )
        .resource(
            Resource::new("test://b", "B")
                .read(|_ctx, uri| async move { Ok(ResourceContents::text(uri, "text/plain", "b")) }),
        )
        .build()
        .expect("a valid server")
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    stdio::serve(server()).await?;
    eprintln!("stdio_echo: end of input, exiting");
    Ok(())
}
