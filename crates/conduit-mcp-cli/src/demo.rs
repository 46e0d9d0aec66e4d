//! The reference server's demo tools.

use conduit_mcp::prelude::*;
use conduit_mcp::server::BuildError;
use serde_json::json;

/// Builds the demo server.
pub(crate) fn server() -> Result<Server, BuildError> {
    Server::builder("conduit-mcp-reference", env!("CARGO_PKG_VERSION"))
        .instructions("Demo server: `echo` answers at once; `countdown` reports progress.")
        .tool(
            Tool::new("echo", "Echo the text back")
                .param("text", Param::string("Text to echo").required())
                .annotations(json!({ "readOnlyHint": true }))
                .handle(|_ctx, args| async move {
                    Ok(CallToolResult::text(
                        args["text"].as_str().unwrap_or_default(),
                    ))
                }),
        )
        .tool(
            Tool::new(
                "countdown",
                "Count down from n, reporting progress (send a progressToken to see it)",
            )
            .param(
                "n",
                Param::integer("Where to start")
                    .keyword("minimum", json!(0))
                    .keyword("maximum", json!(100)),
            )
            .handle(|ctx, args| async move {
                let n = args["n"].as_u64().unwrap_or(3);
                for i in 0..=n {
                    ctx.progress(i as f64, Some(n as f64), Some(&format!("{} left", n - i)));
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
                Ok(CallToolResult::text("liftoff"))
            }),
        )
        .build()
}
