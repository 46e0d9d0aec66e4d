//! MCP mounted into an axum app you already have, beside its own routes.
//!
//! ```text
//! cargo run -p conduit-mcp --example axum_mount          # 127.0.0.1:8080, or give HOST:PORT
//! curl http://127.0.0.1:8080/health
//! ```
//!
//! `http::router` is an ordinary `axum::Router`: nest it at any path and
//! keep your middleware, state and other routes. (`http::bind(..).serve_with`
//! does the same with the library's own connection limits and timeouts.)

use axum::Router;
use axum::routing::get;
use conduit_mcp::prelude::*;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let server = Server::builder("axum-mount", "1.0.0")
        .tool(Tool::new("ping", "Answers pong").handle(|_ctx, _args| async { Ok(CallToolResult::text("pong")) }))
        .build()
        .expect("a valid server");

    // The app's own routes; MCP is one more, at /mcp.
    let app = Router::new()
        .route("/health", get(|| async { "ok" }))
        .nest("/mcp", http::router(server, HttpConfig::default()));

    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8080".into());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    let at = listener.local_addr()?;
    println!("listening on http://{at}/mcp (and http://{at}/health)");
    axum::serve(listener, app).await
}
