//! `job-queue`: an MCP server whose `render` tool's work runs in a
//! `graphile_worker` queue on PostgreSQL, and the worker that runs it.
//!
//! ```text
//! job-queue serve  [--database-url URL] [--listen 127.0.0.1:8091]
//! job-queue worker [--database-url URL] [--concurrency 4]
//! ```
//!
//! The task row and its job are written in one transaction; the worker
//! drives the task (progress, a question half way, completion) through the
//! `Tasks` handle on the same store. See README.md.

mod queue;
mod render;
mod server;
mod setup;
mod worker;

use clap::{Args, Parser, Subcommand};
use queue::Schemas;
use setup::{Database, Error};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, Parser)]
#[command(name = "job-queue", about = "An MCP server whose slow tool runs in a PostgreSQL job queue")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve MCP (both protocol eras) on HTTP.
    Serve {
        #[command(flatten)]
        db: DbArgs,
        /// Where to listen.
        #[arg(long, default_value = "127.0.0.1:8091")]
        listen: SocketAddr,
    },
    /// Run the queue's jobs.
    Worker {
        #[command(flatten)]
        db: DbArgs,
        /// How many jobs run at once.
        #[arg(long, default_value_t = 4)]
        concurrency: usize,
        /// How long one frame takes, in milliseconds.
        #[arg(long, default_value_t = 500)]
        frame_ms: u64,
        /// The worker's heartbeat, in milliseconds (a worker silent for three is presumed dead).
        #[arg(long, default_value_t = 10_000)]
        heartbeat_ms: u64,
    },
}

#[derive(Debug, Args)]
struct DbArgs {
    /// The PostgreSQL URL.
    #[arg(long, env = "DATABASE_URL", default_value = "postgres://postgres@127.0.0.1:5432/postgres")]
    database_url: String,
    /// The schema of the task store and `render_state`.
    #[arg(long, default_value = "job_queue")]
    schema: String,
    /// The `graphile_worker` schema.
    #[arg(long, default_value = "graphile_worker")]
    queue_schema: String,
    /// How many attempts the queue makes per job.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(i16).range(1..=25))]
    max_attempts: i16,
}

impl DbArgs {
    fn database(self) -> Result<Database, Error> {
        for name in [&self.schema, &self.queue_schema] {
            if !Schemas::valid(name) {
                return Err(format!("{name:?} is not a schema name this example accepts ([a-z_][a-z0-9_]*)").into());
            }
        }
        Ok(Database {
            url: self.database_url,
            schemas: Schemas { tasks: self.schema, queue: self.queue_schema },
            max_attempts: self.max_attempts,
        })
    }
}

/// Resolves on SIGINT or SIGTERM (registered now, so a signal right after
/// start is not missed).
fn shutdown_signal() -> Result<impl std::future::Future<Output = ()> + Send + 'static, Error> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    Ok(async move {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    })
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()))
        .init();
    let cli = Cli::parse();
    let done = match cli.command {
        Command::Serve { db, listen } => match db.database() {
            Ok(db) => server::serve(&db, listen).await,
            Err(e) => Err(e),
        },
        Command::Worker { db, concurrency, frame_ms, heartbeat_ms } => match db.database() {
            Ok(db) => {
                let settings = worker::WorkerSettings {
                    concurrency: concurrency.max(1),
                    frame: Duration::from_millis(frame_ms),
                    heartbeat: Duration::from_millis(heartbeat_ms.max(100)),
                };
                worker::run(&db, settings).await
            }
            Err(e) => Err(e),
        },
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
