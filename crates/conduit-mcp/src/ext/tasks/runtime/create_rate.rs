//! The task-creation rate per client ([`TasksConfig::create_rate`](crate::ext::tasks::TasksConfig::create_rate)):
//! a create past it is refused with `-32000` and `data.retryAfterMs` (HTTP 429,
//! `Retry-After`) before anything is stored or started, on both eras and both
//! transports. The counts live in the [`Tasks`](crate::ext::tasks::Tasks) handle and are
//! shared with its legacy twin (paired or made at install), so both eras draw
//! on one budget per client.

use crate::protocol::RpcError;
use crate::quota::{ClientKey, RateLimit, Rates};
use std::sync::{Arc, OnceLock};

/// The per-client counts of one handle and its twin (made on first use).
#[derive(Clone, Default)]
pub(crate) struct CreateRates(Arc<OnceLock<Rates>>);

impl std::fmt::Debug for CreateRates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("CreateRates").field(&self.0.get()).finish()
    }
}

impl CreateRates {
    /// Counts one create of `client` under `limit` (always `Ok` without one).
    pub(crate) fn admit(&self, limit: Option<RateLimit>, client: &ClientKey) -> Result<(), RpcError> {
        let Some(limit) = limit else { return Ok(()) };
        self.0.get_or_init(|| Rates::new(limit)).check(client).map_err(|wait| {
            crate::metrics::limited("task_creates");
            RpcError::too_many("Too many tasks created by this client; try again after data.retryAfterMs", Some(wait))
        })
    }
}
