//! A resource server on `127.0.0.1:0` behind OAuth, for the tests against the
//! real authorization server (`conduit_mcp_test_oauth`): its resource is its
//! own URL, its clock a `ManualClock` starting at the real time (the AS signs
//! real times), and it serves through `Bound::serve` (the metadata routes too).

pub mod introspection_as;

use conduit_mcp::auth::oauth::{OAuth, OAuthConfig};
use conduit_mcp::clock::ManualClock;
use conduit_mcp::ext::tasks::{Tasks, TasksConfig};
use conduit_mcp::prelude::*;
use conduit_mcp::transport::http::{self, HttpConfig};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::oneshot;

/// The scope every request needs in these tests.
pub const READ: &str = "mcp:read";

/// A running resource server.
pub struct Rs {
    /// Its MCP endpoint.
    pub url: String,
    /// The clock its tokens are checked against.
    pub clock: Arc<ManualClock>,
    /// Its Tasks handle.
    pub tasks: Tasks,
    /// The server.
    pub server: Server,
    stop: Option<oneshot::Sender<()>>,
    served: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl Drop for Rs {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.served.take() {
            t.abort();
        }
    }
}

/// The tools: `whoami` (the principal), `deploy` (needs `mcp:deploy`), `job` (a task).
pub fn server(tasks: &Tasks) -> Server {
    Server::builder("oauth-rs", "1.0.0")
        .extension(tasks.clone())
        .tool(Tool::new("whoami", "Who is calling").handle(|ctx, _args| async move {
            let p = ctx.principal().cloned();
            Ok(CallToolResult::structured(json!({
                "id": p.as_ref().map(|p| p.id().to_owned()),
                "scopes": p.as_ref().map(|p| p.scopes.iter().cloned().collect::<Vec<_>>()).unwrap_or_default(),
            })))
        }))
        .tool(
            Tool::new("deploy", "Needs mcp:deploy")
                .scopes(["mcp:deploy"])
                .handle(|_ctx, _args| async { Ok(CallToolResult::text("deployed")) }),
        )
        .tool(Tool::new("job", "A task for an external worker").handle(|_c, _a| async { Ok(TaskSpec::new()) }))
        .build()
        .expect("valid server")
}

/// Now, in epoch milliseconds.
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("after 1970").as_millis() as u64
}

/// Binds, builds the OAuth config for `issuers` with `edit`, and serves.
pub async fn start(issuers: &[&str], edit: impl FnOnce(OAuthConfig) -> OAuthConfig) -> Rs {
    start_http(issuers, edit, HttpConfig::default()).await
}

/// [`start`] with the HTTP settings of `http` (its authentication is the OAuth config's).
pub async fn start_http(issuers: &[&str], edit: impl FnOnce(OAuthConfig) -> OAuthConfig, http: HttpConfig) -> Rs {
    let bound = http::bind("127.0.0.1:0".parse().expect("address")).await.expect("bind");
    let url = format!("http://{}/mcp", bound.local_addr());
    let clock = Arc::new(ManualClock::new(now_ms()));
    let (first, rest) = issuers.split_first().expect("an issuer");
    let cfg = rest
        .iter()
        .fold(OAuthConfig::new(*first, &url), |c, i| c.issuer(*i))
        .scope(READ)
        .implies("mcp:admin", ["mcp:deploy"])
        .refetch_interval(Duration::from_secs(30))
        .clock(clock.clone());
    let oauth = OAuth::new(edit(cfg)).expect("valid OAuth configuration");
    let tasks = Tasks::new(TasksConfig::enabled()).expect("tasks");
    let server = server(&tasks);
    let (stop, stopped) = oneshot::channel::<()>();
    let served = tokio::spawn(bound.serve(server.clone(), http.oauth(oauth), async move {
        let _ = stopped.await;
    }));
    Rs { url, clock, tasks, server, stop: Some(stop), served: Some(served) }
}

/// A JSON-RPC POST of `body` to `url` with the standard headers and `token`, read to the end.
pub async fn post(url: &str, body: &serde_json::Value, token: Option<&str>) -> super::common::Resp {
    let mut h = super::common::std_headers(body);
    if let Some(t) = token {
        super::common::set(&mut h, "authorization", &format!("Bearer {t}"));
    }
    super::common::read(reqwest::Client::new().post(url).headers(h).body(body.to_string())).await
}

/// The value of `param` in a `WWW-Authenticate` challenge.
pub fn challenge_param(challenge: &str, param: &str) -> Option<String> {
    let at = challenge.find(&format!("{param}=\""))? + param.len() + 2;
    let rest = &challenge[at..];
    Some(rest[..rest.find('"')?].to_owned())
}
