//! Recovery of tasks whose node stopped: a lapsed lease (another node died),
//! or this node id's own tasks from before a restart. Resumable work is
//! claimed and started again here; anything else is failed as interrupted.

use super::launch;
use super::worker::{INTERRUPTED, Tasks};
use crate::ext::tasks::store::{Owner, TaskRecord};
use crate::protocol::RpcError;
use crate::protocol::tasks::TaskStatus;
use crate::task::StoreError;

/// What one recovery pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Recovery {
    /// Tasks restarted on this node (resumable work).
    pub resumed: usize,
    /// Tasks marked failed as interrupted.
    pub failed: usize,
}

/// The message of a task failed because its lease lapsed: all another node
/// knows is that the lease was not renewed (the node stopped, or could not
/// reach the store, or stalled).
pub(crate) const LEASE_LAPSED: &str = "interrupted: the server running this task stopped renewing its lease";
const BATCH: usize = 100;

/// Recovers tasks whose work lease lapsed (the node running them stopped, or
/// stopped renewing): resumable work is claimed and started again here,
/// anything else is moved to `failed` with `-32603` "interrupted: the server
/// running this task stopped renewing its lease".
/// The scheduled janitor calls this every tenth of the lease period.
pub async fn recover(tasks: &Tasks) -> Result<Recovery, StoreError> {
    let lapsed = tasks.store().lapsed_leases(BATCH).await?;
    recover_records(tasks, lapsed, false).await
}

/// Recovers the tasks this node id had leased before a restart (they cannot
/// be running here: this process just started). Called once when the janitor starts.
///
/// Refused (nothing recovered) unless this process holds the node id (see
/// [`Tasks::claim_node`]): another live process with the same id is running them.
pub async fn recover_own(tasks: &Tasks) -> Result<Recovery, StoreError> {
    tasks.claim_node().await?;
    let started = tasks.inner.started_at_ms;
    // Only tasks an earlier process created: this one's own new tasks may not be running yet.
    let mine = tasks.store().leased_to(tasks.node_id(), BATCH * 100).await?;
    let earlier = mine.into_iter().filter(|r| r.created_at_ms < started).collect();
    recover_records(tasks, earlier, true).await
}

async fn recover_records(tasks: &Tasks, records: Vec<TaskRecord>, own: bool) -> Result<Recovery, StoreError> {
    let mut done = Recovery::default();
    for rec in records {
        if tasks.is_running(&rec.task_id) {
            continue;
        }
        let previous = rec.lease.clone();
        let now = tasks.now();
        let resumable = rec.tool.as_deref().and_then(|name| tasks.resumable_work(name));
        let claim = launch::new_lease(tasks);
        // Claim the task only if its lease is still the one we judged lapsed
        // (another node may have claimed it since).
        let claimed = tasks
            .store()
            .update(&rec.task_id, Owner::Any, &|cur: &TaskRecord| {
                let still = cur.lease == previous && cur.lease.as_ref().is_some_and(|l| own || l.expires_at_ms < now);
                if cur.is_terminal() || !still {
                    return Err(StoreError::Refused("claimed elsewhere".into()));
                }
                let mut n = cur.clone();
                let why = if own { INTERRUPTED } else { LEASE_LAPSED };
                if resumable.is_some() {
                    n.lease = Some(claim.clone());
                    n.status_message = Some(if own {
                        "Resumed after the server running it restarted".into()
                    } else {
                        "Resumed here after the server running it stopped renewing its lease".into()
                    });
                } else {
                    n.error = Some(RpcError::internal(why).into());
                    n.status_message = Some(why.into());
                    n.transition(TaskStatus::Failed, now);
                }
                n.touch(now);
                Ok(n)
            })
            .await;
        let updated = match claimed {
            Ok(r) => r,
            Err(StoreError::Refused(_) | StoreError::NotFound | StoreError::Terminal) => continue,
            Err(e) => return Err(e),
        };
        tasks.after_write(&updated);
        super::terminal::ended(tasks, &updated).await;
        match resumable {
            Some(work) => {
                tracing::info!("resuming a task whose node stopped");
                launch::launch_resumable(
                    tasks,
                    updated.task_id.clone(),
                    updated.expires_at_ms(),
                    work,
                    updated.resume_args.clone().unwrap_or_default(),
                );
                done.resumed += 1;
            }
            None => done.failed += 1,
        }
    }
    if done.resumed + done.failed > 0 {
        crate::metrics::recovered(done.resumed, done.failed);
        crate::metrics::finished_by_recovery(done.failed);
        tracing::info!(
            target: "conduit_mcp::ext_tasks::recovery",
            resumed = done.resumed,
            failed = done.failed,
            "recovered tasks of a stopped node"
        );
    }
    Ok(done)
}
