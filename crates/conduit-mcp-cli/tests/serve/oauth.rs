//! `conduit-mcp serve --oauth-issuer … --resource …` against a real
//! authorization server (oidc-provider): the demo tools behind OAuth
//! configured by flags and by the `[oauth]` table (`deploy` behind
//! `mcp:deploy`, implied by `mcp:admin`; tasks owned by the token's subject;
//! no token in the server's debug log), the flags' refusals, and HTTPS with
//! a generated certificate.

use crate::common;

use common::*;
use conduit_mcp_test_oauth::{APP, AuthorizationServer, Login, RESOURCE_SERVER, ResourceSettings};
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

/// A raw `tools/call` (the Tasks extension and form elicitation declared), to read the HTTP status and challenge.
async fn raw_call(client: &reqwest::Client, url: &str, token: &str, tool: &str, args: Value) -> reqwest::Response {
    let body = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": tool, "arguments": args,
        "_meta": { "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                   "io.modelcontextprotocol/clientCapabilities": { "elicitation": { "form": {} },
                       "extensions": { TASKS: {} } } } } });
    client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .bearer_auth(token)
        .body(body.to_string())
        .send()
        .await
        .expect("an answer")
}

/// The value of `param` in a `WWW-Authenticate: Bearer` challenge.
fn challenge_param(challenge: &str, param: &str) -> Option<String> {
    let at = challenge.find(&format!("{param}=\""))? + param.len() + 2;
    Some(challenge[at..].split('"').next()?.to_owned())
}

/// The demo tools behind OAuth, however it was configured (`mcp:read` for
/// everything, `deploy` also `mcp:deploy`, which `mcp:admin` implies): the
/// challenge and metadata; `echo` on the basic scope; `deploy` refused with
/// every scope it needs in one challenge, then a task once the token has
/// them; tasks owned by the token's subject.
async fn the_demo_behind_oauth(node: &Node, auth: &AuthorizationServer, resource: &str) -> Vec<String> {
    let http = reqwest::Client::new();
    let r = raw_discover(&http, &node.url, None).await;
    assert_eq!(r.status(), 401);
    let challenge = r.headers()["www-authenticate"].to_str().unwrap().to_owned();
    let prm_url = resource.replace("/mcp", "/.well-known/oauth-protected-resource/mcp");
    assert_eq!(challenge_param(&challenge, "resource_metadata"), Some(prm_url.clone()), "{challenge}");
    assert_eq!(challenge_param(&challenge, "scope").as_deref(), Some("mcp:read"), "{challenge}");
    let prm: Value = http.get(&prm_url).send().await.unwrap().json().await.unwrap();
    assert_eq!(prm["resource"], resource);
    assert_eq!(prm["authorization_servers"], json!([auth.issuer()]));

    let login = |scope: &str, who: &str| Login::new(&APP, resource).scope(scope).account(who);
    let alice = auth.login(&login("mcp:read", "alice")).await.unwrap().access_token;
    assert_eq!(first_text(&call(node, Some(&alice), "echo", json!({ "text": "hi" })).await), "hi");

    let r = raw_call(&http, &node.url, &alice, "deploy", json!({ "environment": "prod" })).await;
    assert_eq!(r.status(), 403);
    let challenge = r.headers()["www-authenticate"].to_str().unwrap().to_owned();
    assert_eq!(challenge_param(&challenge, "error").as_deref(), Some("insufficient_scope"), "{challenge}");
    assert_eq!(challenge_param(&challenge, "scope").as_deref(), Some("mcp:read mcp:deploy"), "{challenge}");
    let refused = call_refused(node, Some(&alice), "deploy", json!({ "environment": "prod" })).await;
    let needed = refused.data.as_ref().and_then(|d| d.get("requiredScopes")).cloned();
    assert_eq!(needed, Some(json!(["mcp:deploy"])), "{refused:?}");

    let deployer = auth.login(&login("mcp:read mcp:deploy", "alice")).await.unwrap().access_token;
    let admin = auth.login(&login("mcp:read mcp:admin", "alice")).await.unwrap().access_token;
    for token in [&deployer, &admin] {
        let id = create(node, Some(token), "deploy", json!({ "environment": "staging" })).await;
        assert!(!id.is_empty());
    }

    // Alice's task is hers: bob (same issuer, other subject) cannot read it.
    let id = create(node, Some(&alice), "build", json!({ "ref": "main", "steps": 1 })).await;
    assert_eq!(get(node, Some(&alice), &id).await["taskId"], id);
    let bob = auth.login(&login("mcp:read", "bob")).await.unwrap().access_token;
    get_refused(node, Some(&bob), &id).await;
    vec![alice, deployer, admin, bob]
}

#[track_caller]
fn assert_no_token_logged(node: &Node, tokens: &[String]) {
    let log = node.log.lock().unwrap().join("\n");
    for t in tokens {
        let signature = t.rsplit('.').next().unwrap();
        assert!(!log.contains(signature), "a token's signature is in the server's log");
    }
}

#[tokio::test]
async fn the_demo_tools_behind_oauth_flags() {
    let Some(auth) = AuthorizationServer::start().await else { return };
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let resource = format!("http://{listen}/mcp");
    let node = Node::start_logging(
        &[
            "--listen",
            &listen,
            "--oauth-issuer",
            auth.issuer(),
            "--resource",
            &resource,
            "--oauth-scope",
            "mcp:read",
            "--tool-scope",
            "deploy=mcp:deploy",
            "--oauth-scope-implies",
            "mcp:admin=mcp:deploy",
        ],
        "debug",
    )
    .await;
    let tokens = the_demo_behind_oauth(&node, &auth, &resource).await;
    assert!(node.log.lock().unwrap().iter().any(|l| l.contains("DEBUG")), "the server logged at debug");
    assert_no_token_logged(&node, &tokens);
}

#[tokio::test]
async fn the_demo_tools_behind_an_oauth_table() {
    let Some(auth) = AuthorizationServer::start().await else { return };
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let resource = format!("http://{listen}/mcp");
    let dir = std::env::temp_dir().join(format!("conduit-cli-oauth-toml-{}-{port}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("serve.toml");
    std::fs::write(
        &config,
        format!(
            "[oauth]\nissuer = \"{}\"\nresource = \"{resource}\"\nscopes = [\"mcp:read\"]\n\n\
             [oauth.tool_scopes]\ndeploy = [\"mcp:deploy\"]\n\n\
             [oauth.scope_hierarchy]\n\"mcp:admin\" = [\"mcp:deploy\"]\n",
            auth.issuer()
        ),
    )
    .unwrap();
    let node = Node::start_exactly(&["--listen", &listen, "--config", config.to_str().unwrap()]).await;
    the_demo_behind_oauth(&node, &auth, &resource).await;
    let _ = std::fs::remove_dir_all(&dir);
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
        (vec!["--auth-failure-rate", "fast"], "--auth-failure-rate"),
        (vec!["--tls-cert", "/nonexistent/cert.pem", "--tls-key", "/nonexistent/key.pem"], "/nonexistent/cert.pem"),
    ] {
        let (code, stderr) = Node::refused(&args).await;
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: expected {expected:?} in {stderr}");
    }
}

/// Introspection credentials belong to one issuer (finding 3 of issue 34): with two issuers,
/// a bare `ID:SECRET` is refused at start, and `ISSUER=ID:SECRET` introspects at that issuer
/// alone — the other, which has no credentials here, never sees a token.
#[tokio::test]
async fn introspection_credentials_belong_to_their_issuer() {
    let (Some(a), Some(b)) = (AuthorizationServer::start().await, AuthorizationServer::start().await) else {
        return;
    };
    let creds = format!("{}:{}", RESOURCE_SERVER.id, RESOURCE_SERVER.secret.unwrap());
    let two = ["--oauth-issuer", a.issuer(), "--oauth-issuer", b.issuer()];
    let bare = [&two[..], &["--resource", "http://127.0.0.1:9/mcp", "--oauth-introspection-client", &creds]].concat();
    let (code, stderr) = Node::refused(&bare).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("ISSUER=ID:SECRET") && !stderr.contains("rs-secret"), "{stderr}");

    let listen = format!("127.0.0.1:{}", free_port());
    let resource = format!("http://{listen}/mcp");
    let for_a = format!("{}={creds}", a.issuer());
    let args = [&["--listen", &listen, "--resource", &resource, "--oauth-scope", "mcp:read"], &two[..]].concat();
    let node = Node::start_exactly(&[&args[..], &["--oauth-introspection-client", &for_a]].concat()).await;
    a.set_resource(&resource, ResourceSettings::opaque()).await;
    b.set_resource(&resource, ResourceSettings::opaque()).await;
    let login = |who: &str| Login::new(&APP, &resource).scope("mcp:read").account(who);
    let at_a = a.login(&login("alice")).await.unwrap().access_token;
    let at_b = b.login(&login("bob")).await.unwrap().access_token;
    assert_eq!(at_a.split('.').count(), 1, "opaque");
    a.reset_stats().await;
    b.reset_stats().await;
    let http = reqwest::Client::new();
    assert_eq!(raw_discover(&http, &node.url, Some(&at_a)).await.status(), 200);
    assert_eq!(raw_discover(&http, &node.url, Some(&at_b)).await.status(), 401, "B has no credentials here");
    assert_eq!(a.stats().await.introspection, 2, "both tokens were asked about at A");
    assert_eq!(b.stats().await.introspection, 0, "B never saw a token");
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
