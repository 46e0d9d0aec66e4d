//! `conduit-mcp`: the reference server and command-line tools.
//!
//! `conduit-mcp serve` runs a demo MCP server on `127.0.0.1:8080/mcp` with
//! the in-memory defaults; `--stdio` serves the same tools on stdin/stdout.

mod demo;

use clap::{Parser, Subcommand};
use conduit_mcp::transport::http::{self, HttpConfig};
use conduit_mcp::transport::stdio;
use std::net::SocketAddr;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "conduit-mcp",
    version,
    about = "MCP (2026-07-28) reference server built on conduit-mcp"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the reference server (HTTP on 127.0.0.1:8080 by default).
    Serve {
        /// Address to listen on; the endpoint is http://ADDR/mcp.
        #[arg(long, default_value = "127.0.0.1:8080")]
        listen: SocketAddr,
        /// Serve on stdin/stdout instead of HTTP.
        #[arg(long)]
        stdio: bool,
    },
}

fn init_tracing() {
    let filter =
        tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing();
    match cli.command {
        Command::Serve {
            listen,
            stdio: use_stdio,
        } => {
            let server = match demo::server() {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(2);
                }
            };
            let result = if use_stdio {
                stdio::serve_stdio(server).await
            } else {
                print_usage(listen);
                http::serve(server, HttpConfig::default(), listen, async {
                    let _ = tokio::signal::ctrl_c().await;
                })
                .await
            };
            match result {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

fn print_usage(addr: SocketAddr) {
    let url = format!("http://{addr}/mcp");
    eprintln!(
        "conduit-mcp reference server (protocol 2026-07-28, in-memory store)\n\
         try it:\n  curl -s {url} \\\n    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \\\n    \
         -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: echo' \\\n    \
         -d '{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"text\":\"hi\"}},\
         \"_meta\":{{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{{}}}}}}}}'"
    );
}
