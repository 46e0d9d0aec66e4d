//! The JWT bearer grant from `conduit-mcp login` against a real authorization
//! server (oidc-provider, with the grant registered in `tests/oauth/enterprise.mjs`)
//! and `conduit-mcp serve --oauth-issuer` in each protocol era:
//! a workload's identity token (`--workload-token-file`, `--workload-token-env`;
//! the client authenticated by secret or by its key, `private_key_jwt`) and
//! enterprise-managed authorization (the person's ID token exchanged at the
//! identity provider for an ID-JAG, then the grant). Once the access token
//! expires, `call` renews it without being told anything: the workload token
//! is read again from its file (rotated meanwhile), the ID-JAG is exchanged
//! again with the identity provider's settings the login stored — where the ID
//! token and the secret are read, never what they hold.

use crate::cli_support::BIN;
use crate::common;

use conduit_mcp_test_oauth::{AuthorizationServer, IDP_CLIENT, JWT_BEARER_GRANT, Options};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A throwaway P-256 key, registered below for the client `wif-keyed` (its public x and y).
const KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgaJ4CCYHoSD3i98ZI
O1hkAUWWQj+v4qmVrH0p/AYcPXqhRANCAATxDD3GYVyFw+GbiUdWoXo93X3ZQSnj
2D9zAMKk5t0TWZq1M9L3FlVmQrF++ge88jatfxvVX2B6bBXgqImotw6T
-----END PRIVATE KEY-----
";
const KEY_X: &str = "8Qw9xmFchcPhm4lHVqF6Pd192UEp49g_cwDCpObdE1k";
const KEY_Y: &str = "mrUz0vcWVWZCsX76B7zyNq1_G9VfYHpsFeCoiai3DpM";

/// A client of the AS allowed the JWT bearer grant, with the secret `ID-secret`.
fn bearer_client(id: &str) -> Value {
    json!({
        "client_id": id, "client_secret": format!("{id}-secret"), "grant_types": [JWT_BEARER_GRANT],
        "response_types": [], "redirect_uris": [],
    })
}

/// The same grant, the client proving itself with its key.
fn keyed_bearer_client() -> Value {
    json!({
        "client_id": "wif-keyed", "token_endpoint_auth_method": "private_key_jwt",
        "token_endpoint_auth_signing_alg": "ES256",
        "jwks": { "keys": [{ "kty": "EC", "crv": "P-256", "x": KEY_X, "y": KEY_Y }] },
        "grant_types": [JWT_BEARER_GRANT], "response_types": [], "redirect_uris": [],
    })
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("conduit-grants-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs the CLI with the config in `dir` and these environment variables.
async fn cli(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let (dir, args) = (dir.to_owned(), args.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    tokio::task::spawn_blocking(move || {
        Command::new(BIN)
            .args(&args)
            .env("CONDUIT_MCP_CONFIG_DIR", dir.join("config"))
            .env_remove("CONDUIT_MCP_CLIENT_SECRET")
            .env_remove("CONDUIT_MCP_ID_JAG_CLIENT_SECRET")
            .envs(env)
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

/// The token file of `url`'s login and its whole text.
fn token_file(dir: &Path, url: &str) -> (PathBuf, String) {
    for e in std::fs::read_dir(dir.join("config/tokens")).unwrap().filter_map(Result::ok) {
        let body = std::fs::read_to_string(e.path()).unwrap();
        let v: Value = serde_json::from_str(&body).unwrap();
        if v["value"]["resource"] == url {
            return (e.path(), body);
        }
    }
    panic!("no tokens stored for {url}")
}

fn stored(dir: &Path, url: &str) -> Value {
    serde_json::from_str::<Value>(&token_file(dir, url).1).unwrap()["value"].clone()
}

/// Makes the stored access token of `url` expired.
fn expire(dir: &Path, url: &str) {
    let (file, body) = token_file(dir, url);
    let mut entry: Value = serde_json::from_str(&body).unwrap();
    entry["value"]["expires_at_ms"] = 1.into();
    std::fs::write(&file, entry.to_string()).unwrap();
}

/// `serve --oauth-issuer` for one era (`modern` or `legacy`) needing `mcp:read`; its URL.
async fn era_node(auth: &AuthorizationServer, era: &str) -> (common::Node, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let (url, listen) = (format!("http://127.0.0.1:{port}/mcp"), format!("127.0.0.1:{port}"));
    let args = ["--listen", &listen, "--era", era, "--oauth-issuer", auth.issuer(), "--resource", &url];
    let node = common::Node::start_exactly(&[&args[..], &["--oauth-scope", "mcp:read"]].concat()).await;
    (node, url)
}

async fn echoes(d: &Path, url: &str, said: &str, env: &[(&str, &str)]) {
    let o = cli(d, &["call", url, "echo", &format!("text={said}")], env).await;
    assert_eq!(text(&o.stdout).trim(), said, "{url}: {}", text(&o.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workload_logs_in_with_its_token_in_both_eras_and_renews_with_the_rotated_one() {
    let options = Options::default().client(bearer_client("wif")).client(keyed_bearer_client());
    let Some(auth) = AuthorizationServer::start_with(options).await else { return };
    let (_modern, modern) = era_node(&auth, "modern").await;
    let (_legacy, legacy) = era_node(&auth, "legacy").await;
    let d = dir("workload");
    let (secret, key, token) = (d.join("secret"), d.join("client.pem"), d.join("workload.jwt"));
    std::fs::write(&secret, "wif-secret").unwrap();
    std::fs::write(&key, KEY).unwrap();
    let first = auth.workload_token("ci-job").await;
    std::fs::write(&token, &first).unwrap();
    let (secret, key, token_path) = (secret.to_str().unwrap(), key.to_str().unwrap(), token.to_str().unwrap());

    // The token in a file, the client's secret; then in a variable, the client's key.
    for url in [&modern, &legacy] {
        let login = ["login", url, "--client-id", "wif", "--client-secret-file", secret];
        let o = cli(&d, &[&login[..], &["--workload-token-file", token_path]].concat(), &[]).await;
        assert_eq!(o.status.code(), Some(0), "{url}: {}", text(&o.stderr));
        echoes(&d, url, "workload", &[]).await;
        let (_, body) = token_file(&d, url);
        assert!(!body.contains(&first), "the workload token itself is not stored");
        let t = stored(&d, url);
        assert_eq!(
            (t["grant_type"].as_str(), t["jwt_source"].as_str()),
            (Some(JWT_BEARER_GRANT), Some(&*format!("file:{token_path}")))
        );
    }
    let env = [("CI_JOB_JWT", first.as_str())];
    for url in [&modern, &legacy] {
        let login = ["login", url, "--client-id", "wif-keyed", "--client-assertion-key", key];
        let o = cli(&d, &[&login[..], &["--workload-token-env", "CI_JOB_JWT"]].concat(), &env).await;
        assert_eq!(o.status.code(), Some(0), "{url}: {}", text(&o.stderr));
        echoes(&d, url, "keyed workload", &[]).await;
        assert_eq!(stored(&d, url)["jwt_source"], "env:CI_JOB_JWT");
    }

    // Back to the file login on the modern node; the platform rotates the token; the
    // access token expires: `call` alone renews with the token the file holds now.
    let login = ["login", &modern, "--client-id", "wif", "--client-secret-file", secret];
    let o = cli(&d, &[&login[..], &["--workload-token-file", token_path]].concat(), &[]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let before = stored(&d, &modern);
    std::fs::write(&token, auth.workload_token("ci-job").await).unwrap();
    let grants = auth.stats().await.jwt_bearer;
    expire(&d, &modern);
    echoes(&d, &modern, "renewed", &[]).await;
    assert_eq!(auth.stats().await.jwt_bearer, grants + 1, "one new grant");
    assert_ne!(stored(&d, &modern)["access_token"], before["access_token"]);

    // A token the AS does not trust is refused and reported, never retried another way.
    std::fs::write(&token, "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.").unwrap();
    let o = cli(&d, &[&login[..], &["--workload-token-file", token_path]].concat(), &[]).await;
    assert_ne!(o.status.code(), Some(0));
    assert!(text(&o.stderr).contains("invalid_grant"), "{}", text(&o.stderr));
    assert_eq!(auth.stats().await.jwt_bearer, grants + 1);
    std::fs::remove_dir_all(&d).ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_id_jag_login_works_in_both_eras_and_renews_through_the_identity_provider() {
    let Some(auth) = AuthorizationServer::start_with(Options::default().client(bearer_client("ent"))).await else {
        return;
    };
    let (_modern, modern) = era_node(&auth, "modern").await;
    let (_legacy, legacy) = era_node(&auth, "legacy").await;
    let d = dir("id-jag");
    let (secret, idp_secret, id_token) = (d.join("secret"), d.join("idp-credential"), d.join("id_token"));
    std::fs::write(&secret, "ent-secret").unwrap();
    std::fs::write(&idp_secret, IDP_CLIENT.secret.unwrap()).unwrap();
    let person = auth.id_token("alice").await;
    std::fs::write(&id_token, &person).unwrap();
    let endpoint = auth.idp_token_endpoint();
    let (secret, idp_secret_path, id_token_path) =
        (secret.to_str().unwrap(), idp_secret.to_str().unwrap(), id_token.to_str().unwrap());
    let login = |url: &str| -> Vec<String> {
        [
            "login",
            url,
            "--client-id",
            "ent",
            "--client-secret-file",
            secret,
            "--id-jag-token-endpoint",
            &endpoint,
            "--id-jag-client-id",
            IDP_CLIENT.id,
            "--id-token-file",
            id_token_path,
        ]
        .map(str::to_owned)
        .to_vec()
    };
    // The identity provider's secret from a file (modern), from the environment (legacy).
    let env = [("CONDUIT_MCP_ID_JAG_CLIENT_SECRET", IDP_CLIENT.secret.unwrap())];
    for (url, file, env) in [(&modern, true, &[][..]), (&legacy, false, &env[..])] {
        let mut args = login(url);
        if file {
            args.extend(["--id-jag-client-secret-file".into(), idp_secret_path.into()]);
        }
        let exchanges = auth.stats().await.exchange;
        let o = cli(&d, &args.iter().map(String::as_str).collect::<Vec<_>>(), env).await;
        assert_eq!(o.status.code(), Some(0), "{url}: {}", text(&o.stderr));
        assert_eq!(auth.stats().await.exchange, exchanges + 1, "one ID-JAG per login");
        echoes(&d, url, "enterprise", &[]).await;
        let (_, body) = token_file(&d, url);
        for secret in [person.as_str(), IDP_CLIENT.secret.unwrap()] {
            assert!(!body.contains(secret), "neither the ID token nor the secret is stored: {body}");
        }
        let idp = &stored(&d, url)["enterprise_idp"];
        let want_secret =
            if file { format!("file:{idp_secret_path}") } else { "env:CONDUIT_MCP_ID_JAG_CLIENT_SECRET".into() };
        assert_eq!(idp["client_secret"], *want_secret, "{idp}");
        assert_eq!(
            (idp["token_endpoint"].as_str(), idp["client_id"].as_str()),
            (Some(endpoint.as_str()), Some(IDP_CLIENT.id))
        );
        assert_eq!(idp["id_token"], *format!("file:{id_token_path}"));
    }

    // Expired: each renews through the identity provider (a new ID-JAG, then the grant)
    // with nothing but what the login stored (and, for the legacy one, the variable it names).
    for (url, env) in [(&modern, &[][..]), (&legacy, &env[..])] {
        let before = stored(&d, url);
        let exchanges = auth.stats().await.exchange;
        expire(&d, url);
        echoes(&d, url, "renewed", env).await;
        assert_eq!(auth.stats().await.exchange, exchanges + 1, "{url}: exchanged again");
        assert_ne!(stored(&d, url)["access_token"], before["access_token"]);
    }
    std::fs::remove_dir_all(&d).ok();
}
