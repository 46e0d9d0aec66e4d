//! A protected MCP server for the CLI's OAuth tests: our library's server
//! with the echo tool, authenticating each request by RFC 7662
//! introspection at the test authorization server (oidc-provider), and
//! serving its protected resource metadata beside `/mcp`.

use async_trait::async_trait;
use conduit_mcp::auth::{AuthError, Authenticate, Principal};
use conduit_mcp::prelude::*;
use conduit_mcp::transport::http::{self, HttpConfig};
use conduit_mcp_test_oauth::{AuthorizationServer, RESOURCE_SERVER};
use serde_json::{Value, json};

/// Validates bearer tokens by asking the authorization server.
struct Introspect {
    endpoint: String,
    resource: String,
    http: reqwest::Client,
    /// A request without a token is let in as an anonymous principal without scopes.
    anonymous: bool,
}

#[async_trait]
impl Authenticate for Introspect {
    async fn authenticate(&self, headers: &axum::http::HeaderMap) -> Result<Principal, AuthError> {
        let token = headers.get("authorization").and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
        let token = match token {
            Some(t) => t,
            None if self.anonymous => return Ok(Principal::new("anonymous")),
            None => return Err(AuthError::Missing),
        };
        let answer: Value = self
            .http
            .post(&self.endpoint)
            .basic_auth(RESOURCE_SERVER.id, RESOURCE_SERVER.secret)
            .form(&[("token", token)])
            .send()
            .await
            .map_err(|e| AuthError::Invalid(e.to_string()))?
            .json()
            .await
            .map_err(|e| AuthError::Invalid(e.to_string()))?;
        if answer["active"] != json!(true) {
            return Err(AuthError::Invalid("inactive token".into()));
        }
        let aud_ok = match &answer["aud"] {
            Value::String(a) => *a == self.resource,
            Value::Array(a) => a.iter().any(|a| *a == json!(self.resource)),
            _ => true,
        };
        if !aud_ok {
            return Err(AuthError::Invalid("token for another audience".into()));
        }
        let scopes = answer["scope"].as_str().unwrap_or_default().split_whitespace().map(str::to_owned);
        Ok(Principal::new(answer["sub"].as_str().unwrap_or("client")).scopes(scopes))
    }
}

/// The echo tool; `scoped`: it needs `mcp:read`.
fn echo_tool(scoped: bool) -> Tool {
    let needs: &[&str] = if scoped { &["mcp:read"] } else { &[] };
    Tool::new("echo", "Echoes the text back")
        .param("text", Param::string("What to echo").required())
        .scopes(needs.iter().copied())
        .handle(
            |_ctx, args| async move { Ok(CallToolResult::text(args["text"].as_str().unwrap_or_default().to_owned())) },
        )
}

/// Serves the protected echo server for `auth` on a free port; returns its URL (`…/mcp`).
pub async fn protected_server(auth: &AuthorizationServer) -> String {
    serve(auth, false).await
}

/// [`protected_server`], except that a request without a token is let in
/// (`server/discover`, `initialize`, `tools/list` answer it); only the echo
/// tool needs a token (scope `mcp:read`, refused with 403 `insufficient_scope`).
pub async fn public_discovery_server(auth: &AuthorizationServer) -> String {
    serve(auth, true).await
}

async fn serve(auth: &AuthorizationServer, anonymous: bool) -> String {
    let bound = http::bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let origin = format!("http://{}", bound.local_addr());
    let resource = format!("{origin}/mcp");
    let prm_url = format!("{origin}/.well-known/oauth-protected-resource/mcp");
    let prm =
        json!({ "resource": resource, "authorization_servers": [auth.issuer()], "scopes_supported": ["mcp:read"] });
    let routes = axum::Router::new().route(
        "/.well-known/oauth-protected-resource/mcp",
        axum::routing::get(move || {
            let prm = prm.clone();
            async move { axum::Json(prm) }
        }),
    );
    let introspect = Introspect {
        endpoint: auth.url("/token/introspection"),
        resource: resource.clone(),
        http: reqwest::Client::new(),
        anonymous,
    };
    let cfg = HttpConfig::default().auth(introspect).resource_metadata(prm_url);
    let server = Server::builder("protected", "1.0.0").tool(echo_tool(anonymous)).build().unwrap();
    tokio::spawn(bound.serve_with(server, cfg, routes, std::future::pending::<()>()));
    resource
}
