//! `conduit-mcp login|logout` and every command on stored tokens, against a
//! real authorization server (oidc-provider on Node 22, loopback) and a
//! protected server of ours (introspection): the 401 without a login names
//! `conduit-mcp login URL`; login runs `--browser-command scripted-browser`
//! (the harness's browser binary, which follows the AS to the loopback
//! callback) or prints the URL for the test's browser (`--no-browser`); calls use the stored token (owner-only files, never
//! printed); an expired token is refreshed silently; logout forgets it;
//! client credentials log a machine in and renew without a person; the task
//! ledger names an OAuth principal by issuer and subject and resumes as it,
//! on 2025-11-25 from a new session too.

use crate::cli_support;
use crate::common;
use crate::oauth_support;

use cli_support::BIN;
use conduit_mcp_test_oauth::{AuthorizationServer, ResourceSettings, SERVICE};
use oauth_support::{protected_server, public_discovery_server};
use serde_json::Value;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn config_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("conduit-oauth-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

async fn cli(dir: &Path, args: &[&str]) -> Output {
    let (dir, args) = (dir.to_owned(), args.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    tokio::task::spawn_blocking(move || {
        Command::new(BIN).args(&args).env("CONDUIT_MCP_CONFIG_DIR", dir).stdin(Stdio::null()).output().unwrap()
    })
    .await
    .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The one tokens file under `dir`.
fn token_file(dir: &Path) -> Option<PathBuf> {
    std::fs::read_dir(dir.join("tokens")).ok()?.filter_map(Result::ok).map(|e| e.path()).find(|p| {
        p.extension().is_some_and(|e| e == "json") && !p.file_name().unwrap().to_string_lossy().starts_with('.')
    })
}

fn stored(dir: &Path) -> Value {
    let f = token_file(dir).expect("a tokens file");
    serde_json::from_slice::<Value>(&std::fs::read(f).unwrap()).unwrap()["value"].clone()
}

/// `conduit-mcp login URL --no-browser`, the printed URL opened by the AS's scripted browser.
async fn login(auth: &AuthorizationServer, dir: &Path, url: &str) -> (Option<i32>, String) {
    login_with(auth, dir, url, &[]).await
}

/// [`login`] with more arguments.
async fn login_with(auth: &AuthorizationServer, dir: &Path, url: &str, more: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(BIN)
        .args(["login", url, "--no-browser"])
        .args(more)
        .env("CONDUIT_MCP_CONFIG_DIR", dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let reader = std::thread::spawn(move || {
        let mut lines = std::io::BufReader::new(stderr).lines().map_while(Result::ok);
        let mut seen = Vec::new();
        let mut tx = Some(tx);
        for line in lines.by_ref() {
            if let (Some(t), true) = (tx.as_ref(), line.trim_start().starts_with("http")) {
                let _ = t;
                let _ = tx.take().unwrap().send(line.trim().to_owned());
            }
            seen.push(line);
        }
        seen.join("\n")
    });
    let authorization_url = rx.await.expect("login printed the authorization URL");
    let (_, status) = auth.browser().open(&authorization_url).await.expect("the browser reached the callback");
    assert!(status.is_success(), "the callback answered {status}");
    let code = tokio::task::spawn_blocking(move || child.wait().unwrap().code()).await.unwrap();
    (code, reader.join().unwrap())
}

/// `conduit-mcp login URL --browser-command BROWSER`: the CLI runs the browser itself.
async fn login_by_command(dir: &Path, url: &str, browser: &Path) -> Output {
    let browser = browser.to_str().expect("a UTF-8 path").to_owned();
    cli(dir, &["login", url, "--browser-command", &browser, "--login-timeout", "60"]).await
}

#[cfg(unix)]
fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_call_refresh_logout() {
    let Some(browser) = conduit_mcp_test_oauth::scripted_browser() else { return };
    let Some(auth) = AuthorizationServer::start().await else { return };
    let url = protected_server(&auth).await;
    auth.set_resource(&url, ResourceSettings::opaque()).await;
    let dir = config_dir("login");

    let o = cli(&dir, &["call", &url, "echo", "text=hi"]).await;
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        text(&o.stderr).trim(),
        format!("error: {url} requires authorization: run `conduit-mcp login {url}` (or pass --token TOKEN)")
    );

    let o = login_by_command(&dir, &url, &browser).await;
    let log = format!("{}{}", text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(0), "{log}");
    assert!(log.contains(&format!("logged in to {url} (authorization server {}", auth.issuer())), "{log}");
    let first = stored(&dir);
    let access = first["access_token"].as_str().unwrap().to_owned();
    assert!(first["refresh_token"].is_string(), "offline_access gave a refresh token: {first}");
    assert!(!log.contains(&access), "the token was printed");
    #[cfg(unix)]
    {
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&token_file(&dir).unwrap()), 0o600);
    }

    let o = cli(&dir, &["call", &url, "echo", "text=with the stored token"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout).trim(), "with the stored token");
    assert!(!text(&o.stdout).contains(&access) && !text(&o.stderr).contains(&access));

    // Expired (as far as the client knows): refreshed before use, same scopes, new tokens stored.
    let file = token_file(&dir).unwrap();
    let mut entry: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    entry["value"]["expires_at_ms"] = 1.into();
    std::fs::write(&file, entry.to_string()).unwrap();
    let before = auth.stats().await.token;
    let o = cli(&dir, &["tools", &url]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("echo"));
    let refreshed = stored(&dir);
    // oidc-provider refuses a refresh naming resource scopes (invalid_scope): the client asks
    // once more without `scope`, which keeps what was granted.
    let refreshes = auth.stats().await.token - before;
    assert!((1..=2).contains(&refreshes), "{refreshes} token requests");
    assert_ne!(refreshed["access_token"], first["access_token"]);
    assert_eq!(refreshed["scopes"], first["scopes"]);
    assert!(refreshed["expires_at_ms"].as_i64().unwrap() > 1);

    // A token the server no longer accepts: one refresh on the 401, then the call.
    let mut entry: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    entry["value"]["access_token"] = "revoked-or-garbage".into();
    std::fs::write(&file, entry.to_string()).unwrap();
    let o = cli(&dir, &["call", &url, "echo", "text=after a 401"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout).trim(), "after a 401");

    let o = cli(&dir, &["logout", &url]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("logged out"), "{}", text(&o.stderr));
    assert!(token_file(&dir).is_none());
    let o = cli(&dir, &["call", &url, "echo", "text=hi"]).await;
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("conduit-mcp login"), "{}", text(&o.stderr));
    std::fs::remove_dir_all(&dir).ok();
}

/// A server that answers `server/discover` (and `initialize`, `tools/list`)
/// without a token and asks for one only on its tool: `login` needs no
/// refusal to start, it finds the authorization server from the metadata.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_to_a_server_whose_discovery_is_public() {
    let Some(browser) = conduit_mcp_test_oauth::scripted_browser() else { return };
    let Some(auth) = AuthorizationServer::start().await else { return };
    let url = public_discovery_server(&auth).await;
    auth.set_resource(&url, ResourceSettings::opaque()).await;
    let dir = config_dir("public-discovery");
    let o = cli(&dir, &["tools", &url]).await;
    assert_eq!(o.status.code(), Some(0), "listed without a token: {}", text(&o.stderr));

    let o = login_by_command(&dir, &url, &browser).await;
    let log = format!("{}{}", text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(0), "{log}");
    assert!(log.contains(&format!("logged in to {url} (authorization server {}", auth.issuer())), "{log}");
    assert!(stored(&dir)["access_token"].is_string());
    let o = cli(&dir, &["call", &url, "echo", "text=after a login without a refusal"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout).trim(), "after a login without a refusal");
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_credentials_login_renews_without_a_person() {
    let Some(auth) = AuthorizationServer::start().await else { return };
    let url = protected_server(&auth).await;
    auth.set_resource(&url, ResourceSettings::opaque()).await;
    let dir = config_dir("machine");
    let secret = SERVICE.secret.unwrap();
    let o =
        cli(&dir, &["login", &url, "--client-credentials", "--client-id", SERVICE.id, "--client-secret", secret]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(!text(&o.stderr).contains(secret));
    let first = stored(&dir);
    assert_eq!(first["grant_type"], "client_credentials");
    let o = cli(&dir, &["call", &url, "echo", "text=machine"]).await;
    assert_eq!(text(&o.stdout).trim(), "machine", "{}", text(&o.stderr));

    // Expired: a new client-credentials grant from the stored client, no flags needed.
    let file = token_file(&dir).unwrap();
    let mut entry: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    entry["value"]["expires_at_ms"] = 1.into();
    std::fs::write(&file, entry.to_string()).unwrap();
    let o = cli(&dir, &["call", &url, "echo", "text=again"]).await;
    assert_eq!(text(&o.stdout).trim(), "again", "{}", text(&o.stderr));
    assert_ne!(stored(&dir)["access_token"], first["access_token"]);
    std::fs::remove_dir_all(&dir).ok();
}

/// The whole chain against our own resource server: `conduit-mcp serve
/// --oauth-issuer` checking oidc-provider's JWTs; a tool that needs more
/// scope names the login that gets it; refresh; logout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_whole_chain_against_serve_oauth_issuer() {
    let Some(auth) = AuthorizationServer::start().await else { return };
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let listen = format!("127.0.0.1:{port}");
    let _node = common::Node::start_exactly(&[
        "--listen",
        &listen,
        "--oauth-issuer",
        auth.issuer(),
        "--resource",
        &url,
        "--oauth-scope",
        "mcp:read",
        "--tool-scope",
        "build=mcp:deploy",
    ])
    .await;
    let dir = config_dir("chain");
    let o = cli(&dir, &["tools", &url]).await;
    assert!(text(&o.stderr).contains(&format!("run `conduit-mcp login {url}`")), "{}", text(&o.stderr));

    let (code, log) = login(&auth, &dir, &url).await;
    assert_eq!(code, Some(0), "{log}");
    assert!(log.contains("scopes: mcp:read offline_access"), "{log}");
    let o = cli(&dir, &["call", &url, "echo", "text=through the chain"]).await;
    assert_eq!(text(&o.stdout).trim(), "through the chain", "{}", text(&o.stderr));

    // A tool that needs mcp:deploy: the 403 names the login that adds it.
    let o = cli(&dir, &["call", &url, "build", "ref=main", "steps=1"]).await;
    assert_eq!(o.status.code(), Some(2));
    let want = format!(
        "error: {url} asks for more scope: run `conduit-mcp login {url} --scope 'mcp:read offline_access mcp:deploy'`"
    );
    assert_eq!(text(&o.stderr).lines().last().unwrap_or_default(), want, "{}", text(&o.stderr));
    let (code, log) = login_with(&auth, &dir, &url, &["--scope", "mcp:read offline_access mcp:deploy"]).await;
    assert_eq!(code, Some(0), "{log}");
    let o = cli(&dir, &["call", &url, "build", "ref=main", "steps=1"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout).trim(), "built main in 1 steps");

    // The ledger names the principal by issuer and subject, never the token, and resumes as it.
    let o = cli(&dir, &["call", &url, "build", "ref=later", "steps=2", "--detach"]).await;
    let id = text(&o.stdout).trim().to_owned();
    let o = cli(&dir, &["task", "list", "--json", "--offline"]).await;
    let access = stored(&dir)["access_token"].as_str().unwrap().to_owned();
    let entries: Vec<Value> = text(&o.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let later = entries.iter().find(|e| e["taskId"] == id.as_str()).expect("recorded");
    let who = later["principal"].as_str().unwrap();
    assert!(who.starts_with(&format!("oauth:{}#", auth.issuer())) && !who.ends_with('#'), "{who}");
    assert!(!std::fs::read(dir.join("tasks.db")).unwrap().windows(access.len()).any(|w| w == access.as_bytes()));
    let o = cli(&dir, &["task", "wait", &url, "--all"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout).trim(), "built later in 2 steps");

    // Expired: refreshed with the same scopes, and the new JWT still opens the tool.
    let file = token_file(&dir).unwrap();
    let before = stored(&dir);
    let mut entry: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    entry["value"]["expires_at_ms"] = 1.into();
    std::fs::write(&file, entry.to_string()).unwrap();
    let o = cli(&dir, &["call", &url, "build", "ref=again", "steps=1"]).await;
    assert_eq!(text(&o.stdout).trim(), "built again in 1 steps", "{}", text(&o.stderr));
    assert_ne!(stored(&dir)["access_token"], before["access_token"]);

    let o = cli(&dir, &["logout", &url]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let o = cli(&dir, &["tools", &url]).await;
    assert_eq!(o.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).ok();
}

/// On 2025-11-25 with OAuth, a task belongs to the principal, not the session:
/// the ledger marks it resumable and a new process (a new session) finishes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_task_resumes_from_a_new_session_as_the_same_principal() {
    let Some(auth) = AuthorizationServer::start().await else { return };
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let listen = format!("127.0.0.1:{port}");
    let _node = common::Node::start_exactly(&[
        "--listen",
        &listen,
        "--era",
        "legacy",
        "--oauth-issuer",
        auth.issuer(),
        "--resource",
        &url,
        "--oauth-scope",
        "mcp:read",
    ])
    .await;
    let dir = config_dir("legacy-ledger");
    let (code, log) = login(&auth, &dir, &url).await;
    assert_eq!(code, Some(0), "{log}");
    let o = cli(&dir, &["call", &url, "build", "ref=session", "steps=2", "--detach"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let o = cli(&dir, &["task", "list", "--json", "--offline"]).await;
    let entry: Value = serde_json::from_str(text(&o.stdout).lines().next().expect("recorded")).unwrap();
    assert_eq!((entry["version"].as_str(), entry["resumable"].as_bool()), (Some("2025-11-25"), Some(true)));
    assert!(entry["principal"].as_str().unwrap().starts_with(&format!("oauth:{}#", auth.issuer())), "{entry}");
    let o = cli(&dir, &["task", "wait", &url, "--all"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout).trim(), "built session in 2 steps");
    std::fs::remove_dir_all(&dir).ok();
}
