//! Tasks that outlive the process: every store in one SQLite file, from one
//! URL. Kill the server (`kill -9`) while a `count` task runs and start it
//! again: the task is still there (both eras' tasks, and the legacy
//! sessions), and its resumable work starts again on the restarted node. (A
//! graceful stop, Ctrl-C, fails running tasks as interrupted instead, so
//! their clients hear why.)
//!
//! ```text
//! cargo run -p conduit-mcp-sql --example sqlite_store              # tasks.db, 127.0.0.1:8080
//! cargo run -p conduit-mcp-sql --example sqlite_store -- my.db 127.0.0.1:9000
//! ```

use conduit_mcp::prelude::*;
use conduit_mcp_sql::Stores;
use serde_json::json;
use std::time::Duration;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let file = args.next().unwrap_or_else(|| "tasks.db".into());
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:8080".into());

    // One line: the task stores of both eras and the session store, in the file.
    let stores = Stores::open(&format!("sqlite:{file}")).await?;
    // A fixed node id: a restarted node recovers its own tasks at once, not
    // after their leases lapse.
    let tasks = stores.tasks(TasksConfig::enabled().node_id("sqlite-example"))?;
    // Resumable work is registered by name, so a restart can find it again.
    tasks.resumable("count", |task, args| async move {
        let to = args["to"].as_u64().unwrap_or(10);
        for n in 1..=to {
            task.progress(format!("{n} of {to}")).await.ok();
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        Ok(CallToolResult::text(format!("counted to {to}")))
    });

    let server = Server::builder("sqlite-store", "1.0.0")
        .sessions(stores.sessions(SessionConfig::default()))
        .extension(tasks.clone())
        .tool(
            Tool::new("count", "Counts, one a second (survives a restart)")
                .param("to", Param::integer("Up to"))
                .handle(|_ctx, args| async move {
                    let to = args["to"].as_u64().unwrap_or(10).min(3600);
                    Ok(TaskSpec::new().spawn_resumable("count", json!({ "to": to })))
                }),
        )
        .build()?;

    let bound = conduit_mcp::transport::http::bind(addr.parse()?).await?;
    println!("listening on http://{}/mcp (stores: {stores})", bound.local_addr());
    let shutdown = async { tokio::signal::ctrl_c().await.unwrap_or_default() };
    bound.serve(server, HttpConfig::default(), shutdown).await?;
    Ok(())
}
