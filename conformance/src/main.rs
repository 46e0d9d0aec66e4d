//! Fixture server for the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`, server leg, protocol `2026-07-28`).
//!
//! ```text
//! conduit-mcp-conformance [--listen 127.0.0.1:PORT] [--store sqlite:PATH]
//! ```
//!
//! Serves MCP at `http://ADDR/mcp` and prints `listening on http://ADDR/mcp`
//! to stderr once it accepts connections. It binds loopback addresses only:
//! the fixture has no authentication and exists to be probed by the suite.
//! Logging goes to stderr and is filtered by `RUST_LOG` (default `info`).
//!
//! The tool, prompt and resource names are hard-coded in the suite; see
//! `scripts/conformance.sh` for how it is run. The modules hold:
//!
//! - [`tools`]: content, diagnostic and header tools;
//! - [`tasks_tools`]: the tools of the `tasks-*` scenarios (the Tasks extension is on);
//! - [`mrtr_tools`]: the multi round-trip (`input_required`) tools;
//! - [`prompts`]: prompts and the completion handler;
//! - [`resources`]: static resources and the URI template;
//! - [`assets`]: the small binary payloads (PNG, WAV) they return.

mod assets;
mod mrtr_tools;
mod prompts;
mod resources;
mod tasks_tools;
mod tools;

use conduit_mcp::Server;
use conduit_mcp::ext::tasks::{Tasks, TasksConfig};
use conduit_mcp::transport::http::{self, HttpConfig};
use std::net::SocketAddr;
use std::process::ExitCode;
use tracing_subscriber::EnvFilter;

/// The address used when `--listen` is not given.
const DEFAULT_LISTEN: &str = "127.0.0.1:3000";

const USAGE: &str = "usage: conduit-mcp-conformance [--listen 127.0.0.1:PORT] [--store memory|sqlite:PATH]";

/// Command-line options.
#[derive(Debug, PartialEq, Eq)]
struct Args {
    /// Where to listen (a loopback address).
    listen: SocketAddr,
    /// The task store: `memory` (default) or `sqlite:PATH`.
    store: String,
}

/// What the command line asked for.
#[derive(Debug, PartialEq, Eq)]
enum Command {
    /// Run the server.
    Run(Args),
    /// Print usage and exit.
    Help,
}

/// Parses the arguments (without the program name) by hand: `--listen ADDR`,
/// `--listen=ADDR`, `-h`/`--help`.
fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Command, String> {
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

/// Builds the fixture server with everything the suite looks for, on the memory store.
#[cfg(test)]
fn build_server() -> Result<Server, conduit_mcp::server::BuildError> {
    build_server_with(TasksConfig::enabled())
}

/// Builds the fixture server on the given tasks configuration.
fn build_server_with(tasks: TasksConfig) -> Result<Server, conduit_mcp::server::BuildError> {
    let builder = Server::builder("conduit-mcp-conformance", env!("CARGO_PKG_VERSION"))
        .instructions("Fixture server for the MCP conformance suite.");
    let tasks = Tasks::new(tasks).map_err(|e| conduit_mcp::server::BuildError::Extension(e.to_string()))?;
    let builder = builder.extension(tasks.extension());
    let builder = tools::register(builder);
    let builder = tasks_tools::register(builder);
    let builder = mrtr_tools::register(builder);
    let builder = prompts::register(builder);
    let builder = resources::register(builder);
    builder.build()
}

/// Resolves on Ctrl-C or (on Unix) SIGTERM.
async fn shutdown_signal() {
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

#[tokio::main]
async fn main() -> ExitCode {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi).init();

    let args = match parse_args(std::env::args().skip(1)) {
        Ok(Command::Run(args)) => args,
        Ok(Command::Help) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("error: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let mut config = TasksConfig::enabled();
    if let Some(path) = args.store.strip_prefix("sqlite:") {
        match conduit_mcp_sql::SqliteStore::open(path, std::sync::Arc::new(conduit_mcp::clock::SystemClock)).await {
            Ok(s) => config = config.store(std::sync::Arc::new(s)),
            Err(e) => {
                eprintln!("error: cannot open --store {}: {e}", args.store);
                return ExitCode::FAILURE;
            }
        }
    }
    let server = match build_server_with(config) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: invalid fixture server: {e}");
            return ExitCode::FAILURE;
        }
    };
    match http::serve(server, HttpConfig::default(), args.listen, shutdown_signal()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: cannot serve on {}: {e}", args.listen);
            ExitCode::FAILURE
        }
    }
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

    #[tokio::test]
    async fn fixture_lists_simple_text_first() {
        use conduit_mcp::protocol::jsonrpc::Request;
        use conduit_mcp::protocol::{Message, RequestId};
        use conduit_mcp::server::RequestEnv;
        use serde_json::json;

        let server = build_server().expect("fixture server builds");
        let req = Request {
            id: RequestId::Number(1),
            method: "tools/list".into(),
            params: Some(json!({ "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}
            }})),
        };
        let Message::Result { result, .. } = server.handle_request(req, RequestEnv::default()).await else {
            panic!("tools/list failed");
        };
        assert_eq!(result["tools"][0]["name"], "test_simple_text");
    }
}
