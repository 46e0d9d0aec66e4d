//! Serving behind OAuth 2.1: every request needs an access token from an
//! authorization server you trust; the server publishes its Protected
//! Resource Metadata (RFC 9728) so a client can find where to get one, and
//! answers 401 with the challenge that points there.
//!
//! ```text
//! ISSUER=https://auth.example.com cargo run -p conduit-mcp --features oauth --example oauth_server
//! curl -i http://127.0.0.1:8080/mcp -d '{}'        # 401, WWW-Authenticate: Bearer resource_metadata="…"
//! ```
//!
//! With a real authorization server, `conduit-mcp login http://127.0.0.1:8080/mcp`
//! (or `conduit_mcp::client::oauth`) gets a token and calls the tools.

use conduit_mcp::auth::oauth::{OAuth, OAuthConfig};
use conduit_mcp::prelude::*;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let issuer = std::env::var("ISSUER").unwrap_or_else(|_| "https://auth.example.com".into());
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8080".into());
    let bound = http::bind(addr.parse().expect("HOST:PORT")).await?;
    // The resource is this server's own URL: tokens must name it as their audience.
    let resource = format!("http://{}/mcp", bound.local_addr());

    let config = OAuthConfig::new(issuer.as_str(), resource.as_str())
        .scope("mcp:read") // every request needs it
        .implies("mcp:admin", ["mcp:read", "mcp:deploy"]);
    let oauth = OAuth::new(config).expect("a valid OAuth configuration");
    let metadata = oauth.protected_resource().metadata_url().to_owned();

    let server = Server::builder("oauth-server", "1.0.0")
        .tool(Tool::new("whoami", "Says who the token is for").handle(|ctx, _args| async move {
            let who = ctx.principal().map(|p| p.id().to_owned()).unwrap_or_default();
            Ok(CallToolResult::text(who))
        }))
        // A tool with a scope of its own: a token without it gets 403 insufficient_scope.
        .tool(
            Tool::new("deploy", "Deploys (needs mcp:deploy)")
                .scopes(["mcp:deploy"])
                .handle(|_ctx, _args| async { Ok(CallToolResult::text("deployed")) }),
        )
        .build()
        .expect("a valid server");

    println!("listening on {resource} (tokens from {issuer}; metadata at {metadata})");
    bound
        .serve(server, HttpConfig::default().oauth(oauth), async { tokio::signal::ctrl_c().await.unwrap_or_default() })
        .await
}
