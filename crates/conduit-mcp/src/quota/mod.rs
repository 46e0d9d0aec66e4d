//! What one client may hold or do: who a limit counts against
//! ([`ClientKey`]: the principal, or without authentication the address),
//! and the per-client counters the server keeps.

mod counts;
mod key;

pub(crate) use counts::{Counts, Full, Held};
pub use key::ClientKey;
