//! One introspection per token at a time: requests presenting a token that is
//! being introspected wait for that answer instead of asking again. An entry
//! lives only while some request holds it, so there are never more than
//! requests in flight.

use super::token_cache::TokenHash;
use crate::auth::{AuthError, Principal};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use tokio::sync::OnceCell;

/// What one introspection decided.
pub(super) type Outcome = Result<Principal, AuthError>;

/// The introspections in flight, by token hash.
#[derive(Default)]
pub(super) struct Flights {
    by_hash: Mutex<HashMap<TokenHash, Weak<OnceCell<Outcome>>>>,
}

/// A request's hold on one flight; dropping the last hold removes the flight.
pub(super) struct Flight<'a> {
    flights: &'a Flights,
    key: TokenHash,
    cell: Option<Arc<OnceCell<Outcome>>>,
}

impl Flights {
    /// Joins the flight of `key`, starting one if none is in the air.
    pub(super) fn join(&self, key: TokenHash) -> Flight<'_> {
        let mut map = self.by_hash.lock().unwrap_or_else(|p| p.into_inner());
        let cell = match map.get(&key).and_then(Weak::upgrade) {
            Some(cell) => cell,
            None => {
                let cell = Arc::new(OnceCell::new());
                map.insert(key, Arc::downgrade(&cell));
                cell
            }
        };
        Flight { flights: self, key, cell: Some(cell) }
    }

    /// How many flights are in the air.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.by_hash.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

impl Flight<'_> {
    /// The flight's outcome: `ask` runs in the first request to get here (in another if that
    /// one is dropped first); the others wait for its answer.
    pub(super) async fn outcome<F>(&self, ask: impl FnOnce() -> F) -> Outcome
    where
        F: Future<Output = Outcome>,
    {
        let cell = self.cell.as_ref().expect("held until dropped");
        cell.get_or_init(ask).await.clone()
    }
}

impl Drop for Flight<'_> {
    fn drop(&mut self) {
        let mut map = self.flights.by_hash.lock().unwrap_or_else(|p| p.into_inner());
        // Released under the lock: a `join` cannot upgrade it in between.
        drop(self.cell.take());
        if map.get(&self.key).is_some_and(|w| w.strong_count() == 0) {
            map.remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn concurrent_requests_share_one_answer_and_leave_nothing_behind() {
        let flights = Flights::default();
        let asked = AtomicUsize::new(0);
        let (open, gate) = tokio::sync::watch::channel(false);
        let ask = || async {
            asked.fetch_add(1, Ordering::SeqCst);
            let mut gate = gate.clone();
            let _ = gate.wait_for(|open| *open).await;
            Err(AuthError::Invalid("not active".into()))
        };
        let holds: Vec<_> = (0..20).map(|_| flights.join([1; 32])).collect();
        assert_eq!(flights.len(), 1);
        let waiting = futures_util::future::join_all(holds.iter().map(|h| h.outcome(ask)));
        let released = async {
            tokio::task::yield_now().await;
            open.send_replace(true);
        };
        let (outcomes, ()) = tokio::join!(waiting, released);
        assert!(outcomes.iter().all(|o| *o == Err(AuthError::Invalid("not active".into()))));
        assert_eq!(asked.load(Ordering::SeqCst), 1, "one question for twenty requests");
        drop(holds);
        assert_eq!(flights.len(), 0, "a landed flight is gone");
        // A request that gives up first leaves nothing either.
        drop(flights.join([2; 32]));
        assert_eq!(flights.len(), 0);
    }
}
