//! Resuming what the ledger holds: [`Unfinished`], and the one read that
//! decides, for each unfinished task of this server and principal, whether
//! it is followed again or reported lost (never silently dropped, never
//! retried).

use super::error::ClientError;
use super::ledger::{LedgerEntry, LedgerFilter, NOT_KNOWN};
use super::recorder::Recorder;
use super::task::TaskHandle;
use super::tracker::Tracker;
use crate::protocol::Era;
use std::sync::Arc;

/// An unfinished task of the ledger, as [`Client::unfinished`](super::Client::unfinished) found it.
#[derive(Debug)]
#[non_exhaustive]
pub enum Unfinished {
    /// The server knows the task: the handle follows it like a fresh one
    /// (progress, questions answered, the result) and keeps the ledger up to date.
    Resumed {
        /// The entry, as recorded.
        entry: LedgerEntry,
        /// The task.
        task: TaskHandle,
    },
    /// The task cannot be followed from here; the ledger now says so.
    Lost {
        /// The entry, as recorded.
        entry: LedgerEntry,
        /// Why (also in [`LedgerEntry::lost`] from now on).
        reason: String,
    },
}

/// Why `entry` cannot be followed on a connection speaking `era`, before asking the server.
fn unfollowable(entry: &LedgerEntry, era: Era, version: &str) -> Option<String> {
    if entry.in_flight {
        return Some(
            "the call was interrupted before the server answered: if it made a task, its id never arrived".to_owned(),
        );
    }
    if entry.era() != era {
        return Some(format!(
            "recorded on protocol {}, but the server now speaks {version}: not followed",
            entry.version
        ));
    }
    if !entry.resumable {
        return Some(
            "a 2025-11-25 task created without authentication belongs to the session that created it: \
             a new process cannot read it"
                .to_owned(),
        );
    }
    None
}

/// Why a task the server does not know is lost.
fn not_known(entry: &LedgerEntry, now_ms: i64) -> String {
    match entry.expires_ms {
        Some(at) if at <= now_ms => format!("expired: its TTL ended {} s ago", (now_ms - at) / 1000),
        _ => NOT_KNOWN.to_owned(),
    }
}

/// The unfinished tasks `recorder`'s ledger holds for this server and
/// principal, each read once with `tasks/get`: resumed, or lost with the reason.
pub(crate) async fn unfinished(
    tracker: &Arc<Tracker>,
    recorder: &Recorder,
    era: Era,
    version: &str,
) -> Result<Vec<Unfinished>, ClientError> {
    let ledger_error = |source| ClientError::Ledger { source, task_id: None };
    let principal = recorder.principal().await?;
    let filter = LedgerFilter::unfinished(recorder.server(), principal);
    let entries = recorder.ledger().list(&filter).await.map_err(ledger_error)?;
    let mut out = Vec::with_capacity(entries.len());
    for entry in entries {
        if let Some(reason) = unfollowable(&entry, era, version) {
            recorder.lost(&entry.task_id, &reason).await;
            out.push(Unfinished::Lost { entry, reason });
            continue;
        }
        match tracker.era().get_task(&entry.task_id).await {
            Ok(now) => {
                recorder.status(&entry.task_id, now.task.status).await;
                let task = TaskHandle::resumed(tracker.clone(), entry.task_id.clone());
                out.push(Unfinished::Resumed { entry, task });
            }
            Err(ClientError::TaskNotFound(_)) => {
                let reason = not_known(&entry, recorder.now());
                recorder.lost(&entry.task_id, &reason).await;
                out.push(Unfinished::Lost { entry, reason });
            }
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}
