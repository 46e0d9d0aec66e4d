//! One function per scenario family: what the client does for it.

use crate::browser::Headless;
use crate::handler::Cooperative;
use conduit_mcp::client::oauth::{ClientAssertionKey, EnterpriseIdp, JwtSource, OAuth};
use conduit_mcp::client::{CallOutcome, Client, ClientBuilder, ClientError};
use conduit_mcp::protocol::Era;
use conduit_mcp::protocol::version::LEGACY_VERSIONS;
use serde_json::{Map, Value, json};

/// Runs `scenario` against `url`.
pub(crate) async fn run(scenario: &str, url: &str, version: Option<&str>, context: &Value) -> Result<(), ClientError> {
    let mut b = ClientBuilder::http(url).client_info("conduit-mcp-conformance-client", env!("CARGO_PKG_VERSION"));
    b = b.input_handler(Cooperative).oauth(oauth(context)?);
    // The harness says which revision the scenario server speaks; a legacy
    // revision skips the modern probe (auto-detection would find it too).
    if version.is_some_and(|v| LEGACY_VERSIONS.contains(&v)) {
        b = b.era(Era::Legacy);
    }
    let client = b.connect().await?;
    match scenario {
        "http-standard-headers" => every_feature(&client).await,
        "http-custom-headers" => context_calls(&client, context).await,
        "json-schema-2020-12-preservation" => echo_schema(&client).await,
        "json-schema-ref-no-deref" | "initialize" => client.list_tools().await.map(drop),
        // tools_call, request-metadata, sep-2322-client-request-state,
        // http-invalid-tool-headers, elicitation-sep1034-client-defaults,
        // sse-retry and anything new: list the tools and call each usable one.
        _ => call_every_tool(&client).await,
    }
}

/// The fixed Client ID Metadata Document URL the suite expects (never fetched).
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// How the client authorizes when a scenario's server asks, from what the
/// context gives it, as an application configured with the same would:
/// client credentials (with a secret, or with a key: `private_key_jwt`); a
/// workload's token (the JWT bearer grant); an enterprise identity
/// provider's ID token (enterprise-managed authorization); else the
/// authorization code grant through [`Headless`] (pre-registered when the
/// context names a client, else a metadata document or registration), with
/// DPoP-bound tokens wherever the authorization server offers them.
fn oauth(context: &Value) -> Result<OAuth, ClientError> {
    let field = |k: &str| context.get(k).and_then(Value::as_str);
    let name = field("name").unwrap_or_default();
    if let (Some(id), Some(pem)) = (field("client_id"), field("private_key_pem")) {
        return Ok(OAuth::client_credentials_jwt(id, ClientAssertionKey::from_pem(pem.as_bytes())?));
    }
    if let (Some(id), Some(secret), true) =
        (field("client_id"), field("client_secret"), name.contains("client-credentials"))
    {
        return Ok(OAuth::client_credentials(id, secret));
    }
    if let (Some(id), Some(jwt)) = (field("client_id"), field("valid_jwt")) {
        return Ok(OAuth::workload_identity(id, JwtSource::value(jwt)));
    }
    if let (Some(endpoint), Some(idp_client), Some(id_token)) =
        (field("idp_token_endpoint"), field("idp_client_id"), field("idp_id_token"))
    {
        let idp = EnterpriseIdp::new(endpoint, idp_client, JwtSource::value(id_token));
        let mut o = OAuth::enterprise(idp);
        if let Some(id) = field("client_id") {
            o = o.client_id(id);
        }
        if let Some(secret) = field("client_secret") {
            o = o.client_secret(secret);
        }
        return Ok(o);
    }
    let mut o = OAuth::new()
        .authorizer(Headless)
        .client_name("conduit-mcp-conformance-client")
        .client_metadata_url(CLIENT_METADATA_URL)
        .dpop(true);
    if let Some(id) = field("client_id") {
        o = o.client_id(id);
    }
    if let Some(secret) = field("client_secret") {
        o = o.client_secret(secret);
    }
    Ok(o)
}

/// A value for one property of an input schema (its default, or a plain sample of its type).
fn sample(prop: &Value) -> Value {
    if let Some(d) = prop.get("default") {
        return d.clone();
    }
    if let Some(e) = prop.get("enum").and_then(Value::as_array).and_then(|e| e.first()) {
        return e.clone();
    }
    match prop.get("type").and_then(Value::as_str) {
        Some("integer") => json!(2),
        Some("number") => json!(3),
        Some("boolean") => json!(true),
        Some("array") => json!([]),
        Some("object") => json!({}),
        _ => json!("us-west1"),
    }
}

/// Arguments for every required property of `schema`.
fn arguments(schema: &Value) -> Value {
    let mut args = Map::new();
    let required = schema.get("required").and_then(Value::as_array).cloned().unwrap_or_default();
    let props = schema.get("properties").and_then(Value::as_object);
    for name in required.iter().filter_map(Value::as_str) {
        let prop = props.and_then(|p| p.get(name)).unwrap_or(&Value::Null);
        args.insert(name.to_owned(), sample(prop));
    }
    Value::Object(args)
}

async fn call(client: &Client, name: &str, args: Value) -> Result<(), ClientError> {
    match client.call_tool(name, args).await? {
        CallOutcome::Complete(_) => Ok(()),
        CallOutcome::Task(t) => t.wait().await.map(drop),
        _ => Ok(()),
    }
}

async fn call_every_tool(client: &Client) -> Result<(), ClientError> {
    for tool in client.list_tools().await? {
        call(client, &tool.name, arguments(&tool.input_schema)).await?;
    }
    Ok(())
}

/// The tool calls the scenario's context names, after listing the tools (for their headers).
async fn context_calls(client: &Client, context: &Value) -> Result<(), ClientError> {
    client.list_tools().await?;
    for c in context.get("toolCalls").and_then(Value::as_array).into_iter().flatten() {
        let name = c.get("name").and_then(Value::as_str).unwrap_or_default();
        call(client, name, c.get("arguments").cloned().unwrap_or(json!({}))).await?;
    }
    Ok(())
}

/// Tools, resources and prompts: list each, then call, read and get each.
async fn every_feature(client: &Client) -> Result<(), ClientError> {
    call_every_tool(client).await?;
    let resources = client.request("resources/list", json!({})).await?;
    for r in resources.get("resources").and_then(Value::as_array).into_iter().flatten() {
        if let Some(uri) = r.get("uri").and_then(Value::as_str) {
            client.request("resources/read", json!({ "uri": uri })).await?;
        }
    }
    let prompts = client.request("prompts/list", json!({})).await?;
    for p in prompts.get("prompts").and_then(Value::as_array).into_iter().flatten() {
        if let Some(name) = p.get("name").and_then(Value::as_str) {
            client.request("prompts/get", json!({ "name": name })).await?;
        }
    }
    Ok(())
}

/// Sends the focal tool's `inputSchema` back verbatim through the echo tool.
async fn echo_schema(client: &Client) -> Result<(), ClientError> {
    let tools = client.list_tools().await?;
    let focal = tools.iter().find(|t| t.name != "json_schema_echo");
    if let Some(f) = focal {
        call(client, "json_schema_echo", json!({ "schema": f.input_schema })).await?;
    }
    Ok(())
}
