//! One test per row of the HTTP status table (protocol brief §2.6), over a real socket.

use crate::common;

use common::*;
use conduit_mcp::auth::{BearerTokens, Principal};
use conduit_mcp::prelude::*;
use serde_json::{Value, json};

fn server() -> Server {
    Server::builder("status", "1.0.0")
        .tool(echo_tool())
        .tool(
            Tool::new("deploy", "Deploys (needs the deploy scope)")
                .scopes(["deploy"])
                .handle(|_ctx, _args| async { Ok(CallToolResult::text("deployed")) }),
        )
        .tool(Tool::new("ask", "Asks the user for a name").handle(|_ctx, _args| async {
            Ok(InputRequired::new().request(
                "name",
                mrtr::elicit("Your name?", json!({ "type": "object", "properties": { "name": { "type": "string" } } })),
            ))
        }))
        .build()
        .expect("valid server")
}

fn tokens() -> BearerTokens {
    BearerTokens::new()
        .token("alice-token", Principal::new("alice"))
        .token("bob-token", Principal::new("bob").scopes(["deploy"]))
}

#[tokio::test]
async fn success_is_200_json() {
    let h = start(server()).await;
    let r = h.send(&req(1, "server/discover", json!({}))).await;
    let result = r.assert_ok(&json!(1));
    assert_eq!(r.content_type(), "application/json");
    assert_eq!(result["resultType"], "complete");
    assert!(r.headers.get("mcp-session-id").is_none(), "no session on modern traffic");
}

#[tokio::test]
async fn notification_is_202_with_no_body() {
    let h = start(server()).await;
    let body = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 1 } });
    let r = h.send(&body).await;
    assert_eq!(r.status.as_u16(), 202);
    assert!(r.text.is_empty(), "202 has no body: {:?}", r.text);
}

#[tokio::test]
async fn bad_origin_is_403() {
    let h = start(server()).await;
    let body = req(2, "server/discover", json!({}));
    let r = h.send_with(&body, |hd| set(hd, "origin", "http://evil.example.com")).await;
    assert_eq!(r.status.as_u16(), 403, "{}", r.text);
    assert!(r.body.get("result").is_none());
    // A localhost origin, any port, passes.
    let ok = h.send_with(&body, |hd| set(hd, "origin", "http://localhost:5173")).await;
    ok.assert_ok(&json!(2));
}

#[tokio::test]
async fn non_localhost_host_is_403() {
    let h = start(server()).await;
    let body = req(3, "server/discover", json!({}));
    let r = h.send_with(&body, |hd| set(hd, "host", "evil.example.com")).await;
    assert_eq!(r.status.as_u16(), 403, "{}", r.text);
    assert!(r.body.get("result").is_none());
    for host in ["localhost", "127.0.0.1:9", "[::1]:8080"] {
        let ok = h.send_with(&body, |hd| set(hd, "host", host)).await;
        ok.assert_ok(&json!(3));
    }
}

#[tokio::test]
async fn missing_or_invalid_token_is_401_with_challenge() {
    let config = HttpConfig::default()
        .auth(tokens())
        .resource_metadata("https://mcp.example.com/.well-known/oauth-protected-resource");
    let h = start_with(server(), config).await;
    let body = req(4, "server/discover", json!({}));

    let missing = h.send(&body).await;
    assert_eq!(missing.status.as_u16(), 401);
    let challenge = missing.www_authenticate();
    assert!(challenge.starts_with("Bearer"), "{challenge}");
    assert!(
        challenge.contains("resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource\""),
        "{challenge}"
    );
    assert!(!challenge.contains("error="), "no error code when no token was sent: {challenge}");

    let invalid = h.send_with(&body, |hd| set(hd, "authorization", "Bearer not-a-token")).await;
    assert_eq!(invalid.status.as_u16(), 401);
    let challenge = invalid.www_authenticate();
    assert!(challenge.starts_with("Bearer") && challenge.contains("error=\"invalid_token\""), "{challenge}");

    let ok = h.send_with(&body, |hd| set(hd, "authorization", "Bearer alice-token")).await;
    ok.assert_ok(&json!(4));
}

#[tokio::test]
async fn insufficient_scope_is_403_with_challenge() {
    let h = start_with(server(), HttpConfig::default().auth(tokens())).await;
    let body = call("scope-1", "deploy", json!({}));
    let r = h.send_with(&body, |hd| set(hd, "authorization", "Bearer alice-token")).await;
    assert_eq!(r.status.as_u16(), 403, "{}", r.text);
    let challenge = r.www_authenticate();
    assert!(challenge.starts_with("Bearer"), "{challenge}");
    assert!(challenge.contains("error=\"insufficient_scope\""), "{challenge}");
    assert!(challenge.contains("scope=\"deploy\""), "{challenge}");
    assert_eq!(r.body["id"], "scope-1", "the error echoes the id");
    assert!(r.body.get("result").is_none());

    let ok = h.send_with(&body, |hd| set(hd, "authorization", "Bearer bob-token")).await;
    let result = ok.assert_ok(&json!("scope-1"));
    assert_eq!(first_text(&result), "deployed");
}

#[tokio::test]
async fn header_missing_or_mismatched_is_400_32020() {
    let h = start(server()).await;
    let body = req(5, "server/discover", json!({}));
    h.send_with(&body, |hd| {
        hd.remove("mcp-protocol-version");
    })
    .await
    .assert_error(400, -32020, &json!(5));
    h.send_with(&body, |hd| set(hd, "mcp-protocol-version", "2025-11-25")).await.assert_error(400, -32020, &json!(5));
    h.send_with(&body, |hd| set(hd, "mcp-method", "tools/list")).await.assert_error(400, -32020, &json!(5));
}

#[tokio::test]
async fn missing_meta_fields_are_400_32602() {
    let h = start(server()).await;
    let cases = [
        ("no params", json!({ "jsonrpc": "2.0", "id": 6, "method": "server/discover" })),
        ("no _meta", json!({ "jsonrpc": "2.0", "id": 6, "method": "server/discover", "params": {} })),
        (
            "no protocolVersion",
            json!({ "jsonrpc": "2.0", "id": 6, "method": "server/discover", "params": { "_meta": { CC: {} } } }),
        ),
        (
            "no clientCapabilities",
            json!({ "jsonrpc": "2.0", "id": 6, "method": "server/discover", "params": { "_meta": { PV: V } } }),
        ),
    ];
    for (what, body) in cases {
        // The version header is present and correct: the fault is the body, so -32602, not -32020.
        let r = h.send(&body).await;
        assert_eq!(r.code(), Some(-32602), "{what}: {}", r.text);
        r.assert_error(400, -32602, &json!(6));
    }
}

#[tokio::test]
async fn unsupported_version_is_400_32022_with_data() {
    let h = start(server()).await;
    let body = req(7, "server/discover", json!({ "_meta": { PV: "1900-01-01", CC: {} } }));
    let r = h.send(&body).await;
    r.assert_error(400, -32022, &json!(7));
    let data = &r.body["error"]["data"];
    assert_eq!(data["requested"], "1900-01-01");
    assert!(data["supported"].as_array().is_some_and(|s| s.contains(&json!(V))), "{data}");

    // On a modern-only server a legacy initialize (no modern _meta) is refused the same way,
    // naming what is supported.
    let modern_only = Server::builder("status", "1.0.0")
        .tool(echo_tool())
        .eras(conduit_mcp::protocol::version::ServedEras::Modern)
        .build()
        .expect("valid server");
    let h = start(modern_only).await;
    let legacy = json!({ "jsonrpc": "2.0", "id": 8, "method": "initialize",
        "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "old", "version": "1" } } });
    let r = h.send_with(&legacy, |hd| set(hd, "mcp-protocol-version", "2025-11-25")).await;
    r.assert_error(400, -32022, &json!(8));
    assert_eq!(r.body["error"]["data"]["requested"], "2025-11-25");
    assert_eq!(r.body["error"]["data"]["supported"], json!([V]));
}

#[tokio::test]
async fn missing_client_capability_is_400_32021() {
    let h = start(server()).await;
    let r = h.send(&call(9, "ask", json!({}))).await;
    r.assert_error(400, -32021, &json!(9));
    assert_eq!(r.body["error"]["data"]["requiredCapabilities"], json!({ "elicitation": {} }));

    // Declared on this request: the tool may ask.
    let body = req(10, "tools/call", json!({ "name": "ask", "_meta": meta_with(json!({ "elicitation": {} })) }));
    let result = h.send(&body).await.assert_ok(&json!(10));
    assert_eq!(result["resultType"], "input_required");
    assert_eq!(result["inputRequests"]["name"]["method"], "elicitation/create");
}

#[tokio::test]
async fn unknown_and_removed_methods_are_404_32601() {
    let h = start(server()).await;
    for (i, method) in [
        "no/such/method",
        "initialize",
        "ping",
        "tasks/list",
        "tasks/result",
        "tasks/get",
        "logging/setLevel",
        "resources/subscribe",
        "prompts/list",
    ]
    .into_iter()
    .enumerate()
    {
        // Modern _meta and matching headers: the method itself is the problem.
        let id = json!(format!("m-{i}"));
        let r = h.send(&req(id.clone(), method, json!({}))).await;
        assert_eq!(r.status.as_u16(), 404, "{method}: {}", r.text);
        r.assert_error(404, -32601, &id);
    }
}

#[tokio::test]
async fn get_and_delete_are_405() {
    let h = start(server()).await;
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let r = read(h.client.request(method.clone(), &h.url).header("accept", "text/event-stream")).await;
        assert_eq!(r.status.as_u16(), 405, "{method}");
        let allow = r.headers.get("allow").and_then(|v| v.to_str().ok()).unwrap_or_default();
        assert!(allow.contains("POST"), "{method}: Allow = {allow:?}");
    }
}

#[tokio::test]
async fn handler_errors_are_200() {
    let h = start(server()).await;
    let r = h.send(&call("u-1", "no_such_tool", json!({}))).await;
    r.assert_error(200, -32602, &json!("u-1"));
    assert!(r.body["error"]["message"].as_str().is_some_and(|m| m.contains("no_such_tool")), "{}", r.text);
    assert_eq!(r.content_type(), "application/json");
    // The id keeps its JSON type.
    let r = h.send(&call(42, "no_such_tool", json!({}))).await;
    r.assert_error(200, -32602, &Value::from(42));
}
