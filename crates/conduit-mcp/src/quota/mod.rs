//! What one client may hold or do: who a limit counts against
//! ([`ClientKey`]: the principal, or without authentication the address).

mod key;

pub use key::ClientKey;
