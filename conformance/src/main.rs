//! Fixture server for the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`, server leg, protocol `2026-07-28`).
//!
//! ```text
//! conduit-mcp-conformance [--listen 127.0.0.1:PORT] [--store memory|sqlite:PATH]
//! ```
//!
//! Serves MCP at `http://ADDR/mcp` with the library's `http::bind`/`serve` and prints
//! `listening on http://ADDR/mcp` to stderr once it accepts connections. It binds
//! loopback addresses only: the fixture has no authentication and exists to be
//! probed by the suite. Logging goes to stderr and is filtered by `RUST_LOG`
//! (default `info`). The fixture itself is the `conduit_mcp_conformance` library.

use conduit_mcp::transport::http::{self, HttpConfig};
use conduit_mcp_conformance::cli::{self, Command, USAGE};
use std::process::ExitCode;
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> ExitCode {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi).init();

    let args = match cli::parse_args(std::env::args().skip(1)) {
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
    let config = match cli::tasks_config(&args.store).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let server = match conduit_mcp_conformance::server(config) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: invalid fixture server: {e}");
            return ExitCode::FAILURE;
        }
    };
    let bound = match http::bind(args.listen).await {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: cannot listen on {}: {e}", args.listen);
            return ExitCode::FAILURE;
        }
    };
    eprintln!("listening on http://{}/mcp", bound.local_addr());
    match bound.serve(server, HttpConfig::default(), cli::shutdown_signal()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: serving on {} failed: {e}", args.listen);
            ExitCode::FAILURE
        }
    }
}
