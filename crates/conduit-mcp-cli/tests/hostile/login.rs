//! Issue 34, client findings 3, 4, 6, 8 and 9: `conduit-mcp login` and the
//! commands after it against a hostile authorization server (on the hostile
//! server's socket; its issuer is that origin).

use crate::hostile_support::oauth::{LoginRun, bearer, challenge, discovery, form, json_reply, stored, token_file};
use crate::hostile_support::{Hostile, Reply, Req, cli_in, config_dir, discover, hostile_http, tools};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(30);

type Form = HashMap<String, String>;

/// A protected hostile server and its authorization server: the token
/// endpoint answers `token(form)`, and `/mcp` takes any token starting with
/// `at-` (a modern server with one tool `t`), challenging everything else.
struct Protected {
    h: Hostile,
    /// The token requests, in order.
    token_requests: Arc<Mutex<Vec<Form>>>,
}

async fn protected(token: impl Fn(&Form) -> Reply + Send + Sync + 'static) -> Protected {
    let token_requests = Arc::new(Mutex::new(Vec::new()));
    let seen = token_requests.clone();
    let h = hostile_http(move |req: &Req| {
        if let Some(r) = discovery(req) {
            return r;
        }
        match req.path() {
            "/token" => {
                let f = form(req);
                seen.lock().unwrap().push(f.clone());
                token(&f)
            }
            "/mcp" if bearer(req).is_some_and(|t| t.starts_with("at-")) => match req.json["method"].as_str() {
                Some("server/discover") => Reply::Result(discover()),
                Some("tools/list") => {
                    Reply::Result(tools(json!([{ "name": "t", "inputSchema": { "type": "object" } }])))
                }
                _ => Reply::Result(json!({ "content": [{ "type": "text", "text": "ok" }] })),
            },
            "/mcp" => challenge(&req.origin, ""),
            _ => Reply::Status(404),
        }
    })
    .await;
    Protected { h, token_requests }
}

/// A token response with `at-1`, and `extra` fields on top.
fn issued(extra: Value) -> Reply {
    let mut v = json!({ "access_token": "at-1", "token_type": "Bearer", "expires_in": 3600 });
    v.as_object_mut().unwrap().extend(extra.as_object().cloned().unwrap_or_default());
    json_reply(v)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `conduit-mcp login URL --client-credentials --client-id svc MORE...`.
async fn machine_login(dir: &std::path::Path, url: &str, more: &[&str], envs: &[(&str, &str)]) -> std::process::Output {
    let mut args = vec!["login", url, "--client-credentials", "--client-id", "svc"];
    args.extend_from_slice(more);
    cli_in(dir, &args, envs, LIMIT).await.expect("login exits")
}

/// Finding 3: a `resource_metadata` URL over plain `http://` to a host that
/// is not this machine is not fetched (an on-path attacker would pick the
/// authorization server).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_metadata_over_plain_http_is_refused() {
    let h = hostile_http(|_| Reply::Raw {
        status: 401,
        headers: vec![(
            "www-authenticate".into(),
            "Bearer resource_metadata=\"http://metadata.invalid/.well-known/oauth-protected-resource\"".into(),
        )],
        body: String::new(),
    })
    .await;
    let o = cli_in(&config_dir("prm"), &["login", &h.url, "--no-browser"], &[], LIMIT).await.expect("exits");
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("over plain http:// to metadata.invalid"), "{stderr}");
}

/// Finding 4: a `--client-secret` is bound to the issuer it was first used
/// with; another issuer gets nothing unless named with `--issuer`. The
/// secret also comes from the environment or a file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_secret_stays_with_the_issuer_it_was_first_used_with() {
    let a = protected(|_| issued(json!({}))).await;
    let b = protected(|_| issued(json!({}))).await;
    let dir = config_dir("bound");
    let o = machine_login(&dir, &a.h.url, &["--client-secret", "s3cret"], &[]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(a.token_requests.lock().unwrap()[0]["client_secret"], "s3cret");

    // Server B sends the login to its own authorization server: refused before anything goes there.
    let o = machine_login(&dir, &b.h.url, &["--client-secret", "s3cret"], &[]).await;
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(b.token_requests.lock().unwrap().is_empty(), "the secret went to B: {stderr}");
    assert!(stderr.contains(&a.h.origin) && stderr.contains(&format!("--issuer {}", b.h.origin)), "{stderr}");

    // Named by the person: allowed. The secret from the environment, not argv.
    let env = [("CONDUIT_MCP_CLIENT_SECRET", "s3cret")];
    let o = machine_login(&dir, &b.h.url, &["--issuer", &b.h.origin], &env).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(b.token_requests.lock().unwrap()[0]["client_secret"], "s3cret");

    // From a file (one trailing newline dropped); A still takes it.
    let file = dir.join("secret.txt");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(&file, "s3cret\n").unwrap();
    let o = machine_login(&dir, &a.h.url, &["--client-secret-file", file.to_str().unwrap()], &[]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(a.token_requests.lock().unwrap().last().unwrap()["client_secret"], "s3cret");
    std::fs::remove_dir_all(&dir).ok();
}

/// Finding 6: the login callback keeps listening until the redirect with
/// this login's `state`: idle connections and bogus callbacks from other
/// local processes neither end nor stall it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_login_callback_waits_for_its_own_state() {
    let p = protected(|_| issued(json!({}))).await;
    let dir = config_dir("callback");
    let run = LoginRun::start(&dir, &p.h.url, &["--login-timeout", "20"]).await;
    let mut idle = Vec::new();
    for _ in 0..8 {
        idle.push(tokio::net::TcpStream::connect(run.callback_addr()).await.unwrap());
    }
    let (status, _) = run.visit("/callback?code=planted&state=not-this-login").await;
    assert!(status.contains(" 400 "), "a callback with another state: {status:?}");
    let (status, _) = run.visit("/favicon.ico").await;
    assert!(status.contains(" 404 "), "{status:?}");
    let (status, page) = run.visit(&run.approved("the-real-code")).await;
    assert!(status.contains(" 200 ") && page.contains("Authorization received"), "{status:?} {page:?}");
    let (code, log) = run.finish(LIMIT).await;
    assert_eq!(code, Some(0), "{log}");
    let requests = p.token_requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert_eq!(requests[0]["code"], "the-real-code");
    drop(idle);
    std::fs::remove_dir_all(&dir).ok();
}

/// Finding 8: login stores and prints the scope the authorization server
/// granted (the token response's `scope`), not the one it asked for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_keeps_the_scope_that_was_granted() {
    let p = protected(|_| issued(json!({ "scope": "mcp:read" }))).await;
    let dir = config_dir("granted");
    let o = machine_login(&dir, &p.h.url, &["--client-secret", "s", "--scope", "mcp:read mcp:write"], &[]).await;
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert_eq!(p.token_requests.lock().unwrap()[0]["scope"], "mcp:read mcp:write");
    assert!(stderr.contains("scopes: mcp:read)"), "{stderr}");
    assert_eq!(stored(&dir)["scopes"], json!(["mcp:read"]));
    std::fs::remove_dir_all(&dir).ok();
}

/// Finding 9: an access token a header cannot carry (CR/LF) is refused
/// before it is stored, so it cannot break every later command.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_access_token_a_header_cannot_carry_is_not_stored() {
    let dir = config_dir("crlf");
    let p = protected(|_| issued(json!({ "access_token": "at-1\r\nX-Injected: yes" }))).await;
    let o = machine_login(&dir, &p.h.url, &["--client-secret", "s"], &[]).await;
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("cannot be sent in a header"), "{stderr}");
    assert!(token_file(&dir).is_none(), "the token was stored");
    std::fs::remove_dir_all(&dir).ok();
}

/// Finding 9: a `token_type` from the authorization server is escaped once in the error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_type_is_escaped_once() {
    let dir = config_dir("token-type");
    let p = protected(|_| issued(json!({ "token_type": "\u{1b}]0;MAC" }))).await;
    let o = machine_login(&dir, &p.h.url, &["--client-secret", "s"], &[]).await;
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(r#"issued a "\x1b]0;MAC" token"#), "escaped once: {stderr}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Finding 9: a 200 KB `resource_metadata` is cut to a bounded, escaped excerpt in the error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_resource_metadata_is_cut_in_the_error() {
    let huge = "x".repeat(200_000);
    let h = hostile_http(move |req| challenge_with(&req.origin, &huge)).await;
    let o = cli_in(&config_dir("huge-prm"), &["login", &h.url, "--no-browser"], &[], LIMIT).await.expect("exits");
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{}", &stderr[..stderr.len().min(500)]);
    assert!(stderr.len() < 2000 && stderr.contains('…'), "{} bytes of error: {}", stderr.len(), &stderr[..300]);
}

/// Finding 9: a refused authorization's page never says "Authorization received".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_authorization_is_not_received() {
    let dir = config_dir("refused");
    let p = protected(|_| issued(json!({}))).await;
    let run = LoginRun::start(&dir, &p.h.url, &["--login-timeout", "20"]).await;
    let refused = format!("/callback?error=access_denied&state={}", run.param("state"));
    let (status, page) = run.visit(&refused).await;
    assert!(status.contains(" 200 ") && !page.contains("Authorization received"), "{status:?} {page:?}");
    let (code, log) = run.finish(LIMIT).await;
    assert_eq!(code, Some(2), "{log}");
    assert!(log.contains("authorization refused: access_denied"), "{log}");
    std::fs::remove_dir_all(&dir).ok();
}

/// A 401 whose `resource_metadata` is `value` (not a URL at all).
fn challenge_with(_origin: &str, value: &str) -> Reply {
    Reply::Raw {
        status: 401,
        headers: vec![("www-authenticate".into(), format!("Bearer resource_metadata=\"{value}\""))],
        body: String::new(),
    }
}

/// Finding 9: a tokens file of 1 GiB is not read whole; a new login replaces it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_tokens_file_is_refused_unread() {
    let p = protected(|_| issued(json!({}))).await;
    let dir = config_dir("hugefile");
    let o = machine_login(&dir, &p.h.url, &["--client-secret", "s"], &[]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let file = token_file(&dir).unwrap();
    std::fs::OpenOptions::new().write(true).open(&file).unwrap().set_len(1 << 30).unwrap();
    let o = cli_in(&dir, &["tools", &p.h.url], &[], LIMIT).await.expect("exits");
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("larger than") && stderr.contains("log in again"), "{stderr}");
    let o = machine_login(&dir, &p.h.url, &["--client-secret", "s"], &[]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(std::fs::metadata(&file).unwrap().len() < 4096);
    std::fs::remove_dir_all(&dir).ok();
}
