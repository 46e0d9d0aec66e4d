//! The MCP server: one `render` tool whose calls become tasks with a job in
//! the queue, on both protocol eras.

use crate::queue::{CreateRender, RenderRequest};
use crate::setup::{Database, Error, Opened};
use conduit_mcp::prelude::*;
use conduit_mcp::session::SessionConfig;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::Arc;

/// The most frames one render may ask for.
pub const MAX_FRAMES: i64 = 10_000;

/// Builds the server on `opened`.
pub fn server(db: &Database, opened: &Opened) -> Result<Server, Error> {
    let (schemas, max_attempts) = (db.schemas.clone(), db.max_attempts);
    let render = Tool::new("render", "Render frames in the job queue: a task with progress, retries and a question")
        .param(
            "frames",
            Param::integer("How many frames").keyword("minimum", json!(1)).keyword("maximum", json!(MAX_FRAMES)),
        )
        .param("confirm", Param::boolean("Ask to confirm half way"))
        .param(
            "fail_attempts",
            Param::integer("How many attempts fail on purpose (shows retries)").keyword("minimum", json!(0)),
        )
        .task_support(TaskSupport::Required)
        .handle(move |_ctx, args| {
            let hook = CreateRender { request: request(&args), schemas: schemas.clone(), max_attempts };
            async move { Ok(TaskSpec::new().status_message("queued").start_in_transaction(Arc::new(hook))) }
        });
    let sessions = opened.stores.sessions(SessionConfig::default());
    Ok(Server::builder("job-queue", env!("CARGO_PKG_VERSION"))
        .sessions(sessions)
        .extension(opened.tasks.clone())
        .tool(render)
        .build()?)
}

/// What a call asked for, within bounds (the schema is checked before the
/// handler runs; the clamps keep the stored row sane whatever it allows).
fn request(args: &Value) -> RenderRequest {
    let int = |key: &str, default: i64, max: i64| args[key].as_i64().unwrap_or(default).clamp(0, max);
    RenderRequest {
        frames: i32::try_from(int("frames", 10, MAX_FRAMES).max(1)).unwrap_or(10),
        confirm: args["confirm"].as_bool().unwrap_or(false),
        fail_attempts: i32::try_from(int("fail_attempts", 0, 100)).unwrap_or(0),
    }
}

/// Serves on `listen` until SIGINT or SIGTERM; prints where and how to call it.
pub async fn serve(db: &Database, listen: SocketAddr) -> Result<(), Error> {
    let opened = crate::setup::open(db).await?;
    let server = server(db, &opened)?;
    let shutdown = crate::shutdown_signal()?;
    let bound = http::bind(listen).await?;
    let url = format!("http://{}/mcp", bound.local_addr());
    eprintln!("listening on {url}");
    eprintln!("call it: conduit-mcp call {url} render frames=20 confirm=true");
    let served = bound.serve(server, HttpConfig::default(), shutdown).await;
    opened.stop();
    Ok(served?)
}
