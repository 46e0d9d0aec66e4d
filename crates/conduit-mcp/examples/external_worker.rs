//! Work done outside the server: the tool only records a task and hands its
//! id to a worker, which reports progress and finishes it through the
//! `Tasks` handle. Here the worker is a tokio task fed by a channel; with a
//! SQL store (`conduit_mcp_sql::Stores`) it can be another process on
//! another machine, holding its own `Tasks` on the same database.
//!
//! ```text
//! cargo run -p conduit-mcp --example external_worker        # 127.0.0.1:8080, or give HOST:PORT
//! ```

use conduit_mcp::prelude::*;
use serde_json::Value;
use tokio::sync::mpsc;

/// A job for the worker: the task id and what to do.
type Job = (String, Value);

/// Drives each task by id until it is done. It needs no request, session or
/// client: the id is the capability.
async fn worker(tasks: Tasks, mut jobs: mpsc::UnboundedReceiver<Job>) {
    while let Some((id, args)) = jobs.recv().await {
        let pages = args["pages"].as_u64().unwrap_or(3);
        for page in 1..=pages {
            if tasks.cancelled(&id).await {
                break; // the client sent tasks/cancel: stop, write nothing more
            }
            tasks.progress(&id, format!("page {page} of {pages}")).await.ok();
        }
        let result = CallToolResult::text(format!("rendered {pages} pages"));
        // An error here is a task that ended meanwhile (cancelled, expired): nothing to undo.
        if let Err(e) = tasks.complete(&id, result, Some("done".into())).await {
            eprintln!("task not completed: {e}");
        }
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let tasks = Tasks::new(TasksConfig::enabled()).expect("a valid configuration");
    let (queue, jobs) = mpsc::unbounded_channel::<Job>();
    tokio::spawn(worker(tasks.clone(), jobs));

    let render = Tool::new("render", "Renders a report (a worker finishes it)")
        .param("pages", Param::integer("How many pages"))
        // Only as a task: the work is not the server's to run inline.
        .task_support(TaskSupport::Required)
        .handle(move |_ctx, args| {
            let queue = queue.clone();
            async move {
                // `start` runs once the task is stored, with its id: enqueue, return at once.
                Ok(TaskSpec::new().status_message("queued").start(move |id| {
                    let _ = queue.send((id, args));
                }))
            }
        });
    let server =
        Server::builder("external-worker", "1.0.0").extension(tasks).tool(render).build().expect("a valid server");
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8080".into());
    let bound = http::bind(addr.parse().expect("HOST:PORT")).await?;
    println!("listening on http://{}/mcp", bound.local_addr());
    bound.serve(server, HttpConfig::default(), async { tokio::signal::ctrl_c().await.unwrap_or_default() }).await
}
