//! What one client may hold or do: who a limit counts against
//! ([`ClientKey`]: the principal, or without authentication the address),
//! the per-client counters the server keeps, and the per-client rates.

mod counts;
mod key;
mod rate;

pub(crate) use counts::{Counts, Full, Held};
pub use key::ClientKey;
pub(crate) use rate::Rates;
pub use rate::{MAX_TRACKED_CLIENTS, RateLimit, RateLimitError};
