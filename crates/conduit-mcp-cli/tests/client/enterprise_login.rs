//! `conduit-mcp login`'s enterprise flags against a real authorization server
//! (oidc-provider): `--client-assertion-key` (`private_key_jwt`) logs a
//! machine in with its key, a later `call` uses the token and, once it expires,
//! renews it with the key file the registration names; a key file
//! that holds no key is a usage error that prints none of it; `--dpop`
//! stores a DPoP-bound token with its key beside it, owner-only, never printed;
//! against `conduit-mcp serve --oauth-dpop`, calls with it succeed and the
//! same token sent as Bearer is refused.

use crate::cli_support::BIN;
use crate::common;
use crate::oauth_support::protected_server;

use conduit_mcp_test_oauth::{AuthorizationServer, Options, ResourceSettings, SERVICE};
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A throwaway P-256 key, registered below for the client `keyed` (its public x and y).
const KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgaJ4CCYHoSD3i98ZI
O1hkAUWWQj+v4qmVrH0p/AYcPXqhRANCAATxDD3GYVyFw+GbiUdWoXo93X3ZQSnj
2D9zAMKk5t0TWZq1M9L3FlVmQrF++ge88jatfxvVX2B6bBXgqImotw6T
-----END PRIVATE KEY-----
";
const KEY_X: &str = "8Qw9xmFchcPhm4lHVqF6Pd192UEp49g_cwDCpObdE1k";
const KEY_Y: &str = "mrUz0vcWVWZCsX76B7zyNq1_G9VfYHpsFeCoiai3DpM";

fn keyed_client() -> Value {
    json!({
        "client_id": "keyed",
        "token_endpoint_auth_method": "private_key_jwt",
        "token_endpoint_auth_signing_alg": "ES256",
        "jwks": { "keys": [{ "kty": "EC", "crv": "P-256", "x": KEY_X, "y": KEY_Y }] },
        "grant_types": ["client_credentials"],
        "response_types": [],
        "redirect_uris": [],
        "scope": "mcp:read mcp:write",
    })
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("conduit-enterprise-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

async fn cli(dir: &Path, args: &[&str]) -> Output {
    let (dir, args) = (dir.to_owned(), args.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    tokio::task::spawn_blocking(move || {
        Command::new(BIN)
            .args(&args)
            .env("CONDUIT_MCP_CONFIG_DIR", dir.join("config"))
            .env_remove("CONDUIT_MCP_CLIENT_SECRET")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The one tokens file, and what it stores.
fn stored(dir: &Path) -> (PathBuf, Value) {
    let file = std::fs::read_dir(dir.join("config/tokens"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .expect("a tokens file");
    let entry: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    (file, entry["value"].clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_machine_logs_in_with_its_key_and_calls() {
    let Some(auth) = AuthorizationServer::start_with(Options::default().client(keyed_client())).await else { return };
    let url = protected_server(&auth).await;
    // The protected server introspects: opaque tokens for it.
    auth.set_resource(&url, ResourceSettings::opaque()).await;
    let d = dir("key");
    let key = d.join("client.pem");
    std::fs::write(&key, KEY).unwrap();
    let key = key.to_str().unwrap();

    let o =
        cli(&d, &["login", &url, "--client-credentials", "--client-id", "keyed", "--client-assertion-key", key]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(!text(&o.stderr).contains("MIGH"), "{}", text(&o.stderr));
    assert_eq!(stored(&d).1["grant_type"], "client_credentials");
    let o = cli(&d, &["call", &url, "echo", "text=keyed machine"]).await;
    assert_eq!(text(&o.stdout).trim(), "keyed machine", "{}", text(&o.stderr));

    // Expired: renewed with the key file the registration names (the path is stored, not the key).
    let (file, first) = stored(&d);
    let mut entry: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    entry["value"]["expires_at_ms"] = 1.into();
    std::fs::write(&file, entry.to_string()).unwrap();
    let o = cli(&d, &["call", &url, "echo", "text=renewed"]).await;
    assert_eq!(text(&o.stdout).trim(), "renewed", "{}", text(&o.stderr));
    assert_ne!(stored(&d).1["access_token"], first["access_token"]);
    let clients = std::fs::read_dir(d.join("config/clients")).unwrap().filter_map(Result::ok);
    for c in clients.map(|e| std::fs::read_to_string(e.path()).unwrap()) {
        assert!(!c.contains("MIGH"), "the key itself is not stored: {c}");
    }

    // A file that holds no key: a usage error, before anything is sent, that shows none of it.
    let bad = d.join("bad.pem");
    std::fs::write(&bad, "-----BEGIN PRIVATE KEY-----\nc2VjcmV0\n-----END PRIVATE KEY-----\n").unwrap();
    let o = cli(
        &d,
        &[
            "login",
            &url,
            "--client-credentials",
            "--client-id",
            "keyed",
            "--client-assertion-key",
            bad.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("--client-assertion-key") && !text(&o.stderr).contains("c2VjcmV0"));
    std::fs::remove_dir_all(&d).ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dpop_login_stores_a_bound_token_with_its_key() {
    let Some(auth) = AuthorizationServer::start().await else { return };
    let url = protected_server(&auth).await;
    let d = dir("dpop");
    let secret = d.join("secret");
    std::fs::write(&secret, SERVICE.secret.unwrap()).unwrap();
    let args = ["login", &url, "--client-credentials", "--client-id", SERVICE.id];
    let o = cli(&d, &[&args[..], &["--client-secret-file", secret.to_str().unwrap(), "--dpop"]].concat()).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let (file, t) = stored(&d);
    assert_eq!(t["dpop_bound"], true, "{t}");
    let key = t["dpop_key"].as_str().expect("the key is stored with the tokens");
    assert!(!text(&o.stderr).contains(key) && !text(&o.stdout).contains(key));
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    std::fs::remove_dir_all(&d).ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dpop_from_login_to_calls_on_serve_oauth_dpop() {
    let Some(auth) = AuthorizationServer::start().await else { return };
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let listen = format!("127.0.0.1:{port}");
    let args = ["--listen", &listen, "--oauth-issuer", auth.issuer(), "--resource", &url, "--oauth-dpop"];
    let _node = common::Node::start_exactly(&args).await;
    let d = dir("serve-dpop");
    let secret = d.join("secret");
    std::fs::write(&secret, SERVICE.secret.unwrap()).unwrap();
    let login = ["login", &url, "--client-credentials", "--client-id", SERVICE.id, "--dpop"];
    let o = cli(&d, &[&login[..], &["--client-secret-file", secret.to_str().unwrap()]].concat()).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(stored(&d).1["dpop_bound"], true);
    // Each call carries a fresh proof (the library's tests cover both eras).
    for text_arg in ["text=bound", "text=again"] {
        let o = cli(&d, &["call", &url, "echo", text_arg]).await;
        assert_eq!(text(&o.stdout).trim(), &text_arg[5..], "{}", text(&o.stderr));
    }
    // The bound token without its proof is refused.
    let token = stored(&d).1["access_token"].as_str().unwrap().to_owned();
    let o = cli(&d, &["call", &url, "echo", "text=stolen", "--token", &token]).await;
    assert_ne!(o.status.code(), Some(0));
    assert!(!text(&o.stdout).contains("stolen"), "{}", text(&o.stdout));
    std::fs::remove_dir_all(&d).ok();
}

/// Each enterprise flag without what it needs is a usage error (exit 2), before anything is sent.
#[tokio::test]
async fn enterprise_flags_without_their_parts_are_usage_errors() {
    let d = dir("usage");
    let url = "http://127.0.0.1:9/mcp";
    for (args, says) in [
        (&["--workload-token-file", "/nonexistent"][..], "--client-id"),
        (&["--client-assertion-key", "/nonexistent"][..], "--client-id"),
        (&["--id-jag-token-endpoint", "https://idp.example/token", "--client-id", "c"][..], "--id-jag-client-id"),
        (
            &["--id-jag-token-endpoint", "https://idp.example/token", "--id-jag-client-id", "i", "--client-id", "c"][..],
            "--id-token-file or --id-token-env",
        ),
        (
            &[
                "--client-id",
                "c",
                "--workload-token-env",
                "V",
                "--id-jag-token-endpoint",
                "u",
                "--id-jag-client-id",
                "i",
            ][..],
            "two grants",
        ),
        (&["--client-id", "c", "--client-assertion-key", "/nonexistent"][..], "--client-assertion-key"),
    ] {
        let o = cli(&d, &[&["login", url][..], args].concat()).await;
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o.stderr));
        assert!(text(&o.stderr).contains(says), "{args:?}: {}", text(&o.stderr));
    }
    std::fs::remove_dir_all(&d).ok();
}

/// A person's login with a keyed client and DPoP, against `serve --oauth-require-dpop`:
/// the calls carry proofs the server checks against the token's `cnf.jkt`; once the token
/// expires the refresh (a proof with the same key, the client assertion from the key file)
/// keeps the binding, so calls go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persons_keyed_dpop_login_refreshes_and_keeps_the_binding() {
    let Some(browser) = conduit_mcp_test_oauth::scripted_browser() else { return };
    let mut app = keyed_client();
    app["client_id"] = json!("keyed-app");
    app["application_type"] = json!("native");
    app["grant_types"] = json!(["authorization_code", "refresh_token"]);
    app["response_types"] = json!(["code"]);
    app["redirect_uris"] = json!(["http://127.0.0.1/callback", "http://localhost/callback"]);
    app.as_object_mut().unwrap().remove("scope");
    let Some(auth) = AuthorizationServer::start_with(Options::default().client(app)).await else { return };
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let listen = format!("127.0.0.1:{port}");
    let args = ["--listen", &listen, "--oauth-issuer", auth.issuer(), "--resource", &url, "--oauth-require-dpop"];
    let args = [&args[..], &["--oauth-scope", "mcp:read"]].concat();
    let _node = common::Node::start_exactly(&args).await;
    let d = dir("person-dpop");
    let key = d.join("client.pem");
    std::fs::write(&key, KEY).unwrap();
    let (key, browser) = (key.to_str().unwrap(), browser.to_str().unwrap());
    let login = ["login", &url, "--client-id", "keyed-app", "--client-assertion-key", key, "--dpop"];
    let o = cli(&d, &[&login[..], &["--browser-command", browser, "--login-timeout", "60"]].concat()).await;
    assert_eq!(o.status.code(), Some(0), "{}{}", text(&o.stdout), text(&o.stderr));
    let (file, first) = stored(&d);
    assert_eq!((first["dpop_bound"].as_bool(), first["refresh_token"].is_string()), (Some(true), true), "{first}");
    let o = cli(&d, &["call", &url, "echo", "text=person"]).await;
    assert_eq!(text(&o.stdout).trim(), "person", "{}", text(&o.stderr));

    let mut entry: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    entry["value"]["expires_at_ms"] = 1.into();
    std::fs::write(&file, entry.to_string()).unwrap();
    let o = cli(&d, &["call", &url, "echo", "text=refreshed"]).await;
    assert_eq!(text(&o.stdout).trim(), "refreshed", "{}", text(&o.stderr));
    let (_, after) = stored(&d);
    assert_ne!(after["access_token"], first["access_token"], "refreshed");
    assert_eq!((&after["dpop_key"], after["dpop_bound"].as_bool()), (&first["dpop_key"], Some(true)), "the same key");
    std::fs::remove_dir_all(&d).ok();
}
