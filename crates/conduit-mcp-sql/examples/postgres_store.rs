//! Many nodes, one PostgreSQL database: start this twice on two ports with
//! the same `DATABASE_URL`. A task created through one node is read,
//! answered and cancelled through either; a client listening on one hears
//! what a worker on the other wrote (LISTEN/NOTIFY, a channel per era); a
//! legacy session opened on one is served by both.
//!
//! ```text
//! export DATABASE_URL=postgres://postgres@127.0.0.1:5432/test
//! cargo run -p conduit-mcp-sql --example postgres_store -- 127.0.0.1:8081 &
//! cargo run -p conduit-mcp-sql --example postgres_store -- 127.0.0.1:8082
//! ```

use conduit_mcp::prelude::*;
use conduit_mcp_sql::StoresOptions;
use std::time::Duration;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("DATABASE_URL").map_err(|_| "set DATABASE_URL to a postgres:// URL")?;
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8081".into());

    // A schema of its own keeps the tables (and the notifier channels) apart
    // from the application's; every node opens the same one.
    let stores = StoresOptions::new(url).schema("mcp_example").open().await?;
    let tasks = stores.tasks(TasksConfig::enabled())?;
    // Refused at once if another live process holds this node id.
    tasks.claim_node().await?;

    let server = Server::builder("postgres-store", "1.0.0")
        .sessions(stores.sessions(SessionConfig::default())) // sessions any node serves
        .extension(tasks.clone())
        .tool(Tool::new("wait", "Waits a minute, as a task (cancel it from either node)").handle(
            |_ctx, _args| async move {
                Ok(TaskSpec::new().spawn(|task| async move {
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_secs(60)) => Ok(CallToolResult::text("waited")),
                        () = task.cancelled() => Ok(CallToolResult::text("cancelled")),
                    }
                }))
            },
        ))
        .build()?;

    let bound = conduit_mcp::transport::http::bind(addr.parse()?).await?;
    println!("listening on http://{}/mcp (stores: {stores}, node {})", bound.local_addr(), tasks.node_id());
    let shutdown = async { tokio::signal::ctrl_c().await.unwrap_or_default() };
    bound.serve(server, HttpConfig::default(), shutdown).await?;
    stores.stop();
    Ok(())
}
