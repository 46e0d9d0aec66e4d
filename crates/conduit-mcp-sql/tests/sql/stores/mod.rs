//! What spans both engines: `Stores::open` from one URL, the databases
//! opening refuses, and task writes that share a transaction with a hook.

mod open;
mod refusals;
mod transaction_hooks;
