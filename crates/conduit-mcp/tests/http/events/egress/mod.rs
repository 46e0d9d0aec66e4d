//! Webhook egress and endpoint verification on real sockets (events.md §3.4,
//! §4): the SSRF rules proven against loopback listeners that report every
//! connection (a refused attempt must dial nothing), deliveries to the
//! origins an operator opened, redirects never followed, the failure
//! categories, and the challenge handshake. Nothing here dials anything but
//! 127.0.0.1 and ::1; host names resolve through a fixed table only.

mod answers;
mod receiver;
mod ssrf;
mod verify;

use conduit_mcp::ext::events::webhook::egress::{Egress, EgressPolicy, FixedResolver};
use std::sync::Arc;

/// An egress under `policy` whose names resolve from `resolver` only.
pub fn egress(policy: &EgressPolicy, resolver: &Arc<FixedResolver>) -> Egress {
    Egress::with_resolver(policy, resolver.clone()).expect("a valid policy")
}

/// A policy opening these origins.
pub fn allowing<S: Into<String>>(origins: impl IntoIterator<Item = S>) -> EgressPolicy {
    let mut policy = EgressPolicy::new();
    policy.allow_origins = origins.into_iter().map(Into::into).collect();
    policy
}

/// A delivery's headers, as the worker sends them.
pub fn headers() -> Vec<(&'static str, String)> {
    vec![("webhook-id", "evt_1".into()), ("x-mcp-subscription-id", "sub_1".into())]
}
