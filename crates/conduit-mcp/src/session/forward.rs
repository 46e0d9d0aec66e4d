//! Where a client's response POSTed into its session goes: to the request of
//! this node waiting for it, through the relay to the node that sent the
//! request, or nowhere (nobody waits on that id).

use super::live::LegacySession;
use super::manager::Sessions;
use super::relay::{ForwardedResponse, RelayError, node_of};
use crate::protocol::RpcError;
use crate::protocol::jsonrpc::RequestId;
use serde_json::Value;
use std::sync::Arc;

/// What became of a client's response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Routed {
    /// A request of this node waited on it and has it.
    Delivered,
    /// Another node sent the request; the relay carries the response there.
    Forwarded,
    /// No request waits on this id (none of ours, or it gave up).
    NobodyWaits,
    /// Too large for the relay (its limit in bytes); the waiting call was told so.
    TooLarge(usize),
    /// The relay could not take it.
    RelayDown,
}

impl Sessions {
    /// Routes a response POSTed into `session` by `owner` (already checked to be its principal).
    pub(crate) fn route_response(
        &self,
        session: &LegacySession,
        owner: Option<&str>,
        id: Option<RequestId>,
        outcome: Result<Value, RpcError>,
    ) -> Routed {
        let Some(id) = id else { return Routed::NobodyWaits };
        let outcome = match session.offer(&id, outcome) {
            Ok(true) => return Routed::Delivered,
            Ok(false) => return Routed::NobodyWaits,
            Err(outcome) => outcome,
        };
        let (Some(relay), Some(node)) = (&self.config.relay, node_of(&id)) else { return Routed::NobodyWaits };
        if node == &*self.node || !session.persisted {
            return Routed::NobodyWaits;
        }
        let mut fwd = ForwardedResponse {
            node: node.to_owned(),
            session_key: session.key(),
            owner: owner.map(str::to_owned),
            id,
            outcome,
        };
        match relay.forward(&fwd) {
            Ok(()) => Routed::Forwarded,
            Err(RelayError::TooLarge(limit)) => {
                // The call would otherwise wait out its round timeout: it fails now, and says why.
                fwd.outcome = Err(RpcError::internal(format!(
                    "the client's response is larger than the {limit} bytes that can be forwarded between nodes"
                )));
                let _ = relay.forward(&fwd);
                Routed::TooLarge(limit)
            }
            Err(RelayError::Unavailable) => Routed::RelayDown,
        }
    }

    /// A response another node forwarded: delivered when it names this node, a session held
    /// here with the same principal, and a request that still waits; dropped otherwise.
    pub(crate) fn receive(&self, fwd: ForwardedResponse) {
        if fwd.node != *self.node {
            return;
        }
        let session = self.live().values().find(|s| s.has_key(&fwd.session_key)).cloned();
        let Some(session) = session else {
            tracing::debug!("a forwarded response names no session held here; dropped");
            return;
        };
        if !session.owned_by(fwd.owner.as_deref()) {
            tracing::warn!("a forwarded response names another principal than its session's; dropped");
            return;
        }
        if !session.deliver(&fwd.id, fwd.outcome) {
            tracing::debug!("a forwarded response answers no waiting request; dropped");
        }
    }

    /// Starts receiving what other nodes forward (once, when the server starts).
    pub(crate) fn attach_relay(self: &Arc<Self>) {
        let Some(relay) = &self.config.relay else { return };
        let me = Arc::downgrade(self);
        relay.attach_sink(Arc::new(move |fwd| {
            if let Some(s) = me.upgrade() {
                s.receive(fwd);
            }
        }));
    }
}
