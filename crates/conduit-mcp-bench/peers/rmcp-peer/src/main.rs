//! The rmcp peer of the conduit-mcp benchmarks: the official Rust SDK (`rmcp` 3.11)
//! serving the conformance fixture's `greet` and `slow_compute` tools.
//!
//! ```text
//! rmcp-peer [--listen 127.0.0.1:PORT] [--stateful]
//! ```
//!
//! Serves MCP at `http://ADDR/mcp` in rmcp's fastest configuration: stateless
//! Streamable HTTP (`legacy_session_mode = false`), `json_response = true`, no SSE
//! keep-alive, `TCP_NODELAY` on every accepted socket, and one shared handler (the
//! service factory hands out cheap clones of the same `Arc`s: router, task manager,
//! server info). `slow_compute` called with the tasks extension declared becomes a
//! task in rmcp's `TaskManager`; `tasks/get`, `tasks/update` and `tasks/cancel` go
//! to it. Prints `listening on http://ADDR/mcp` to stderr once it accepts.
//!
//! With `--stateful` it runs rmcp's default configuration instead: stateful
//! sessions (`initialize` mints `Mcp-Session-Id`, each session a service of its
//! own in the `LocalSessionManager`), SSE responses, the default keep-alive — what
//! a 2025-11-25 client meets (benchmarks W8 and W9).

use axum::serve::ListenerExt;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ContentBlock, CreateTaskResult,
    GetTaskParams, GetTaskResult, Implementation, ServerCapabilities, ServerConfig, UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::task_manager::{TaskExit, TaskManager, TaskOptions};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData as McpError, ServerHandler, tool, tool_handler, tool_router};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Longest `slow_compute` run accepted, in seconds (as in the fixture).
const MAX_COMPUTE_SECONDS: f64 = 3_600.0;
/// Poll interval hint, as in the fixture.
const POLL_MS: u64 = 200;
/// Task lifetime: conduit-mcp's default (1 hour), so both keep tasks equally long.
const TTL_MS: u64 = 3_600_000;

/// `greet` arguments.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct GreetArgs {
    /// Who to greet.
    name: String,
}

/// `slow_compute` arguments.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct ComputeArgs {
    /// How long to work, in seconds.
    #[schemars(range(min = 0))]
    seconds: Option<f64>,
    /// A label echoed in the result.
    label: Option<String>,
}

impl ComputeArgs {
    /// The work's length and result text, or the tool error for an out-of-range `seconds`.
    fn plan(&self) -> Result<(Duration, String), CallToolResult> {
        let seconds = self.seconds.unwrap_or(0.0);
        if !(0.0..=MAX_COMPUTE_SECONDS).contains(&seconds) {
            let msg = format!("seconds must be between 0 and {MAX_COMPUTE_SECONDS}");
            return Err(CallToolResult::error(vec![ContentBlock::text(msg)]));
        }
        let text = format!("computed {}", self.label.as_deref().unwrap_or_default()).trim_end().to_owned();
        Ok((Duration::from_secs_f64(seconds), text))
    }
}

/// The handler. Cloning it (once per request, by the stateless service) only bumps reference counts.
#[derive(Clone)]
struct Peer {
    tool_router: Arc<ToolRouter<Peer>>,
    tasks: TaskManager,
    info: Arc<ServerConfig>,
}

#[tool_router]
impl Peer {
    fn new() -> Self {
        let caps = ServerCapabilities::builder().enable_tools().enable_tasks().build();
        let info =
            ServerConfig::new(caps).with_server_info(Implementation::new("rmcp-peer", env!("CARGO_PKG_VERSION")));
        Self { tool_router: Arc::new(Self::tool_router()), tasks: TaskManager::new(), info: Arc::new(info) }
    }

    #[tool(description = "Greets someone (synchronous only)")]
    async fn greet(&self, Parameters(args): Parameters<GreetArgs>) -> Result<CallToolResult, McpError> {
        Ok(CallToolResult::success(vec![ContentBlock::text(format!("Hello, {}!", args.name))]))
    }

    #[tool(description = "Works for `seconds` seconds: a task when the request declares the extension")]
    async fn slow_compute(&self, Parameters(args): Parameters<ComputeArgs>) -> Result<CallToolResult, McpError> {
        let (work, text) = match args.plan() {
            Ok(p) => p,
            Err(e) => return Ok(e),
        };
        tokio::time::sleep(work).await;
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Peer {
    fn get_info(&self) -> ServerConfig {
        (*self.info).clone()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let declared = context.client_capabilities().is_some_and(|c| c.supports_tasks());
        if request.name == "slow_compute" && declared {
            let args: ComputeArgs =
                serde_json::from_value(serde_json::Value::Object(request.arguments.clone().unwrap_or_default()))
                    .map_err(|e| McpError::invalid_params(e.to_string(), None))?;
            let (work, text) = match args.plan() {
                Ok(p) => p,
                Err(e) => return Ok(e.into()),
            };
            let options =
                TaskOptions::new().with_ttl_ms(TTL_MS).with_poll_interval_ms(POLL_MS).with_status_message("Computing");
            let task = self.tasks.spawn(options, move |ctx| {
                Box::pin(async move {
                    tokio::select! {
                        _ = tokio::time::sleep(work) => Ok(CallToolResult::success(vec![ContentBlock::text(text)])),
                        _ = ctx.cancelled() => Err(TaskExit::Cancelled),
                    }
                })
            });
            return Ok(CallToolResponse::Task(CreateTaskResult::new(task)));
        }
        let tcc = ToolCallContext::new(self, request, context);
        self.tool_router.call(tcc).await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        Ok(GetTaskResult::new(self.tasks.get_task(&request.task_id)?))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.tasks.update_task(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.tasks.cancel_task(&request.task_id)
    }
}

const USAGE: &str = "usage: rmcp-peer [--listen 127.0.0.1:PORT] [--stateful]";

/// Parses `--listen ADDR` (default `127.0.0.1:0`, any free port; loopback only) and `--stateful`.
fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Option<(SocketAddr, bool)>, String> {
    let mut listen = "127.0.0.1:0".to_owned();
    let mut stateful = false;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-h" | "--help" => return Ok(None),
            "--listen" => listen = args.next().ok_or("--listen needs an address")?,
            "--stateful" => stateful = true,
            other => return Err(format!("unexpected argument {other:?}")),
        }
    }
    let addr: SocketAddr = listen.parse().map_err(|e| format!("invalid --listen address {listen:?}: {e}"))?;
    if !addr.ip().is_loopback() {
        return Err(format!("refusing to bind {addr}: the benchmark peers bind loopback addresses only"));
    }
    Ok(Some((addr, stateful)))
}

#[tokio::main]
async fn main() -> ExitCode {
    let (addr, stateful) = match parse_args(std::env::args().skip(1)) {
        Ok(Some(a)) => a,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("error: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let peer = Peer::new();
    let ct = CancellationToken::new();
    let config = if stateful {
        StreamableHttpServerConfig::default().with_cancellation_token(ct.child_token())
    } else {
        StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            .with_sse_keep_alive(None)
            .with_cancellation_token(ct.child_token())
    };
    let service: StreamableHttpService<Peer, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(peer.clone()), Default::default(), config);
    let app = axum::Router::new().nest_service("/mcp", service);
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: cannot bind {addr}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let local = listener.local_addr().unwrap_or(addr);
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    eprintln!("listening on http://{local}/mcp");
    let shutdown = async move {
        let _ = tokio::signal::ctrl_c().await;
        ct.cancel();
    };
    match axum::serve(listener, app).with_graceful_shutdown(shutdown).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
