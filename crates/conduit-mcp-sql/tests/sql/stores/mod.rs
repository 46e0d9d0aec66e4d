//! What spans both engines: `Stores::open` from one URL, the databases
//! opening refuses, task writes that share a transaction with a hook, and
//! `task.status_changed` resumed across a restart, DPoP proofs taken once
//! (feature `oauth`), and the webhook store `Stores::webhooks` hands out.

#[cfg(feature = "oauth")]
mod dpop_replay;
mod events_key;
mod events_replay;
mod open;
mod refusals;
mod transaction_hooks;
mod webhooks;
