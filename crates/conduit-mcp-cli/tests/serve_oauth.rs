//! `conduit-mcp serve --oauth-issuer … --resource …` against a real
//! authorization server (oidc-provider): the demo tools behind OAuth, a tool
//! scope from `--tool-scope`, the flags' refusals, and HTTPS with a generated
//! certificate.

mod common;

use common::*;
use conduit_mcp_test_oauth::{APP, AuthorizationServer, Login};
use serde_json::{Value, json};

/// A free loopback port (the resource URL must be known before the server starts).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

async fn raw_discover(client: &reqwest::Client, url: &str, token: Option<&str>) -> reqwest::Response {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": { "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} } } });
    let mut rb = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "server/discover")
        .body(body.to_string());
    if let Some(t) = token {
        rb = rb.bearer_auth(t);
    }
    rb.send().await.expect("an answer")
}

#[tokio::test]
async fn the_demo_tools_behind_oauth_with_a_tool_scope() {
    let Some(auth) = AuthorizationServer::start().await else { return };
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let resource = format!("http://{listen}/mcp");
    let node = Node::start_exactly(&[
        "--listen",
        &listen,
        "--oauth-issuer",
        auth.issuer(),
        "--resource",
        &resource,
        "--oauth-scope",
        "mcp:read",
        "--tool-scope",
        "echo=mcp:write",
    ])
    .await;

    let http = reqwest::Client::new();
    let r = raw_discover(&http, &node.url, None).await;
    assert_eq!(r.status(), 401);
    let challenge = r.headers()["www-authenticate"].to_str().unwrap().to_owned();
    let prm_url = format!("http://{listen}/.well-known/oauth-protected-resource/mcp");
    assert!(challenge.contains(&format!("resource_metadata=\"{prm_url}\"")), "{challenge}");
    assert!(challenge.contains("scope=\"mcp:read\""), "{challenge}");
    let prm: Value = http.get(&prm_url).send().await.unwrap().json().await.unwrap();
    assert_eq!(prm["resource"], resource);
    assert_eq!(prm["authorization_servers"], json!([auth.issuer()]));

    let read = auth.login(&Login::new(&APP, &resource).scope("mcp:read")).await.unwrap().access_token;
    let refused = call_refused(&node, Some(&read), "echo", json!({ "text": "hi" })).await;
    assert!(refused.to_string().to_lowercase().contains("scope"), "{refused}");
    let write = auth.login(&Login::new(&APP, &resource).scope("mcp:read mcp:write")).await.unwrap().access_token;
    let done = call(&node, Some(&write), "echo", json!({ "text": "hi" })).await;
    assert_eq!(first_text(&done), "hi");
}

#[tokio::test]
async fn oauth_flags_are_checked_at_start() {
    for (args, expected) in [
        (vec!["--oauth-issuer", "https://as.example"], "--resource"),
        (vec!["--resource", "https://mcp.example/mcp"], "--oauth-issuer"),
        (vec!["--oauth-issuer", "http://as.example", "--resource", "https://mcp.example/mcp"], "https"),
        (vec!["--oauth-issuer", "https://as.example", "--resource", "/mcp"], "resource"),
        (
            vec![
                "--oauth-issuer",
                "https://as.example",
                "--resource",
                "https://m.example/mcp",
                "--tool-scope",
                "nosuch=x",
            ],
            "no such tool",
        ),
        (vec!["--token", "t=alice", "--oauth-issuer", "https://as.example"], "exclude each other"),
        (vec!["--stdio", "--oauth-issuer", "https://as.example"], "--stdio"),
        (vec!["--tls-cert", "/nonexistent/cert.pem", "--tls-key", "/nonexistent/key.pem"], "/nonexistent/cert.pem"),
    ] {
        let (code, stderr) = Node::refused(&args).await;
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: expected {expected:?} in {stderr}");
    }
}

#[tokio::test]
async fn serves_https_with_a_generated_certificate() {
    let c = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()]).unwrap();
    let dir = std::env::temp_dir().join(format!("conduit-cli-tls-{}-{}", std::process::id(), free_port()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, c.cert.pem()).unwrap();
    std::fs::write(&key, c.signing_key.serialize_pem()).unwrap();
    let node = Node::start(&["--tls-cert", cert.to_str().unwrap(), "--tls-key", key.to_str().unwrap()]).await;
    assert!(node.url.starts_with("https://127.0.0.1:"), "{}", node.url);
    let trusting = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(c.cert.pem().as_bytes()).unwrap())
        .tls_built_in_root_certs(false)
        .build()
        .unwrap();
    let r = raw_discover(&trusting, &node.url, None).await;
    assert_eq!(r.status(), 200);
    let _ = std::fs::remove_dir_all(&dir);
}
