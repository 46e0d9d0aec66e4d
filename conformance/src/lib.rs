//! The fixture server for the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`, server leg, protocols `2026-07-28` and
//! `2025-11-25` on one endpoint), as a
//! library: the `conduit-mcp-conformance` binary serves it, and the benchmarks
//! (`conduit-mcp-bench`) serve two of its tools.
//!
//! - [`server`] builds the whole fixture on a tasks configuration; [`register`]
//!   adds every tool, prompt and resource to a builder of your own;
//! - [`tasks_tools::greet`] and [`tasks_tools::slow_compute`] are the tools the
//!   benchmarks call, one synchronous, one a task when the request declares the
//!   extension;
//! - [`cli`] is the binary's command line and shutdown signal.
//!
//! ```
//! use conduit_mcp::ext::tasks::TasksConfig;
//!
//! let server = conduit_mcp_conformance::server(TasksConfig::enabled()).expect("the fixture builds");
//! # drop(server);
//! ```
//!
//! The tool, prompt and resource names are hard-coded in the suite; see
//! `scripts/conformance.sh` for how it is run. The private modules hold:
//!
//! - `tools`: content, diagnostic and header tools;
//! - [`tasks_tools`]: the tools of the `tasks-*` scenarios (the Tasks extension is on);
//! - `mrtr_tools`: the multi round-trip (`input_required`) tools;
//! - `legacy_tools`: what only the 2025-11-25 leg calls (logging, sampling,
//!   elicitation, SSE polling, the watched resource);
//! - `prompts`: prompts and the completion handler;
//! - `resources`: static resources and the URI template;
//! - `assets`: the small binary payloads (PNG, WAV) they return.

mod assets;
pub mod cli;
mod legacy_tools;
mod mrtr_tools;
mod prompts;
mod resources;
pub mod tasks_tools;
mod tools;

use conduit_mcp::ext::tasks::{Tasks, TasksConfig};
use conduit_mcp::server::BuildError;
use conduit_mcp::{Server, ServerBuilder};

/// The name the fixture gives itself in `serverInfo`.
pub const NAME: &str = "conduit-mcp-conformance";

/// Builds the fixture server with everything the suite looks for, the Tasks
/// extension on `tasks` (`TasksConfig::enabled()` for the memory store), and
/// legacy tasks (in memory) for 2025-11-25 sessions, driven by the same handle.
pub fn server(tasks: TasksConfig) -> Result<Server, BuildError> {
    let builder =
        Server::builder(NAME, env!("CARGO_PKG_VERSION")).instructions("Fixture server for the MCP conformance suite.");
    let tasks = Tasks::new(tasks).map_err(|e| BuildError::Extension(e.to_string()))?;
    register(builder.extension(tasks)).build()
}

/// Registers every tool, prompt and resource of the fixture, in the order the
/// suite expects (`test_simple_text` is `tools[0]`). The tasks tools need the
/// Tasks extension on the builder.
pub fn register(builder: ServerBuilder) -> ServerBuilder {
    let builder = tools::register(builder);
    let builder = tasks_tools::register(builder);
    let builder = mrtr_tools::register(builder);
    let builder = legacy_tools::register(builder);
    let builder = prompts::register(builder);
    resources::register(builder)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn fixture_lists_simple_text_first() {
        use conduit_mcp::protocol::jsonrpc::Request;
        use conduit_mcp::protocol::{Message, RequestId};
        use conduit_mcp::server::RequestEnv;
        use serde_json::json;

        let server = server(TasksConfig::enabled()).expect("fixture server builds");
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
