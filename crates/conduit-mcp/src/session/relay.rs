//! Forwarding a client's response to the node holding the call that waits for it.
//!
//! On a legacy session a server→client request (`elicitation/create`,
//! `sampling/createMessage`, `roots/list`) is sent on the stream of the call
//! that needs the answer, and that call waits on the node that runs it. With a
//! shared [`SessionStore`](super::SessionStore) the client may POST its
//! response to any node. Every request id this server sends names the node
//! that sent it (`conduit-<node>-<n>`), so a node that receives a response it
//! does not hold knows at once whether it belongs to another node (forward it
//! through the [`ResponseRelay`]) or to nobody (400, as on one node).
//!
//! What crosses the relay is the node tag, the SHA-256 of the session id (the
//! id itself is a bearer capability and never leaves the node), the session's
//! principal as the receiving node authenticated it, the request id and the
//! client's outcome. The holding node delivers it only to the session with
//! that key, only when the session's principal is the one named, and only to a
//! request that still waits.

use crate::protocol::RpcError;
use crate::protocol::jsonrpc::{ErrorCode, RequestId};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::fmt;
use std::sync::Arc;

/// The prefix of every request id a server sends to a legacy client.
pub(crate) const ASK_PREFIX: &str = "conduit-";

/// A client's response on its way to the node that waits for it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ForwardedResponse {
    /// The tag of the node that sent the request (the part of its id after `conduit-`).
    pub node: String,
    /// Hex SHA-256 of the session id (see [`session_key`]).
    pub session_key: String,
    /// The session's principal, as the node that received the response authenticated it.
    pub owner: Option<String>,
    /// The id of the server→client request it answers.
    pub id: RequestId,
    /// The client's result or error.
    pub outcome: Result<Value, RpcError>,
}

/// Why a response could not be forwarded.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RelayError {
    /// The encoded response is larger than the relay carries (its limit in bytes).
    TooLarge(usize),
    /// The relay is stopped or not connected.
    Unavailable,
}

impl fmt::Display for RelayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RelayError::TooLarge(n) => write!(f, "the response is larger than the {n} bytes a relay carries"),
            RelayError::Unavailable => f.write_str("the response relay is unavailable"),
        }
    }
}

impl std::error::Error for RelayError {}

/// What a relay calls on the receiving side, once per response that reached it.
pub type RelaySink = Arc<dyn Fn(ForwardedResponse) + Send + Sync>;

/// Carries client responses between the nodes that share a session store
/// (`conduit_mcp_sql::PgNotifier` over PostgreSQL `NOTIFY`).
pub trait ResponseRelay: Send + Sync + fmt::Debug + 'static {
    /// Publishes `response` to every node (the holder delivers it, the others ignore it).
    /// Returns at once; a response too large to carry is refused here.
    fn forward(&self, response: &ForwardedResponse) -> Result<(), RelayError>;

    /// Starts delivering the responses other nodes forward to `sink` (called once, at server start).
    fn attach_sink(&self, sink: RelaySink);
}

/// Hex SHA-256 of a session id: how a session is named outside the node holding it.
pub fn session_key(session_id: &str) -> String {
    hex(&session_digest(session_id))
}

/// The SHA-256 of a session id.
pub(crate) fn session_digest(session_id: &str) -> [u8; 32] {
    Sha256::digest(session_id.as_bytes()).into()
}

/// Lower-case hex of a digest.
pub(crate) fn hex(digest: &[u8; 32]) -> String {
    let mut s = String::with_capacity(64);
    for b in digest {
        s.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
        s.push(char::from(b"0123456789abcdef"[usize::from(b & 15)]));
    }
    s
}

/// The node tag a server→client request id names, if it is one of ours.
pub(crate) fn node_of(id: &RequestId) -> Option<&str> {
    let RequestId::String(s) = id else { return None };
    let (node, seq) = s.strip_prefix(ASK_PREFIX)?.rsplit_once('-')?;
    (!node.is_empty() && seq.bytes().all(|b| b.is_ascii_digit())).then_some(node)
}

impl ForwardedResponse {
    /// The wire form a relay carries (JSON text).
    pub fn encode(&self) -> String {
        let outcome = match &self.outcome {
            Ok(v) => json!({ "result": v }),
            Err(e) => json!({ "error": e }),
        };
        json!({ "n": self.node, "s": self.session_key, "o": self.owner, "id": self.id, "r": outcome }).to_string()
    }

    /// Reads what [`encode`](Self::encode) wrote; `None` for anything else.
    pub fn decode(text: &str) -> Option<Self> {
        let mut v = crate::protocol::peer_json::from_str(text).ok()?;
        let node = v.get("n")?.as_str()?.to_owned();
        let session_key = v.get("s")?.as_str()?.to_owned();
        let owner = match v.get("o")? {
            Value::Null => None,
            Value::String(s) => Some(s.clone()),
            _ => return None,
        };
        let id: RequestId = serde_json::from_value(v.get("id")?.clone()).ok()?;
        let r = v.get_mut("r")?;
        let outcome = if let Some(result) = r.get_mut("result") {
            Ok(result.take())
        } else {
            let e = r.get("error")?;
            let code = e.get("code")?.as_i64()?;
            let message = e.get("message")?.as_str()?;
            let mut err = RpcError::new(ErrorCode::from_code(code), message);
            if let Some(d) = e.get("data") {
                err = err.data(d.clone());
            }
            Err(err)
        };
        Some(Self { node, session_key, owner, id, outcome })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_name_their_node() {
        assert_eq!(node_of(&RequestId::String("conduit-ab12-7".into())), Some("ab12"));
        assert_eq!(node_of(&RequestId::String("conduit-7".into())), None);
        assert_eq!(node_of(&RequestId::String("other-ab-1".into())), None);
        assert_eq!(node_of(&RequestId::Number(3)), None);
    }

    #[test]
    fn the_wire_form_round_trips() {
        let ok = ForwardedResponse {
            node: "n1".into(),
            session_key: session_key("s"),
            owner: Some("alice".into()),
            id: RequestId::String("conduit-n1-1".into()),
            outcome: Ok(json!({ "action": "accept" })),
        };
        assert_eq!(ForwardedResponse::decode(&ok.encode()), Some(ok.clone()));
        let err = ForwardedResponse { owner: None, outcome: Err(RpcError::invalid_params("no")), ..ok };
        let back = ForwardedResponse::decode(&err.encode()).expect("decodes");
        assert_eq!(back.outcome.unwrap_err().code, -32602);
        assert_eq!(ForwardedResponse::decode("{\"id\":\"x\",\"v\":1}"), None);
    }
}
