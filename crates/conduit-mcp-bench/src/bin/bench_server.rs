//! Ours: conduit-mcp serving the conformance fixture's `greet` and `slow_compute`.
//!
//! ```text
//! bench-server [--listen 127.0.0.1:PORT] [--store memory|sqlite|postgres] [--database-url PATH|URL]
//!              [--pg-schema NAME] [--fresh] [--oauth-issuer URL --oauth-resource URL [--oauth-dpop]]
//!              [--events [--webhook-root-cert FILE]] [--bearer-token TOKEN]
//! bench-server sweep [--tasks N] [--expired-percent P] [--getters 1,50] [--baseline-ms MS]
//! ```
//!
//! The first form serves MCP at `/mcp` (with `TCP_NODELAY`) and the admin route
//! `POST /bench/complete` W5 uses, and prints `listening on http://ADDR/mcp` to
//! stderr. `--store sqlite --database-url PATH` keeps tasks in an SQLite file;
//! `--store postgres --database-url postgres://…` in PostgreSQL, schema `--pg-schema`
//! (default `conduit_bench`), with `LISTEN`/`NOTIFY` carrying changes between every
//! bench server on that schema. `--fresh` starts from an empty store: the SQLite file
//! (and its `-wal`/`-shm`) removed, or the PostgreSQL schema dropped, first.
//! `--oauth-issuer` makes it an OAuth resource server for `--oauth-resource` (tokens
//! of that issuer required on every request; `bench-as` is one), as
//! `scripts/bench_auth.sh` measures; `--oauth-dpop` makes it take DPoP-bound tokens
//! too, their proofs checked against `--oauth-resource` (`conduit-mcp-bench caps`).
//! `--events` installs the Events extension (`task.status_changed`) and turns the
//! store's task change log on at start; `--bearer-token` takes that one static token
//! as the principal `bench` (an event reaches its task's owner only).
//! `--webhook-root-cert` delivers events by webhook too (memory webhook store),
//! trusting that CA and letting https callbacks reach loopback (`caps --only webhooks`).
//!
//! The second form runs W6 in process and prints its results as JSON on stdout.

use clap::{Args, Parser, Subcommand};
use conduit_mcp::auth::oauth::{DpopConfig, OAuth, OAuthConfig};
use conduit_mcp::auth::{BearerTokens, Principal};
use conduit_mcp::clock::{Clock, SystemClock};
use conduit_mcp::transport::http::HttpConfig;
use conduit_mcp_bench::ours::{self, StoreKind, StoreOptions};
use conduit_mcp_bench::sweep::{self, SweepOptions};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// The conduit-mcp bench server.
#[derive(Debug, Parser)]
#[command(name = "bench-server", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Cmd>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// W6: time one janitor sweep in process, with `tasks/get` running.
    Sweep(SweepArgs),
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// Where to listen (loopback only; port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// The task store.
    #[arg(long, default_value = "memory")]
    store: StoreKind,
    /// Where the SQL stores keep their tasks (a file for SQLite, a URL for PostgreSQL).
    #[arg(long)]
    database_url: Option<String>,
    /// The PostgreSQL schema (an unquoted identifier of at most 49 bytes).
    #[arg(long, default_value = ours::DEFAULT_PG_SCHEMA)]
    pg_schema: String,
    /// Start from an empty store (SQLite: remove the file; PostgreSQL: drop the schema).
    #[arg(long)]
    fresh: bool,
    /// Require access tokens of this authorization server (a loopback URL: `bench-as`).
    #[arg(long, requires = "oauth_resource")]
    oauth_issuer: Option<String>,
    /// The resource the tokens must be for (their `aud`).
    #[arg(long, requires = "oauth_issuer")]
    oauth_resource: Option<String>,
    /// Take DPoP-bound tokens (with `--oauth-issuer`), each request's proof checked.
    #[arg(long, requires = "oauth_issuer")]
    oauth_dpop: bool,
    /// Install the Events extension and turn the store's task change log on.
    #[arg(long)]
    events: bool,
    /// With `--events`: deliver by webhook too, trusting the roots (PEM) of this file.
    #[arg(long, requires = "events")]
    webhook_root_cert: Option<std::path::PathBuf>,
    /// Take this one static bearer token, as the principal `bench`.
    #[arg(long, conflicts_with = "oauth_issuer")]
    bearer_token: Option<String>,
}

#[derive(Debug, Args)]
struct SweepArgs {
    /// Tasks in the store.
    #[arg(long, default_value_t = 1_000_000)]
    tasks: usize,
    /// Percentage of them expired.
    #[arg(long, default_value_t = 10)]
    expired_percent: usize,
    /// Concurrent `tasks/get` loops, one measurement per value.
    #[arg(long, value_delimiter = ',', default_value = "1,50")]
    getters: Vec<usize>,
    /// Length of the no-sweep baseline, ms.
    #[arg(long, default_value_t = 2_000)]
    baseline_ms: u64,
}

fn rss_kib() -> u64 {
    conduit_mcp_bench::procfs::status_kib(std::process::id(), "VmRSS").unwrap_or(0)
}

async fn serve(args: ServeArgs) -> Result<(), String> {
    if !args.listen.ip().is_loopback() {
        return Err(format!("refusing to bind {}: the benchmark servers bind loopback addresses only", args.listen));
    }
    let opts = StoreOptions {
        kind: args.store,
        database_url: args.database_url,
        pg_schema: args.pg_schema,
        fresh: args.fresh,
    };
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let opened = ours::open_store(&opts, clock.clone()).await?;
    let store = opened.store.clone();
    let tasks = ours::tasks_on(opened, clock)?;
    let webhooks = match &args.webhook_root_cert {
        Some(path) => {
            let pem = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            Some(ours::webhooks_trusting(pem)?)
        }
        None => None,
    };
    let events = if args.events { Some(ours::events_on(&tasks, store.as_ref(), webhooks).await?) } else { None };
    let server = ours::server_with(&tasks, events)?;
    let mut config = HttpConfig::default();
    if let (Some(issuer), Some(resource)) = (args.oauth_issuer, args.oauth_resource) {
        let mut cfg = OAuthConfig::new(issuer, resource);
        if args.oauth_dpop {
            cfg = cfg.dpop(DpopConfig::default());
        }
        config = config.oauth(OAuth::new(cfg).map_err(|e| format!("OAuth: {e}"))?);
    }
    if let Some(token) = args.bearer_token {
        config = config.auth(BearerTokens::new().token(token, Principal::new("bench")));
    }
    ours::serve(args.listen, server, tasks, config).await
}

async fn sweep(args: SweepArgs) -> Result<(), String> {
    if args.expired_percent > 100 || args.getters.is_empty() {
        return Err("--expired-percent must be at most 100 and --getters non-empty".into());
    }
    let opts = SweepOptions {
        tasks: args.tasks,
        expired_percent: args.expired_percent,
        getters: args.getters,
        baseline: Duration::from_millis(args.baseline_ms),
    };
    let results = sweep::run(&opts, rss_kib).await?;
    println!("{}", serde_json::to_string(&results).map_err(|e| e.to_string())?);
    Ok(())
}

/// The allocator the reference server ships with (the `mimalloc` feature; see the manifest).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Some(Cmd::Sweep(a)) => sweep(a).await,
        None => serve(cli.serve).await,
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
