//! The command line of `conduit-mcp serve`, and the checks that need no I/O.

use clap::{Parser, Subcommand};
use conduit_mcp::auth::{BearerTokens, Principal};
use conduit_mcp::protocol::version::ServedEras;
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "conduit-mcp",
    version,
    about = "MCP (2026-07-28 and 2025-11-25) reference server and client built on conduit-mcp"
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// Run the reference server (HTTP on 127.0.0.1:8080 by default).
    Serve(Box<ServeArgs>),
    /// List a server's tools and their parameters.
    Tools(crate::tools_cmd::ToolsArgs),
    /// Call a tool and follow it to the end (exit 0 done, 1 tool error or failed, 2 usage or protocol error, 3 cancelled, 130 Ctrl-C).
    Call(crate::call_cmd::CallArgs),
    /// List a server's event types, or print each occurrence of one (push stream, or `--poll`).
    Events(crate::events_cmd::EventsArgs),
    /// Get, wait for or cancel a task by id.
    #[command(subcommand)]
    Task(crate::task_cmd::TaskCommand),
    /// Print each change of these tasks until all are terminal.
    Watch(crate::task_cmd::WatchArgs),
    /// Log in to a server with OAuth 2.1 (browser and loopback redirect, or client credentials); later commands use the stored tokens.
    Login(Box<crate::login_cmd::LoginArgs>),
    /// Forget (and revoke where possible) the tokens stored for a server.
    Logout(crate::login_cmd::LogoutArgs),
}

#[derive(clap::Args, Debug)]
pub(crate) struct ServeArgs {
    /// Address to listen on, `HOST:PORT` (a name such as `localhost:8080` too); the endpoint is http://ADDR/mcp.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub(crate) listen: String,
    /// Serve on stdin/stdout instead of HTTP.
    #[arg(long)]
    pub(crate) stdio: bool,
    /// TOML configuration file: its tables are `[ext_tasks]`, `[sessions]`, `[events]`, `[oauth]` and `[http]` (an unknown key is an
    /// error; without `[ext_tasks]`, or without a file, tasks are enabled with defaults).
    #[arg(long)]
    pub(crate) config: Option<PathBuf>,
    /// Task store: `memory`, `sqlite:PATH` or `postgres:URL` (overrides the config file).
    #[arg(long)]
    pub(crate) store: Option<String>,
    /// PostgreSQL schema for the task table (and the notification channel's suffix).
    #[arg(long)]
    pub(crate) pg_schema: Option<String>,
    /// This node's id for work leases, unique per live process (default: host, pid and a random part).
    /// Refused at start when another live process holds it on the same store; a restart may reuse it.
    #[arg(long)]
    pub(crate) node_id: Option<String>,
    /// Lease period of running work, in milliseconds.
    #[arg(long, default_value_t = 30_000)]
    pub(crate) lease_ms: u64,
    /// Which protocol eras to serve: `modern` (2026-07-28), `legacy` (2025-11-25 sessions) or `both`.
    #[arg(long, default_value = "both", value_parser = parse_era)]
    pub(crate) era: ServedEras,
    /// HTTP: a host name (no port) clients may use besides localhost (repeatable; DNS-rebinding guard).
    #[arg(long = "allow-host", value_name = "HOST")]
    pub(crate) allow_hosts: Vec<String>,
    /// HTTP: seconds a connection may take to send a request head.
    #[arg(long, default_value_t = 10)]
    pub(crate) header_timeout_s: u64,
    /// HTTP: seconds a request body may take to arrive (later gets 408).
    #[arg(long, default_value_t = 30)]
    pub(crate) body_timeout_s: u64,
    /// HTTP: seconds a kept-alive connection may wait for its next request (listen streams never idle).
    #[arg(long, default_value_t = 60)]
    pub(crate) idle_timeout_s: u64,
    /// HTTP: connections served at once (more wait in the backlog).
    #[arg(long, default_value_t = 512)]
    pub(crate) max_connections: usize,
    /// Seconds requests in flight may take to finish after SIGINT or SIGTERM.
    #[arg(long, default_value_t = 10)]
    pub(crate) shutdown_timeout_s: u64,
    /// Serve metrics in Prometheus format at http://ADDR/metrics (feature `metrics`).
    #[cfg(feature = "metrics")]
    #[arg(long, value_name = "ADDR")]
    pub(crate) metrics: Option<std::net::SocketAddr>,
    /// HTTP: require bearer authentication, `TOKEN=PRINCIPAL` (repeatable; split at the last `=`,
    /// so padded base64 tokens work).
    #[arg(long = "token", value_name = "TOKEN=PRINCIPAL")]
    pub(crate) tokens: Vec<String>,
    #[command(flatten)]
    pub(crate) oauth: crate::oauth_args::OAuthArgs,
    #[command(flatten)]
    pub(crate) tls: crate::tls_args::TlsArgs,
    #[command(flatten)]
    pub(crate) limits: crate::limit_args::LimitArgs,
    #[command(flatten)]
    pub(crate) webhooks: crate::webhook_args::WebhookArgs,
}

impl ServeArgs {
    /// Refuses flags that would be silently ignored.
    pub(crate) fn check(&self) -> Result<(), String> {
        if self.stdio {
            let http_only = [
                (!self.tokens.is_empty(), "--token"),
                (!self.allow_hosts.is_empty(), "--allow-host"),
                (self.listen != "127.0.0.1:8080", "--listen"),
                (self.oauth.any(), self.oauth.first_flag()),
                (self.tls.any(), "--tls-cert"),
                (
                    self.webhooks.any(),
                    "--webhook-allow-origin, --webhook-verified-origin, --webhook-allow-loopback or --webhook-root-cert",
                ),
                (
                    self.limits.any(),
                    "--max-listen-streams, --listen-idle-timeout-s, --require-task-name, --request-rate or --auth-failure-rate",
                ),
            ];
            if let Some((_, flag)) = http_only.iter().find(|(set, _)| *set) {
                return Err(format!("{flag} has no effect with --stdio (stdio has no HTTP, and no authentication)"));
            }
        }
        if !self.tokens.is_empty() && self.oauth.any() {
            return Err(format!(
                "--token and {} exclude each other (one way to authenticate)",
                self.oauth.first_flag()
            ));
        }
        if let Some(h) = self.allow_hosts.iter().find(|h| h.is_empty() || h.contains(['/', ' '])) {
            return Err(format!("--allow-host {h:?}: expected a host name"));
        }
        Ok(())
    }

    /// The bearer tokens, if any.
    pub(crate) fn auth(&self) -> Result<Option<BearerTokens>, String> {
        if self.tokens.is_empty() {
            return Ok(None);
        }
        let mut b = BearerTokens::new();
        for t in &self.tokens {
            // At the last `=`: base64 padding belongs to the token, a principal has none.
            let (token, principal) = t
                .rsplit_once('=')
                .filter(|(t, p)| !t.is_empty() && !p.is_empty())
                .ok_or_else(|| "--token: expected TOKEN=PRINCIPAL".to_owned())?;
            b = b.token(token, Principal::new(principal));
        }
        Ok(Some(b))
    }

    /// The first token, for the printed example.
    pub(crate) fn example_token(&self) -> Option<&str> {
        self.tokens.first().and_then(|t| t.rsplit_once('=')).map(|(t, _)| t)
    }
}

fn parse_era(s: &str) -> Result<ServedEras, String> {
    ServedEras::parse(s).ok_or_else(|| format!("{s:?}: expected modern, legacy or both"))
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use crate::task_ids::rewrite;
    use clap::CommandFactory;
    use std::ffi::OsString;

    fn run(args: &[&str]) -> Vec<String> {
        rewrite(Cli::command(), args.iter().map(OsString::from).collect())
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect()
    }

    #[test]
    fn dash_task_ids_become_the_hidden_option() {
        assert_eq!(
            run(&["c", "task", "get", "http://h/mcp", "-x8f_Q", "--json", "--timeout", "-1"]),
            ["c", "task", "get", "http://h/mcp", "--task-id=-x8f_Q", "--json", "--timeout", "-1"]
        );
        assert_eq!(
            run(&["c", "watch", "http://h/mcp", "a", "--b-c", "-h"]),
            ["c", "watch", "http://h/mcp", "a", "--task-id=--b-c", "-h"]
        );
        assert_eq!(run(&["c", "call", "http://h/mcp", "-x"]), ["c", "call", "http://h/mcp", "-x"]);
        assert_eq!(
            run(&["c", "task", "get", "--stdio", "-x", "--", "srv", "-y"]),
            ["c", "task", "get", "--stdio", "--task-id=-x", "--", "srv", "-y"]
        );
    }
}
