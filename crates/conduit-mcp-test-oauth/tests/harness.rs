//! The harness against the real oidc-provider: what other tests rely on.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use conduit_mcp_test_oauth::{APP, AuthorizationServer, Fault, Faults, Key, Login, ResourceSettings, WEB};
use serde_json::{Value, json};

const RESOURCE: &str = "http://127.0.0.1:9/mcp";

fn part(token: &str, i: usize) -> Value {
    let seg = token.split('.').nth(i).expect("a JWT");
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(seg).expect("base64url")).expect("JSON")
}

async fn jwks(auth: &AuthorizationServer) -> Vec<String> {
    let keys: Value = reqwest::get(auth.url("/jwks")).await.unwrap().json().await.unwrap();
    keys["keys"].as_array().unwrap().iter().map(|k| k["kid"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn logins_tokens_rotation_and_faults() {
    let Some(auth) = AuthorizationServer::start().await else { return };

    // A user's login (public client, PKCE, resource): a JWT for the resource, signed by a published key.
    let t = auth.login(&Login::new(&APP, RESOURCE).scope("mcp:read mcp:write").account("bob")).await.unwrap();
    let (header, claims) = (part(&t.access_token, 0), part(&t.access_token, 1));
    assert_eq!(header["typ"], "at+jwt");
    assert_eq!(claims["sub"], "bob");
    assert_eq!(claims["aud"], RESOURCE);
    assert_eq!(claims["iss"], auth.issuer());
    assert_eq!(claims["scope"], "mcp:read mcp:write");
    assert_eq!(jwks(&auth).await, vec![header["kid"].as_str().unwrap().to_owned()]);

    // A confidential client with offline_access gets a refresh token that works.
    let t = auth.login(&Login::new(&WEB, RESOURCE).scope("mcp:read offline_access")).await.unwrap();
    assert_eq!(part(&t.access_token, 1)["sub"], "alice");
    let refreshed = auth.refresh(&WEB, t.refresh_token.as_deref().expect("a refresh token")).await.unwrap();
    assert_eq!(part(&refreshed.access_token, 1)["aud"], RESOURCE);

    // A refused scope comes back as an error, not a code.
    let e = auth.login(&Login::new(&APP, RESOURCE).scope("mcp:refused")).await.unwrap_err();
    assert!(e.0.contains("invalid_scope"), "{e}");

    // Machine tokens, and opaque ones where the resource says so.
    let m = auth.client_credentials("mcp:read", RESOURCE).await.unwrap();
    assert_eq!(part(&m.access_token, 1)["client_id"], "svc");
    auth.set_resource("http://127.0.0.1:9/opaque", ResourceSettings::opaque()).await;
    let o = auth.client_credentials("mcp:read", "http://127.0.0.1:9/opaque").await.unwrap();
    assert_eq!(o.access_token.split('.').count(), 1, "opaque: {}", o.access_token);

    // Rotation keeping the old key publishes both, new first; without, only the new one.
    let old = jwks(&auth).await;
    let kid = auth.rotate_keys(true).await;
    assert_eq!(jwks(&auth).await, [vec![kid.clone()], old].concat());
    let m = auth.client_credentials("mcp:read", RESOURCE).await.unwrap();
    assert_eq!(part(&m.access_token, 0)["kid"], kid.as_str());
    let newest = auth.rotate_keys(false).await;
    assert_eq!(jwks(&auth).await, vec![newest.clone()]);
    // The login session survives a rotation (one process, one store).
    let b = auth.browser();
    let carol = Login::new(&APP, RESOURCE).scope("mcp:read").account("carol");
    auth.login_in(&b, &carol).await.unwrap();
    auth.rotate_keys(true).await;
    let again = auth.login_in(&b, &carol).await.unwrap();
    assert_eq!(part(&again.access_token, 1)["sub"], "carol");

    // Minted tokens carry exactly the claims given.
    let minted = auth.mint(json!({ "sub": "x", "exp": 1 }), Key::Current).await;
    assert_eq!(part(&minted, 1), json!({ "sub": "x", "exp": 1 }));
    assert_eq!(part(&auth.mint(json!({}), Key::None).await, 0)["alg"], "none");
    assert_eq!(part(&auth.mint(json!({}), Key::Hs256).await, 0)["alg"], "HS256");
    assert!(!jwks(&auth).await.contains(&part(&auth.mint(json!({}), Key::Unknown).await, 0)["kid"].to_string()));

    // Faults and counts.
    auth.reset_stats().await;
    auth.set_faults(Faults::none().jwks(Fault::Down).metadata(Fault::WrongIssuer)).await;
    assert_eq!(reqwest::get(auth.url("/jwks")).await.unwrap().status(), 503);
    let meta: Value =
        reqwest::get(auth.url("/.well-known/oauth-authorization-server")).await.unwrap().json().await.unwrap();
    assert_ne!(meta["issuer"], auth.issuer());
    assert_eq!(meta["jwks_uri"], auth.url("/jwks"));
    auth.set_faults(Faults::none()).await;
    assert_eq!(reqwest::get(auth.url("/jwks")).await.unwrap().status(), 200);
    let s = auth.stats().await;
    assert_eq!((s.jwks, s.metadata), (2, 1));
}

/// `scripted-browser URL` logs in and opens the client's loopback callback.
#[tokio::test]
async fn the_scripted_browser_opens_the_callback() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Some(auth) = AuthorizationServer::start().await else { return };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let redirect = format!("http://127.0.0.1:{}/callback", listener.local_addr().unwrap().port());
    let login = Login::new(&APP, RESOURCE).scope("mcp:read").redirect_uri(&redirect);
    let url = auth.authorization_url(&login, &conduit_mcp_test_oauth::Pkce::new(), "the-state");
    let browser = tokio::process::Command::new(env!("CARGO_BIN_EXE_scripted-browser")).arg(&url).status();
    let callback = async {
        let (mut sock, _) = listener.accept().await.unwrap();
        let mut head = vec![0u8; 4096];
        let n = sock.read(&mut head).await.unwrap();
        sock.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok").await.unwrap();
        String::from_utf8_lossy(&head[..n]).into_owned()
    };
    let (status, head) = tokio::join!(browser, callback);
    assert!(status.unwrap().success());
    let line = head.lines().next().unwrap();
    assert!(line.starts_with("GET /callback?code=") && line.contains("state=the-state"), "{line}");
}
