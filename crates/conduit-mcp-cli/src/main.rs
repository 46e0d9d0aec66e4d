//! `conduit-mcp`: the reference server, and a client for any MCP server.
//!
//! `conduit-mcp tools|call|task|watch URL ...` (or `--stdio -- CMD ARGS...`)
//! list tools, call one and follow its task (progress, prompts, Ctrl-C
//! cancels), and resume, cancel or watch tasks by id: see `docs/client.md`.
//!
//! `conduit-mcp serve` runs a demo MCP server on `127.0.0.1:8080/mcp` with
//! the in-memory defaults and the Tasks extension on; `--stdio` serves the
//! same tools on stdin/stdout; `--store sqlite:PATH` or `--store postgres:URL`
//! keeps tasks in a database (several nodes can share a PostgreSQL one);
//! `--config FILE` reads a TOML configuration whose `[ext_tasks]` table
//! configures the Tasks extension and `[sessions]` the legacy sessions;
//! `--era modern|legacy|both` (default both) restricts the protocol eras.

mod call_cmd;
mod demo;
mod follow_ui;
mod progress;
mod prompt;
mod remote;
mod store;
mod task_cmd;
mod tools_cmd;

use clap::{Parser, Subcommand};
use conduit_mcp::auth::{BearerTokens, Principal};
use conduit_mcp::clock::{Clock, SystemClock};
use conduit_mcp::ext::tasks::legacy::LegacyTasks;
use conduit_mcp::ext::tasks::{Tasks, TasksConfig};
use conduit_mcp::protocol::version::ServedEras;
use conduit_mcp::session::SessionConfig;
use conduit_mcp::transport::http::{self, HttpConfig};
use conduit_mcp::transport::stdio;
use std::hash::BuildHasher;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(
    name = "conduit-mcp",
    version,
    about = "MCP (2026-07-28 and 2025-11-25) reference server and client built on conduit-mcp"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args, Debug)]
struct ServeArgs {
    /// Address to listen on; the endpoint is http://ADDR/mcp.
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// Serve on stdin/stdout instead of HTTP.
    #[arg(long)]
    stdio: bool,
    /// TOML configuration file (`[ext_tasks]` configures tasks; without a file they are enabled with defaults).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Task store: `memory`, `sqlite:PATH` or `postgres:URL` (overrides the config file).
    #[arg(long)]
    store: Option<String>,
    /// PostgreSQL schema for the task table (and the notification channel's suffix).
    #[arg(long)]
    pg_schema: Option<String>,
    /// This node's id for work leases, unique per live process (default: host, pid and a random part).
    /// Refused at start when another live process holds it on the same store; a restart may reuse it.
    #[arg(long)]
    node_id: Option<String>,
    /// Lease period of running work, in milliseconds.
    #[arg(long, default_value_t = 30_000)]
    lease_ms: u64,
    /// Which protocol eras to serve: `modern` (2026-07-28), `legacy` (2025-11-25 sessions) or `both`.
    #[arg(long, default_value = "both", value_parser = parse_era)]
    era: ServedEras,
    /// HTTP: seconds a connection may take to send a request head.
    #[arg(long, default_value_t = 10)]
    header_timeout_s: u64,
    /// HTTP: seconds a request body may take to arrive (later gets 408).
    #[arg(long, default_value_t = 30)]
    body_timeout_s: u64,
    /// HTTP: seconds a kept-alive connection may wait for its next request (listen streams never idle).
    #[arg(long, default_value_t = 60)]
    idle_timeout_s: u64,
    /// HTTP: connections served at once (more wait in the backlog).
    #[arg(long, default_value_t = 512)]
    max_connections: usize,
    /// Seconds requests in flight may take to finish after SIGINT or SIGTERM.
    #[arg(long, default_value_t = 10)]
    shutdown_timeout_s: u64,
    /// Require bearer authentication: `TOKEN=PRINCIPAL` (repeatable).
    #[arg(long = "token", value_name = "TOKEN=PRINCIPAL")]
    tokens: Vec<String>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the reference server (HTTP on 127.0.0.1:8080 by default).
    Serve(ServeArgs),
    /// List a server's tools and their parameters.
    Tools(tools_cmd::ToolsArgs),
    /// Call a tool and follow it to the end (exit 0 done, 1 tool error or failed, 2 usage or protocol error, 3 cancelled, 130 Ctrl-C).
    Call(call_cmd::CallArgs),
    /// Get, wait for or cancel a task by id.
    #[command(subcommand)]
    Task(task_cmd::TaskCommand),
    /// Print each change of these tasks until all are terminal.
    Watch(task_cmd::WatchArgs),
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init();
}

fn parse_era(s: &str) -> Result<ServedEras, String> {
    ServedEras::parse(s).ok_or_else(|| format!("{s:?}: expected modern, legacy or both"))
}

/// The `[ext_tasks]` configuration (and its store) and the `[sessions]` table.
fn read_config(path: Option<&PathBuf>) -> Result<(TasksConfig, Option<String>, SessionConfig), String> {
    let Some(path) = path else { return Ok((TasksConfig::enabled(), None, SessionConfig::default())) };
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let sessions = SessionConfig::from_toml(&text).map_err(|e| e.to_string())?;
    let (tasks, store) = TasksConfig::from_toml(&text).map_err(|e| e.to_string())?;
    Ok((tasks, store, sessions))
}

/// A node id no other live process has: the host name, the process id, and
/// a random part (process ids are reused, and containers all run as pid 1).
fn default_node_id() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into());
    let random = std::collections::hash_map::RandomState::new().hash_one(std::time::SystemTime::now());
    format!("{host}:{}:{random:016x}", std::process::id())
}

async fn build(args: &ServeArgs) -> Result<(conduit_mcp::Server, Option<Tasks>, String), String> {
    let (mut cfg, config_store, mut sessions) = read_config(args.config.as_ref())?;
    if !cfg.enabled {
        let serving = demo::Serving { eras: args.era, sessions };
        return demo::server(None, serving).map(|s| (s, None, "tasks disabled".into())).map_err(|e| e.to_string());
    }
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let spec = args.store.clone().or(config_store).unwrap_or_else(|| "memory".into());
    let chosen = store::open(&spec, args.pg_schema.as_deref(), clock.clone()).await?;
    cfg = cfg
        .store(chosen.store.clone())
        .node_id(args.node_id.clone().unwrap_or_else(default_node_id))
        .lease(Duration::from_millis(args.lease_ms));
    if let Some(n) = chosen.notifier_config() {
        cfg = cfg.notifier(n);
    }
    // Legacy (2025-11-25) tasks live in a listable store of their own: beside
    // a SQL store in its database (same node id, its own notifier channel),
    // in memory otherwise.
    let legacy = match &chosen.legacy {
        Some(store) => {
            let mut lcfg = cfg.clone();
            if let Some(n) = chosen.legacy_notifier_config() {
                lcfg = lcfg.notifier(n);
            }
            LegacyTasks::with_store(lcfg, store.clone(), clock.clone())
        }
        None => LegacyTasks::with_clock(cfg.clone(), clock.clone()),
    }
    .map_err(|e| e.to_string())?;
    if let Some(n) = &chosen.legacy_notifier {
        n.attach(legacy.tasks());
    }
    if let Some(store) = &chosen.sessions {
        sessions.store = store.clone();
    }
    let serving = demo::Serving { eras: args.era, sessions };
    let tasks = Tasks::with_clock(cfg, clock).map_err(|e| e.to_string())?;
    tasks.claim_node().await.map_err(|e| format!("--node-id {:?}: {e}", tasks.node_id()))?;
    if let Some(n) = &chosen.notifier {
        n.attach(&tasks);
    }
    tasks.drive_legacy(&legacy);
    demo::register_workers(&tasks);
    let server = demo::server(Some((&tasks, &legacy)), serving).map_err(|e| e.to_string())?;
    // Serving starts the extension: its janitor recovers this node's earlier
    // tasks and watches other nodes' leases.
    Ok((server, Some(tasks), chosen.label))
}

fn auth(tokens: &[String]) -> Result<Option<BearerTokens>, String> {
    if tokens.is_empty() {
        return Ok(None);
    }
    let mut b = BearerTokens::new();
    for t in tokens {
        let (token, principal) = t
            .split_once('=')
            .filter(|(t, p)| !t.is_empty() && !p.is_empty())
            .ok_or_else(|| format!("--token {t:?}: expected TOKEN=PRINCIPAL"))?;
        b = b.token(token, Principal::new(principal));
    }
    Ok(Some(b))
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let args = match cli.command {
        Command::Serve(args) => args,
        Command::Tools(a) => return tools_cmd::run(a).await.into(),
        Command::Call(a) => return exit(call_cmd::run(a).await),
        Command::Task(t) => return exit(task_cmd::run(t).await),
        Command::Watch(a) => return task_cmd::watch(a).await.into(),
    };
    init_tracing();
    let (server, tasks, label) = match build(&args).await {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let mut http_cfg = HttpConfig::default()
        .header_timeout(Duration::from_secs(args.header_timeout_s))
        .body_timeout(Duration::from_secs(args.body_timeout_s))
        .idle_timeout(Duration::from_secs(args.idle_timeout_s))
        .max_connections(args.max_connections)
        .shutdown_timeout(Duration::from_secs(args.shutdown_timeout_s));
    match auth(&args.tokens) {
        Ok(Some(a)) => http_cfg = http_cfg.auth(a),
        Ok(None) => {}
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    }
    let result = if args.stdio {
        tokio::select! {
            r = stdio::serve(server) => r,
            () = shutdown_signal() => Ok(()),
        }
    } else {
        print_usage(args.listen, &label);
        match http::bind(args.listen).await {
            Ok(bound) => {
                eprintln!("listening on http://{}/mcp", bound.local_addr());
                bound.serve(server, http_cfg, shutdown_signal()).await
            }
            Err(e) => Err(e),
        }
    };
    if let Some(t) = tasks {
        t.shutdown().await;
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Resolves at the first SIGINT or SIGTERM (systemd, docker and Kubernetes
/// stop a service with SIGTERM): both shut down the same way.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot watch SIGTERM; only SIGINT shuts down gracefully");
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Ends a command now: a prompt thread may still be blocked on the terminal.
fn exit(code: remote::Exit) -> ExitCode {
    std::process::exit(i32::from(code.code()))
}

fn print_usage(addr: SocketAddr, store: &str) {
    let url =
        if addr.port() == 0 { "http://ADDR/mcp (see the next line)".to_owned() } else { format!("http://{addr}/mcp") };
    eprintln!(
        "conduit-mcp reference server (protocol 2026-07-28, task store: {store})\n\
         try it:\n  curl -s {url} \\\n    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \\\n    \
         -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: echo' \\\n    \
         -d '{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"text\":\"hi\"}},\
         \"_meta\":{{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{{}}}}}}}}'"
    );
}
