//! `conduit-mcp`: the reference server.
//!
//! `conduit-mcp serve` runs a demo MCP server on `127.0.0.1:8080/mcp` with
//! the in-memory defaults and the Tasks extension on; `--stdio` serves the
//! same tools on stdin/stdout; `--store sqlite:PATH` or `--store postgres:URL`
//! keeps tasks in a database (several nodes can share a PostgreSQL one);
//! `--config FILE` reads a TOML configuration ([`ConfigFile`]: `[ext_tasks]`,
//! `[sessions]`, `[events]`, `[http]`, `[oauth]`, parsed and validated once);
//! `--era modern|legacy|both` (default both) restricts the protocol eras.
//! The client commands (`tools`, `call`, `task`, `watch`) talk to any MCP
//! server, over HTTP or to a child process over stdio; `call` writes each
//! task to the task ledger first, and `task list` / `task wait URL --all`
//! read it back.

mod args;
mod call_cmd;
mod client_secret;
mod credentials;
mod demo;
mod demo_tasks;
mod enterprise_args;
mod events_cmd;
mod follow_ui;
mod ledger_args;
mod ledger_cmd;
mod limit_args;
mod login_cmd;
#[cfg(feature = "metrics")]
mod metrics;
mod oauth_args;
mod progress;
mod prompt;
mod remote;
mod shell;
mod store;
mod task_cmd;
mod task_ids;
mod tls_args;
mod tools_cmd;
mod usage;
mod webhook_args;

use args::{Cli, Command, ServeArgs};
use clap::{CommandFactory, Parser};
use conduit_mcp::auth::oauth::{DpopReplayStore, OAuth, OAuthConfig};
use conduit_mcp::config_file::ConfigFile;
use conduit_mcp::ext::tasks::{Tasks, TasksConfig};
use conduit_mcp::transport::http::{self, HostPolicy, HttpConfig};
use conduit_mcp::transport::stdio;
use std::hash::BuildHasher;
use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    // Colour only for a terminal: escape codes in a log file or journal are noise.
    let ansi = std::io::stderr().is_terminal();
    tracing_subscriber::fmt().with_env_filter(filter).with_ansi(ansi).with_writer(std::io::stderr).init();
}

/// The `--config` file, parsed and validated once (no file: no tables).
fn read_config(path: Option<&PathBuf>) -> Result<ConfigFile, String> {
    let Some(path) = path else { return Ok(ConfigFile::default()) };
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    ConfigFile::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
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

/// What [`build`] makes: the server, its tasks, the stores' label, and (SQL stores)
/// the store of the DPoP proofs taken, shared by every node on the database.
type Built = (conduit_mcp::Server, Option<Tasks>, String, Option<Arc<dyn DpopReplayStore>>);

async fn build(args: &ServeArgs, file: &ConfigFile, tool_scopes: &demo::ToolScopes) -> Result<Built, String> {
    // Without `[ext_tasks]` (or without a file) tasks are on, with defaults.
    let cfg = args.limits.apply_tasks(file.tasks.clone().unwrap_or_else(TasksConfig::enabled));
    let (config_store, sessions) = (file.store.clone(), file.sessions.clone());
    if !cfg.enabled {
        let serving = demo::Serving { eras: args.era, sessions, tool_scopes, events_cursor_key: None, webhooks: None };
        return demo::server(None, serving).map(|s| (s, None, "tasks disabled".into(), None));
    }
    let (url, source) = match (&args.store, config_store) {
        (Some(s), _) => (s.clone(), "--store"),
        (None, Some(s)) => (s, "ext_tasks.store"),
        (None, None) => ("memory".to_owned(), "--store"),
    };
    // Both eras' task stores, the sessions' and (PostgreSQL) the notifiers, from one URL.
    let stores = store::open(&url, source, args.pg_schema.as_deref()).await?;
    let node_id = args.node_id.clone().unwrap_or_else(default_node_id);
    let tasks =
        stores.tasks(cfg.node_id(node_id).lease(Duration::from_millis(args.lease_ms))).map_err(|e| e.to_string())?;
    tasks.claim_node().await.map_err(|e| format!("--node-id {:?}: {e}", tasks.node_id()))?;
    demo::register_workers(&tasks);
    // Events cursors sealed with the database's key: accepted on every node and after restarts.
    let events_cursor_key = stores.events_cursor_key();
    // Webhook delivery of events, when the operator named its egress rules (flags or [events.webhooks]).
    // Outbox leases carry the node id, as task leases do.
    let webhooks = match args.webhooks.rules(file.events_webhooks.as_ref())? {
        Some(rules) => Some(demo::webhook_config(&rules, stores.webhooks())?.node(tasks.node_id())),
        None => None,
    };
    let serving =
        demo::Serving { eras: args.era, sessions: stores.sessions(sessions), tool_scopes, events_cursor_key, webhooks };
    let server = demo::server(Some(&tasks), serving)?;
    // Serving starts the extension: its janitor recovers this node's earlier
    // tasks and watches other nodes' leases.
    Ok((server, Some(tasks), stores.to_string(), stores.dpop_replay()))
}

/// The address `--listen` names (a host name is resolved; the first address wins).
async fn listen_addr(listen: &str) -> Result<SocketAddr, String> {
    if let Ok(a) = listen.parse() {
        return Ok(a);
    }
    let mut found =
        tokio::net::lookup_host(listen).await.map_err(|e| format!("--listen {listen:?}: expected HOST:PORT ({e})"))?;
    found.next().ok_or_else(|| format!("--listen {listen:?}: the name has no address"))
}

/// The resource server of `cfg`; its DPoP proofs remembered in `replay` when given.
fn resource_server(cfg: OAuthConfig, replay: Option<Arc<dyn DpopReplayStore>>) -> Result<OAuth, String> {
    let cfg = match replay {
        Some(store) if cfg.dpop.is_some() => cfg.dpop_replay_store(store),
        _ => cfg,
    };
    OAuth::new(cfg).map_err(|e| e.to_string())
}

/// The HTTP configuration of the flags and the file (the resource server comes later,
/// once the stores are open).
fn http_config(args: &ServeArgs, file: &ConfigFile) -> Result<HttpConfig, String> {
    let cfg = HttpConfig::default()
        .header_timeout(Duration::from_secs(args.header_timeout_s))
        .body_timeout(Duration::from_secs(args.body_timeout_s))
        .idle_timeout(Duration::from_secs(args.idle_timeout_s))
        .max_connections(args.max_connections)
        .shutdown_timeout(Duration::from_secs(args.shutdown_timeout_s));
    let mut cfg = args.limits.apply(file.http(cfg));
    if !args.allow_hosts.is_empty() {
        cfg = cfg.hosts(HostPolicy::AllowList(args.allow_hosts.clone()));
    }
    if let Some(a) = args.auth()? {
        cfg = cfg.auth(a);
    }
    if let Some(tls) = args.tls.load()? {
        tls_args::reload_on_sighup(tls.clone());
        cfg = cfg.tls(tls);
    }
    Ok(cfg)
}

/// The process's allocator (the `mimalloc` feature, on by default; see its note in Cargo.toml).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse_from(task_ids::rewrite(Cli::command(), std::env::args_os().collect()));
    if !matches!(cli.command, Command::Serve(_)) && std::env::var_os("RUST_LOG").is_some() {
        // Client commands log only when asked (RUST_LOG=conduit_mcp=debug): stderr is for the person.
        init_tracing();
    }
    let args = match cli.command {
        Command::Serve(args) => *args,
        Command::Tools(a) => return tools_cmd::run(a).await.into(),
        Command::Call(a) => return exit(call_cmd::run(a).await),
        Command::Events(a) => return events_cmd::run(a).await.into(),
        Command::Task(t) => return exit(task_cmd::run(t).await),
        Command::Watch(a) => return task_cmd::watch(a).await.into(),
        Command::Login(a) => return login_cmd::login(*a).await.into(),
        Command::Logout(a) => return login_cmd::logout(a).await.into(),
    };
    init_tracing();
    let prepared = async {
        args.check()?;
        // The whole file first, every table validated: one error, before anything starts.
        let file = read_config(args.config.as_ref())?;
        #[cfg(feature = "metrics")]
        if let Some(addr) = args.metrics {
            metrics::install(addr)?;
        }
        let oauth = args.oauth.config(file.oauth.clone())?;
        if args.stdio && oauth.is_some() {
            return Err("[oauth] has no effect with --stdio (stdio has no HTTP, and no authentication)".into());
        }
        let tool_scopes = oauth.as_ref().map(|o| o.tool_scopes.clone()).unwrap_or_default();
        // Every flag judged before a store is opened; the resource server is made once
        // the stores are, so DPoP proofs are remembered in theirs (every node's, on PostgreSQL).
        if let Some(o) = &oauth {
            resource_server(o.clone(), None)?;
        }
        let mut http_cfg = http_config(&args, &file)?;
        let (server, tasks, label, replay) = build(&args, &file, &tool_scopes).await?;
        if let Some(o) = oauth {
            let rs = resource_server(o, replay)?;
            let pr = rs.protected_resource();
            tracing::info!(resource = pr.resource(), metadata = pr.metadata_url(), "OAuth: bearer tokens required");
            http_cfg = http_cfg.oauth(rs);
        }
        Ok::<_, String>((http_cfg, (server, tasks, label)))
    };
    let (http_cfg, (server, tasks, label)) = match prepared.await {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    // Watched from here on: a signal that comes right after `listening on`
    // is printed shuts down gracefully too.
    let shutdown = shutdown_signal();
    let result = if args.stdio {
        tokio::select! {
            r = stdio::serve(server) => r,
            () = shutdown => Ok(()),
        }
    } else {
        let bound = match listen_addr(&args.listen).await {
            Ok(addr) => http::bind(addr).await.map_err(|e| format!("--listen {}: {e}", args.listen)),
            Err(e) => Err(e),
        };
        match bound {
            Ok(bound) => {
                let scheme = if args.tls.any() { "https" } else { "http" };
                usage::print(scheme, bound.local_addr(), &label, args.example_token());
                eprintln!("listening on {scheme}://{}/mcp", bound.local_addr());
                bound.serve(server, http_cfg, shutdown).await
            }
            Err(e) => {
                eprintln!("error: {e}");
                if let Some(t) = tasks {
                    t.shutdown().await;
                }
                return ExitCode::from(2);
            }
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

/// Watches SIGINT and SIGTERM from the moment it is called (systemd, docker
/// and Kubernetes stop a service with SIGTERM); the future resolves at the
/// first of them: both shut down the same way.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let watch = |kind: SignalKind, name: &str| {
            signal(kind)
                .map_err(|e| tracing::warn!(error = %e, "cannot watch {name}; it will not shut down gracefully"))
                .ok()
        };
        let (term, int) = (watch(SignalKind::terminate(), "SIGTERM"), watch(SignalKind::interrupt(), "SIGINT"));
        async move {
            let next = |s: Option<tokio::signal::unix::Signal>| async move {
                match s {
                    Some(mut s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                () = next(term) => {}
                () = next(int) => {}
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// Ends a command now: a prompt thread may still be blocked on the terminal.
fn exit(code: remote::Exit) -> ExitCode {
    std::process::exit(i32::from(code.code()))
}
