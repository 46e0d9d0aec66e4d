//! The conformance client: `conduit_mcp::client` driven by the official
//! suite's client leg.
//!
//! ```text
//! conduit-mcp-conformance-client URL
//! ```
//!
//! The suite starts a scenario server, then runs this binary with the
//! server's URL as the last argument, the scenario's name in
//! `MCP_CONFORMANCE_SCENARIO`, the revision in
//! `MCP_CONFORMANCE_PROTOCOL_VERSION` and, for some scenarios, a JSON
//! context (tool calls to make) in `MCP_CONFORMANCE_CONTEXT`. Each scenario
//! is what an application would do (list, call, answer); the checks are the
//! suite's. Exit status: 0 when the scenario ran, 1 on a client error.

mod browser;
mod handler;
mod scenarios;

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into());
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init();
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: conduit-mcp-conformance-client URL (scenario in MCP_CONFORMANCE_SCENARIO)");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let version = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").ok();
    let context = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or(serde_json::Value::Null);
    match scenarios::run(&scenario, &url, version.as_deref(), &context).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("conformance client ({scenario}): {e}");
            ExitCode::FAILURE
        }
    }
}
