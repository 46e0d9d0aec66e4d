//! The client commands (`tools`, `call`, `task`, `watch`, `login`, `logout`) against real
//! servers: over HTTP, HTTPS and stdio, in a pseudo-terminal, OAuth with a real authorization
//! server, and the official Python SDK's OAuth client against `serve`.

#[path = "../support/cli_support/mod.rs"]
pub mod cli_support;
#[path = "../support/common/mod.rs"]
pub mod common;
#[path = "../support/oauth_support/mod.rs"]
pub mod oauth_support;

mod cli;
mod enterprise_grants;
mod enterprise_login;
mod events;
mod follow_events;
mod https;
mod ledger;
mod oauth;
mod pty;
mod python_oauth;
mod stdio;
