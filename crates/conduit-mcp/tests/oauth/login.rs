//! The resource server against a real authorization server (oidc-provider):
//! discovery from the 401 of either era, a scripted login (code + PKCE +
//! `resource`), calls on both eras, step-up to a tool scope, scope
//! hierarchies, metadata under another mount path, and tasks owned by the
//! token's subject qualified by its issuer.

use crate::common;
use crate::legacy_common;
use crate::oauth_support;

use common::{call, req};
use conduit_mcp::auth::oauth::{OAuth, OAuthConfig};
use conduit_mcp::ext::tasks::{Tasks, TasksConfig};
use conduit_mcp::transport::http::{self, HttpConfig};
use conduit_mcp_test_oauth::{APP, AuthorizationServer, Login};
use oauth_support::*;
use serde_json::{Value, json};

async fn get_json(url: &str) -> Value {
    let r = reqwest::get(url).await.expect("GET");
    assert_eq!(r.status(), 200, "{url}");
    assert_eq!(r.headers()["access-control-allow-origin"], "*");
    r.json().await.expect("JSON")
}

#[tokio::test]
async fn a_client_discovers_logs_in_and_calls_on_both_eras() {
    let Some(auth) = AuthorizationServer::start().await else { return };
    let rs = start(&[auth.issuer()], |c| c).await;

    // Any first request, of either era, is challenged the same way.
    let initialize = legacy_common::rpc(
        0,
        "initialize",
        json!({ "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }),
    );
    let metadata_url = format!("{}/.well-known/oauth-protected-resource/mcp", rs.url.trim_end_matches("/mcp"));
    for body in [req(1, "server/discover", json!({})), call(2, "whoami", json!({})), initialize.clone()] {
        let r = post(&rs.url, &body, None).await;
        assert_eq!(r.status, 401, "{body}");
        let c = r.www_authenticate();
        assert!(c.starts_with("Bearer "), "{c}");
        assert_eq!(challenge_param(&c, "resource_metadata").as_deref(), Some(metadata_url.as_str()));
        assert_eq!(challenge_param(&c, "scope").as_deref(), Some(READ));
        assert!(!c.contains("error="), "no error without a token: {c}");
    }

    // The metadata, path-inserted and at the root, comes from configuration.
    let prm = get_json(&metadata_url).await;
    assert_eq!(prm["resource"], rs.url);
    assert_eq!(prm["authorization_servers"], json!([auth.issuer()]));
    assert_eq!(prm["scopes_supported"], json!([READ]));
    assert_eq!(prm["bearer_methods_supported"], json!(["header"]));
    let root = get_json(&format!("{}/.well-known/oauth-protected-resource", rs.url.trim_end_matches("/mcp"))).await;
    assert_eq!(root, prm);
    // From there, the AS's metadata.
    let as_meta = get_json(&format!(
        "{}/.well-known/oauth-authorization-server",
        prm["authorization_servers"][0].as_str().unwrap()
    ))
    .await;
    assert_eq!(as_meta["issuer"], auth.issuer());

    // A user's login for exactly our resource, then calls on both eras.
    let token = auth.login(&Login::new(&APP, &rs.url).scope(READ).account("alice")).await.unwrap().access_token;
    let r = post(&rs.url, &call(3, "whoami", json!({})), Some(&token)).await;
    let who = r.assert_ok(&json!(3))["structuredContent"].clone();
    assert_eq!(who["id"], format!("{}#alice", auth.issuer()));
    assert_eq!(who["scopes"], json!([READ]));
    let mut legacy = legacy_common::Legacy::new(&rs.url).with_token(&token);
    legacy.initialize(json!({})).await;
    let result = legacy.result(4, "tools/call", json!({ "name": "whoami", "arguments": {} })).await;
    assert_eq!(result["structuredContent"]["id"], format!("{}#alice", auth.issuer()));
    // The legacy session belongs to the token's principal: no token, no session.
    let anonymous = legacy_common::Legacy { token: None, ..legacy };
    assert_eq!(anonymous.post(&legacy_common::rpc(5, "tools/list", json!({}))).await.status(), 401);
}

#[tokio::test]
async fn step_up_to_a_tool_scope_and_scope_hierarchies() {
    let Some(auth) = AuthorizationServer::start().await else { return };
    let rs = start(&[auth.issuer()], |c| c).await;
    let browser = auth.browser();

    let basic = auth.login_in(&browser, &Login::new(&APP, &rs.url).scope(READ)).await.unwrap().access_token;
    let r = post(&rs.url, &call(1, "deploy", json!({})), Some(&basic)).await;
    assert_eq!(r.status, 403, "{}", r.text);
    let c = r.www_authenticate();
    assert_eq!(challenge_param(&c, "error").as_deref(), Some("insufficient_scope"));
    // Everything the operation needs, in one challenge.
    let needed = challenge_param(&c, "scope").unwrap();
    assert_eq!(needed, "mcp:read mcp:deploy");
    assert!(challenge_param(&c, "resource_metadata").is_some());

    // Inside a 2025-11-25 session, the same answer: 403 and the very same challenge, not a 200
    // carrying a JSON-RPC error (finding 5 of issue 34).
    let mut legacy = legacy_common::Legacy::new(&rs.url).with_token(&basic);
    legacy.initialize(json!({})).await;
    let r = legacy.post(&legacy_common::rpc(7, "tools/call", json!({ "name": "deploy", "arguments": {} }))).await;
    assert_eq!(r.status(), 403);
    let legacy_challenge = r.headers().get("www-authenticate").map(|v| v.to_str().unwrap().to_owned());
    assert_eq!(legacy_challenge.as_deref(), Some(c.as_str()), "both eras challenge alike");
    let body: Value = r.json().await.unwrap();
    assert_eq!((&body["id"], &body["error"]["data"]["requiredScopes"]), (&json!(7), &json!(["mcp:deploy"])));

    // The client asks for what the challenge named, and the call goes through.
    let stepped = auth.login_in(&browser, &Login::new(&APP, &rs.url).scope(&needed)).await.unwrap().access_token;
    let r = post(&rs.url, &call(2, "deploy", json!({})), Some(&stepped)).await;
    assert_eq!(common::first_text(&r.assert_ok(&json!(2))), "deployed");

    // A broader scope implies the narrower one.
    let admin = auth.login(&Login::new(&APP, &rs.url).scope("mcp:read mcp:admin")).await.unwrap().access_token;
    let r = post(&rs.url, &call(3, "deploy", json!({})), Some(&admin)).await;
    r.assert_ok(&json!(3));

    // Without the scope every request needs: 403 on anything, naming it.
    let write_only = auth.login(&Login::new(&APP, &rs.url).scope("mcp:write")).await.unwrap().access_token;
    let r = post(&rs.url, &req(4, "server/discover", json!({})), Some(&write_only)).await;
    assert_eq!(r.status, 403);
    assert_eq!(challenge_param(&r.www_authenticate(), "scope").as_deref(), Some(READ));
}

#[tokio::test]
async fn tasks_belong_to_the_subject_of_one_issuer() {
    let (Some(one), Some(two)) = (AuthorizationServer::start().await, AuthorizationServer::start().await) else {
        return;
    };
    let rs = start(&[one.issuer(), two.issuer()], |c| c).await;
    let alice = one.login(&Login::new(&APP, &rs.url).scope(READ).account("alice")).await.unwrap().access_token;
    let bob = one.login(&Login::new(&APP, &rs.url).scope(READ).account("bob")).await.unwrap().access_token;
    let other_alice = two.login(&Login::new(&APP, &rs.url).scope(READ).account("alice")).await.unwrap().access_token;

    let tasks_meta = json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } });
    let mut create = call(1, "job", json!({}));
    create["params"]["_meta"] = common::meta_with(tasks_meta.clone());
    let created = post(&rs.url, &create, Some(&alice)).await.assert_ok(&json!(1));
    let id = created["taskId"].as_str().unwrap().to_owned();
    let owner = rs.tasks.status(&id).await.unwrap().owner;
    assert_eq!(owner, Some(format!("{}#alice", one.issuer())));

    let mut get = req(2, "tasks/get", json!({ "taskId": id }));
    get["params"]["_meta"] = common::meta_with(tasks_meta);
    post(&rs.url, &get, Some(&alice)).await.assert_ok(&json!(2));
    for (who, token) in [("bob", &bob), ("alice of another issuer", &other_alice)] {
        let r = post(&rs.url, &get, Some(token)).await;
        assert!(r.body.get("error").is_some(), "{who} must not see alice's task: {}", r.text);
        assert!(!r.text.contains(&id), "{who}: the id is never echoed");
    }
}

#[tokio::test]
async fn metadata_follows_the_configured_resource_when_mounted_elsewhere() {
    let Some(auth) = AuthorizationServer::start().await else { return };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    // As behind a proxy: the public resource is under /api, whatever the local address.
    let resource = format!("{origin}/api/mcp");
    let oauth = OAuth::new(OAuthConfig::new(auth.issuer(), &resource).scope(READ)).unwrap();
    let config = HttpConfig::default().oauth(oauth);
    let tasks = Tasks::new(TasksConfig::enabled()).unwrap();
    let app = axum::Router::new()
        .nest("/api/mcp", http::router(server(&tasks), config.clone()))
        .merge(http::well_known_router(&config));
    let served = tokio::spawn(async move { axum::serve(listener, app).await });

    let r = post(&resource, &req(1, "server/discover", json!({})), None).await;
    assert_eq!(r.status, 401);
    let metadata_url = challenge_param(&r.www_authenticate(), "resource_metadata").unwrap();
    assert_eq!(metadata_url, format!("{origin}/.well-known/oauth-protected-resource/api/mcp"));
    assert_eq!(get_json(&metadata_url).await["resource"], resource);
    assert_eq!(get_json(&format!("{origin}/.well-known/oauth-protected-resource")).await["resource"], resource);
    let token = auth.login(&Login::new(&APP, &resource).scope(READ)).await.unwrap().access_token;
    post(&resource, &call(2, "whoami", json!({})), Some(&token)).await.assert_ok(&json!(2));
    served.abort();
}
