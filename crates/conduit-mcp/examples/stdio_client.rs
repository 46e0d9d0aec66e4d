//! A stdio server used from a client: the client starts the server as its
//! child process and speaks MCP over the child's stdin and stdout. Here the
//! child is this same program run with `--serve`, so the example needs
//! nothing else; any command works (`conduit-mcp serve --stdio`, a Python
//! server, ...).
//!
//! ```text
//! cargo run -p conduit-mcp --features client --example stdio_client
//! ```

use conduit_mcp::client::{CallOutcome, ClientBuilder};
use conduit_mcp::prelude::*;
use serde_json::json;

/// The server side: MCP on stdin/stdout (so nothing else may print there).
async fn serve() -> std::io::Result<()> {
    let server = Server::builder("stdio-greeter", "1.0.0")
        .tool(Tool::new("greet", "Greets someone").param("name", Param::string("Who").required()).handle(
            |_ctx, args| async move {
                let name = args["name"].as_str().unwrap_or("world").to_owned();
                Ok(CallToolResult::text(format!("Hello, {name}!")))
            },
        ))
        .build()
        .expect("a valid server");
    stdio::serve(server).await
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::args().any(|a| a == "--serve") {
        return Ok(serve().await?);
    }
    // The client side: spawn the server, settle the era (server/discover), call a tool.
    let me = std::env::current_exe()?;
    let client = ClientBuilder::stdio(me.to_string_lossy(), ["--serve"]).connect().await?;
    let names: Vec<String> = client.list_tools().await?.into_iter().map(|t| t.name).collect();
    println!("tools: {}", names.join(", "));
    let CallOutcome::Complete(result) = client.call_tool("greet", json!({ "name": "stdio" })).await? else {
        return Err("greet answers at once, not as a task".into());
    };
    match result.content.first() {
        Some(Content::Text { text, .. }) => println!("greet: {text}"),
        other => println!("greet: {other:?}"),
    }
    Ok(())
}
