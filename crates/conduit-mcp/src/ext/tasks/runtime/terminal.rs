//! A principal's terminal tasks never lock it out, and what they hold is bounded
//! (issue 34): one rule for both eras, applied on the path they share.
//!
//! A terminal (`completed`, `failed`, `cancelled`) task stays readable until
//! its TTL, as both revisions ask — so it must not hold the slots its
//! principal (its owner) needs:
//!
//! - the per-principal cap counts live tasks only (the stores'
//!   [`CreateCaps::max_rows_per_owner`](crate::ext::tasks::CreateCaps::max_rows_per_owner));
//! - a create the row cap refuses takes the place of its principal's oldest
//!   terminal task, and is refused only when that principal has none left
//!   ([`store_new`]): its own ended tasks never stand in its way, and nobody
//!   else's results are removed for it (without a principal, nothing is);
//! - when a principal's task ends, its oldest terminal tasks go early until it
//!   keeps at most its live cap of them, within
//!   [`TasksConfig::max_terminal_bytes_per_principal`](crate::ext::tasks::TasksConfig::max_terminal_bytes_per_principal)
//!   bytes; its newest always stays ([`ended`]).

use super::worker::Tasks;
use crate::ext::tasks::store::TaskRecord;
use crate::task::{StoreError, TransactionHook};

/// Terminal tasks one create may displace before the row cap's refusal
/// stands (each displaced, another create may take the room first).
const MAX_EVICTIONS: usize = 8;

/// Stores new task `record` under the configured caps (with `hook` in its
/// transaction, if any) and returns it as stored. At the row cap, a
/// principal's create takes the place of that principal's oldest terminal
/// task and tries again: `TaskLimitReached` only when it has none left to
/// displace (or, under a burst, after [`MAX_EVICTIONS`] of them).
pub(crate) async fn store_new(
    tasks: &Tasks,
    record: TaskRecord,
    hook: Option<&dyn TransactionHook>,
) -> Result<TaskRecord, StoreError> {
    let caps = tasks.config().create_caps();
    // Only an owner's create refused at the row cap is tried again, so only
    // then is a copy kept for another attempt.
    let may_retry = record.owner.is_some() && caps.max_rows.is_some();
    let mut record = record;
    let mut evicted = 0;
    loop {
        let spare = (may_retry && evicted < MAX_EVICTIONS).then(|| record.clone());
        let stored = match hook {
            None => tasks.store().create(record, caps).await,
            Some(hook) => tasks.store().create_with(record, caps, hook).await,
        };
        match (stored, spare) {
            (Err(StoreError::TaskLimitReached), Some(spare)) => {
                let owner = spare.owner.as_deref().unwrap_or_default();
                if !tasks.store().evict_oldest_terminal(owner).await? {
                    return Err(StoreError::TaskLimitReached);
                }
                tracing::debug!(
                    "a principal's oldest terminal task went before its TTL, to make room under the row cap"
                );
                evicted += 1;
                record = spare;
            }
            (done, _) => return done,
        }
    }
}

/// After `record` was written terminal: its owner's oldest terminal tasks
/// go until the rest are within the configured bound. A failure is logged
/// (the write itself stands; the next task that ends trims again).
pub(crate) async fn ended(tasks: &Tasks, record: &TaskRecord) {
    let (true, Some(owner)) = (record.is_terminal(), record.owner.as_deref()) else { return };
    let bound = tasks.config().terminal_bound();
    if bound.max_rows.is_none() && bound.max_bytes.is_none() {
        return;
    }
    match tasks.store().trim_terminal(owner, bound).await {
        Ok(0) => {}
        Ok(removed) => {
            tracing::debug!(removed, "a principal's oldest terminal tasks went before their TTL, past its bound")
        }
        Err(e) => {
            if let Some(suppressed) = crate::log_limit::admit("could not trim a principal's terminal tasks") {
                tracing::warn!(error = %e, suppressed, "could not trim a principal's terminal tasks; the next end will");
            }
        }
    }
}
