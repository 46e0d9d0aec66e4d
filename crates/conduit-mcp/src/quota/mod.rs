//! What one client may hold or do: who a limit counts against
//! ([`ClientKey`]: the principal, or without authentication the address),
//! the per-client counters the server keeps, the per-client rates, and the
//! bytes waiting on one response stream ([`Backlog`]).

// Only the HTTP transport reads the held-stream counts and the rate peek of a budget
// charged after the request: a server built without `http` (stdio only) compiles them
// unused.
#![cfg_attr(not(feature = "http"), allow(dead_code, unused_imports))]

mod backlog;
mod counts;
mod key;
mod rate;

pub use backlog::Backlog;
pub(crate) use counts::{Counts, Full, Held};
pub use key::ClientKey;
pub(crate) use rate::Rates;
pub use rate::{MAX_TRACKED_CLIENTS, RateLimit, RateLimitError};
