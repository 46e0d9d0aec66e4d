//! Waiting for PostgreSQL's change log to number what committed.
//!
//! `conduit_task_changes_sequence()` numbers a committed change only once
//! every transaction older than it has ended — on the whole server, so a
//! transaction of another test (or of any other client) running at that
//! moment delays the number. A test that needs a position therefore waits
//! for it, bounded, instead of expecting it at once.

use std::future::Future;
use std::time::Duration;

/// How long another transaction on the server may delay a position before the test fails.
const WITHIN: Duration = Duration::from_secs(60);

/// Calls `head` until it answers at least `want`, and returns that answer.
/// Panics, naming `what`, when it has not within a minute.
pub async fn head_reaches<F, Fut>(what: &str, want: u64, mut head: F) -> u64
where
    F: FnMut() -> Fut,
    Fut: Future<Output = u64>,
{
    let waited = tokio::time::timeout(WITHIN, async {
        loop {
            let now = head().await;
            if now >= want {
                return now;
            }
            // Other transactions end on their own schedule; nothing to wait on but the next look.
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    waited.unwrap_or_else(|_| panic!("{what}: the change log's head did not reach {want} within {WITHIN:?}"))
}
