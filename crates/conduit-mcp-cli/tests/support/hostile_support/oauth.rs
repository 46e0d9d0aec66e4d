//! A hostile authorization server on the hostile server's own socket (its
//! issuer is the server's origin), and a `conduit-mcp login --no-browser`
//! the test drives: it reads the printed authorization URL and plays the
//! browser's redirect to the loopback callback itself.

use super::{Reply, Req};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};

/// The protected resource metadata URL of the hostile server at `origin`.
pub fn metadata_url(origin: &str) -> String {
    format!("{origin}/.well-known/oauth-protected-resource/mcp")
}

/// `200 application/json` with this body.
pub fn json_reply(v: Value) -> Reply {
    Reply::Raw { status: 200, headers: vec![("content-type".into(), "application/json".into())], body: v.to_string() }
}

/// A 401 whose challenge names the metadata, with `extra` parameters (`, scope="…"`).
pub fn challenge(origin: &str, extra: &str) -> Reply {
    let header = format!("Bearer resource_metadata=\"{}\"{extra}", metadata_url(origin));
    Reply::Raw { status: 401, headers: vec![("www-authenticate".into(), header)], body: String::new() }
}

/// The discovery documents and the dynamic registration of an authorization
/// server whose issuer is the request's origin (the resource is `/mcp` on it);
/// `None` for any other request.
pub fn discovery(req: &Req) -> Option<Reply> {
    let o = &req.origin;
    match (req.method.as_str(), req.path()) {
        ("GET", "/.well-known/oauth-protected-resource/mcp") => {
            Some(json_reply(json!({ "resource": format!("{o}/mcp"), "authorization_servers": [o] })))
        }
        ("GET", "/.well-known/oauth-authorization-server") => Some(json_reply(json!({
            "issuer": o,
            "authorization_endpoint": format!("{o}/authorize"),
            "token_endpoint": format!("{o}/token"),
            "registration_endpoint": format!("{o}/register"),
            "response_types_supported": ["code"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["client_secret_post", "none"],
        }))),
        ("POST", "/register") => Some(json_reply(json!({
            "client_id": "dynamic-client",
            "token_endpoint_auth_method": "none",
            "redirect_uris": req.json["redirect_uris"],
        }))),
        _ => None,
    }
}

/// The form fields of a token request.
pub fn form(req: &Req) -> HashMap<String, String> {
    let url = reqwest::Url::parse(&format!("http://form.invalid/?{}", req.text())).expect("a form body");
    url.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect()
}

/// The bearer token a request carries.
pub fn bearer(req: &Req) -> Option<&str> {
    req.header("authorization")?.strip_prefix("Bearer ")
}

/// The one tokens file of a configuration directory.
pub fn token_file(dir: &Path) -> Option<PathBuf> {
    std::fs::read_dir(dir.join("tokens")).ok()?.filter_map(Result::ok).map(|e| e.path()).find(|p| {
        p.extension().is_some_and(|e| e == "json") && !p.file_name().unwrap().to_string_lossy().starts_with('.')
    })
}

/// What the tokens file of `dir` holds (its `value`).
pub fn stored(dir: &Path) -> Value {
    let f = token_file(dir).expect("a tokens file");
    serde_json::from_slice::<Value>(&std::fs::read(f).unwrap()).unwrap()["value"].clone()
}

/// A `conduit-mcp login URL --no-browser` under way: the authorization URL
/// it printed, and the process.
pub struct LoginRun {
    child: tokio::process::Child,
    /// The authorization URL the CLI printed.
    pub authorization: reqwest::Url,
    log: tokio::task::JoinHandle<String>,
}

impl LoginRun {
    /// Starts the login and waits (at most 30 s) for the authorization URL.
    pub async fn start(dir: &Path, url: &str, more: &[&str]) -> Self {
        let mut child = tokio::process::Command::new(crate::cli_support::BIN)
            .args(["login", url, "--no-browser"])
            .args(more)
            .env("CONDUIT_MCP_CONFIG_DIR", dir)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn conduit-mcp login");
        let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
        let (tx, rx) = tokio::sync::oneshot::channel();
        let log = tokio::spawn(async move {
            let mut tx = Some(tx);
            let mut seen = Vec::new();
            while let Ok(Some(line)) = lines.next_line().await {
                if line.trim_start().starts_with("http")
                    && let Some(tx) = tx.take()
                {
                    let _ = tx.send(line.trim().to_owned());
                }
                seen.push(line);
            }
            seen.join("\n")
        });
        let printed = tokio::time::timeout(Duration::from_secs(30), rx).await;
        let Ok(Ok(printed)) = printed else { panic!("login printed no authorization URL") };
        Self { child, authorization: reqwest::Url::parse(&printed).expect("a URL"), log }
    }

    /// A query parameter of the authorization URL.
    pub fn param(&self, name: &str) -> String {
        self.authorization.query_pairs().find(|(k, _)| k == name).map(|(_, v)| v.into_owned()).unwrap_or_default()
    }

    /// `host:port` of the loopback callback listener.
    pub fn callback_addr(&self) -> String {
        let redirect = reqwest::Url::parse(&self.param("redirect_uri")).expect("a redirect URI");
        format!("{}:{}", redirect.host_str().unwrap(), redirect.port().unwrap())
    }

    /// Sends `GET PATH_AND_QUERY` to the callback listener the way a browser
    /// does; returns the status line and the page.
    pub async fn visit(&self, target: &str) -> (String, String) {
        let mut s = tokio::net::TcpStream::connect(self.callback_addr()).await.expect("the callback listener");
        let req = format!("GET {target} HTTP/1.1\r\nhost: {}\r\nconnection: close\r\n\r\n", self.callback_addr());
        s.write_all(req.as_bytes()).await.unwrap();
        let mut answer = String::new();
        let read = tokio::time::timeout(Duration::from_secs(30), s.read_to_string(&mut answer)).await;
        assert!(read.is_ok(), "the callback listener did not answer {target}");
        let (head, page) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
        (head.lines().next().unwrap_or_default().to_owned(), page.to_owned())
    }

    /// The redirect of an authorization server that approved, with this request's `state`.
    pub fn approved(&self, code: &str) -> String {
        format!("/callback?code={code}&state={}", self.param("state"))
    }

    /// Waits (at most `limit`) for the login to end: its exit code (`None`:
    /// killed at the limit) and everything it wrote to stderr.
    pub async fn finish(mut self, limit: Duration) -> (Option<i32>, String) {
        let code = match tokio::time::timeout(limit, self.child.wait()).await {
            Ok(status) => status.unwrap().code(),
            Err(_) => {
                let _ = self.child.kill().await;
                None
            }
        };
        (code, self.log.await.unwrap_or_default())
    }
}
