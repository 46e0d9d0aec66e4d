//! The worker: runs the queue's `render` jobs, driving their tasks.

use crate::render::{RenderJob, Renderer};
use crate::setup::{Database, Error};
use graphile_worker::WorkerOptions;
use std::time::Duration;

/// How the worker runs.
#[derive(Debug, Clone, Copy)]
pub struct WorkerSettings {
    /// How many jobs run at once.
    pub concurrency: usize,
    /// How long one frame takes.
    pub frame: Duration,
    /// How often the worker tells the queue it is alive; a worker silent
    /// for three of these is presumed dead and its jobs run again.
    pub heartbeat: Duration,
}

/// Runs jobs until SIGINT or SIGTERM.
pub async fn run(db: &Database, settings: WorkerSettings) -> Result<(), Error> {
    let opened = crate::setup::open(db).await?;
    let renderer = Renderer {
        tasks: opened.tasks.clone(),
        pool: opened.pool.clone(),
        schemas: db.schemas.clone(),
        frame: settings.frame,
    };
    let worker = WorkerOptions::default()
        .pg_pool(opened.pool.clone())
        .schema(db.schemas.queue.as_str())
        .concurrency(settings.concurrency)
        .define_job::<RenderJob>()
        .add_extension(renderer)
        // Dead-worker recovery: a worker killed with SIGKILL stops beating;
        // a live one's sweep gives its locked jobs back to the queue.
        .heartbeat_interval(settings.heartbeat)
        .sweep_interval(settings.heartbeat)
        .sweep_threshold(settings.heartbeat * 3)
        .recovery_delay(Duration::ZERO)
        .init()
        .await?;
    eprintln!("worker running ({} at once)", settings.concurrency);
    let ran = worker.run().await;
    opened.stop();
    Ok(ran?)
}
