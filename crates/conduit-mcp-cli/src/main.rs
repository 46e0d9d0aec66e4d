//! `conduit-mcp`: the reference server.
//!
//! `conduit-mcp serve` runs a demo MCP server on `127.0.0.1:8080/mcp` with
//! the in-memory defaults and the Tasks extension on; `--stdio` serves the
//! same tools on stdin/stdout; `--config FILE` reads a TOML configuration
//! (its `[ext_tasks]` table configures the Tasks extension).

mod demo;

use clap::{Parser, Subcommand};
use conduit_mcp::ext::tasks::{Tasks, TasksConfig};
use conduit_mcp::transport::http::{self, HttpConfig};
use conduit_mcp::transport::stdio;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(name = "conduit-mcp", version, about = "MCP (2026-07-28) reference server built on conduit-mcp")]
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
        /// TOML configuration file (`[ext_tasks]` configures tasks; absent means enabled with defaults).
        #[arg(long)]
        config: Option<PathBuf>,
    },
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init();
}

fn tasks_config(path: Option<&PathBuf>) -> Result<TasksConfig, String> {
    let Some(path) = path else { return Ok(TasksConfig::enabled()) };
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let (cfg, store) = TasksConfig::from_toml(&text).map_err(|e| e.to_string())?;
    if let Some(s) = store {
        return Err(format!(
            "invalid ext_tasks configuration: store: {s:?} is not available in this build (use \"memory\")"
        ));
    }
    Ok(cfg)
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing();
    let Command::Serve { listen, stdio: use_stdio, config } = cli.command;
    let tasks = match tasks_config(config.as_ref())
        .and_then(|c| if c.enabled { Tasks::new(c).map(Some).map_err(|e| e.to_string()) } else { Ok(None) })
    {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let server = match demo::server(tasks.as_ref()) {
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

fn print_usage(addr: SocketAddr) {
    let url =
        if addr.port() == 0 { "http://ADDR/mcp (see the next line)".to_owned() } else { format!("http://{addr}/mcp") };
    eprintln!(
        "conduit-mcp reference server (protocol 2026-07-28, in-memory task store)\n\
         try it:\n  curl -s {url} \\\n    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \\\n    \
         -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: echo' \\\n    \
         -d '{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"text\":\"hi\"}},\
         \"_meta\":{{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{{}}}}}}}}'"
    );
}
