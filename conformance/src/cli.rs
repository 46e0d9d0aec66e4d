//! The `conduit-mcp-conformance` command line, parsed by hand:
//!
//! ```text
//! conduit-mcp-conformance [--listen 127.0.0.1:PORT] [--store memory|sqlite:PATH]
//! ```
//!
//! and what the binary needs around the fixture: the tasks configuration a
//! `--store` names, and the signal that shuts it down.

use conduit_mcp::clock::SystemClock;
use conduit_mcp::ext::tasks::TasksConfig;
use std::net::SocketAddr;
use std::sync::Arc;

/// The address used when `--listen` is not given.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:3000";

/// The usage line `--help` prints.
pub const USAGE: &str = "usage: conduit-mcp-conformance [--listen 127.0.0.1:PORT] [--store memory|sqlite:PATH]";

/// Command-line options.
#[derive(Debug, PartialEq, Eq)]
pub struct Args {
    /// Where to listen (a loopback address).
    pub listen: SocketAddr,
    /// The task store: `memory` (default) or `sqlite:PATH`.
    pub store: String,
}

/// What the command line asked for.
#[derive(Debug, PartialEq, Eq)]
pub enum Command {
    /// Run the server.
    Run(Args),
    /// Print usage and exit.
    Help,
}

/// Parses the arguments (without the program name) by hand: `--listen ADDR`,
/// `--listen=ADDR`, `--store memory|sqlite:PATH`, `-h`/`--help`.
pub fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Command, String> {
    let mut listen = DEFAULT_LISTEN.to_owned();
    let mut store = "memory".to_owned();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            "--listen" => listen = args.next().ok_or("--listen needs an address")?,
            "--store" => store = args.next().ok_or("--store needs memory or sqlite:PATH")?,
            other => match other.strip_prefix("--listen=") {
                Some(addr) => listen = addr.to_owned(),
                None => return Err(format!("unexpected argument {other:?}")),
            },
        }
    }
    let listen: SocketAddr = listen.parse().map_err(|e| format!("invalid --listen address {listen:?}: {e}"))?;
    if !listen.ip().is_loopback() {
        return Err(format!("refusing to bind {listen}: the fixture only binds loopback addresses"));
    }
    if store != "memory" && !store.starts_with("sqlite:") {
        return Err(format!("invalid --store {store:?}: expected memory or sqlite:PATH"));
    }
    Ok(Command::Run(Args { listen, store }))
}

/// The tasks configuration `--store` names: the extension enabled, on the
/// memory store or on an SQLite file (opened here).
pub async fn tasks_config(store: &str) -> Result<TasksConfig, String> {
    let config = TasksConfig::enabled();
    let Some(path) = store.strip_prefix("sqlite:") else { return Ok(config) };
    match conduit_mcp_sql::SqliteStore::open(path, Arc::new(SystemClock)).await {
        Ok(s) => Ok(config.store(Arc::new(s))),
        Err(e) => Err(format!("cannot open --store {store}: {e}")),
    }
}

/// Resolves on Ctrl-C or (on Unix) SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::warn!(error = %e, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = terminate => {}
    }
    tracing::info!("shutting down");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Command, String> {
        parse_args(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn parses_listen_forms() {
        let want =
            |a: &str| Ok(Command::Run(Args { listen: a.parse().expect("test address"), store: "memory".into() }));
        assert_eq!(parse(&[]), want(DEFAULT_LISTEN));
        assert_eq!(parse(&["--listen", "127.0.0.1:4000"]), want("127.0.0.1:4000"));
        assert_eq!(parse(&["--listen=127.0.0.1:0"]), want("127.0.0.1:0"));
        assert_eq!(parse(&["--listen=[::1]:5"]), want("[::1]:5"));
        assert_eq!(parse(&["--help"]), Ok(Command::Help));
    }

    #[test]
    fn rejects_bad_arguments() {
        assert!(parse(&["--listen"]).is_err());
        assert!(parse(&["--listen", "nope"]).is_err());
        assert!(parse(&["--listen", "0.0.0.0:3000"]).is_err());
        assert!(parse(&["--port", "1"]).is_err());
        assert!(parse(&["--store", "redis:x"]).is_err());
        assert_eq!(
            parse(&["--store", "sqlite:/tmp/t.db"]),
            Ok(Command::Run(Args { listen: DEFAULT_LISTEN.parse().expect("addr"), store: "sqlite:/tmp/t.db".into() }))
        );
    }
}
