//! [`LedgerEntry`]: what the ledger keeps of one task, and the digest of
//! its arguments ([`args_digest`]).

use crate::protocol::Era;
use crate::protocol::tasks::TaskStatus;
use crate::protocol::version::LEGACY_VERSIONS;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::fmt;

/// One task as the ledger keeps it.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LedgerEntry {
    /// The server's URL, as the client was given it.
    pub server: String,
    /// Who the client was there ([`principal`](super::principal)).
    pub principal: String,
    /// The task id (a bearer capability: kept in the ledger, never logged).
    pub task_id: String,
    /// The protocol version the task was created on (`2026-07-28`, `2025-11-25`).
    pub version: String,
    /// The tool called.
    pub tool: String,
    /// `sha256:` and the hex SHA-256 of the arguments' JSON ([`args_digest`]).
    pub args_digest: String,
    /// When the task was recorded (ms since the epoch, the client's clock).
    pub created_ms: i64,
    /// When the task's TTL ends (`createdAt + ttlMs`), if it has one.
    pub expires_ms: Option<i64>,
    /// The last status seen.
    pub status: TaskStatus,
    /// When the entry last changed (ms since the epoch).
    pub updated_ms: i64,
    /// Why the task cannot be followed any more, once that is known.
    pub lost: Option<String>,
    /// Whether a new process may read the task: `false` for a `2025-11-25`
    /// task made without authentication, which belongs to its session.
    pub resumable: bool,
    /// A `tools/call` sent whose answer has not come (yet): `task_id` is then
    /// the client's own key for the call (`call:` and random hex), not a
    /// task id. Left behind by a process killed mid-call, it is reported as
    /// interrupted: if the server made a task, its id never arrived.
    pub in_flight: bool,
}

impl fmt::Debug for LedgerEntry {
    // The task id is a bearer capability: it is not printed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LedgerEntry")
            .field("server", &self.server)
            .field("principal", &self.principal)
            .field("version", &self.version)
            .field("tool", &self.tool)
            .field("created_ms", &self.created_ms)
            .field("status", &self.status)
            .field("lost", &self.lost)
            .field("resumable", &self.resumable)
            .field("in_flight", &self.in_flight)
            .finish_non_exhaustive()
    }
}

impl LedgerEntry {
    /// A task just created: `working`, resumable, no TTL, not lost.
    pub fn new(
        server: impl Into<String>,
        principal: impl Into<String>,
        task_id: impl Into<String>,
        version: impl Into<String>,
        tool: impl Into<String>,
        args_digest: impl Into<String>,
        created_ms: i64,
    ) -> Self {
        Self {
            server: server.into(),
            principal: principal.into(),
            task_id: task_id.into(),
            version: version.into(),
            tool: tool.into(),
            args_digest: args_digest.into(),
            created_ms,
            expires_ms: None,
            status: TaskStatus::Working,
            updated_ms: created_ms,
            lost: None,
            resumable: true,
            in_flight: false,
        }
    }

    /// A `tools/call` about to be sent, under a fresh key of the client's own
    /// (see [`in_flight`](Self::in_flight)).
    pub fn call_in_flight(
        server: impl Into<String>,
        principal: impl Into<String>,
        version: impl Into<String>,
        tool: impl Into<String>,
        args_digest: impl Into<String>,
        created_ms: i64,
    ) -> Self {
        let key = format!("call:{:032x}", rand::random::<u128>());
        let mut e = Self::new(server, principal, key, version, tool, args_digest, created_ms);
        e.in_flight = true;
        e
    }

    /// The era of [`version`](Self::version).
    pub fn era(&self) -> Era {
        if LEGACY_VERSIONS.contains(&self.version.as_str()) { Era::Legacy } else { Era::Modern }
    }

    /// Neither terminal nor lost: a task to follow.
    pub fn is_unfinished(&self) -> bool {
        !self.status.is_terminal() && self.lost.is_none()
    }

    /// Terminal or lost.
    pub fn has_ended(&self) -> bool {
        !self.is_unfinished()
    }
}

/// `sha256:` and the hex SHA-256 of `args` as compact JSON with every
/// object's keys sorted: the same arguments always give the same digest
/// (whatever order they were built in), and the digest gives them away to no one.
pub fn args_digest(args: &Value) -> String {
    let mut text = Vec::with_capacity(128);
    canonical(args, &mut text);
    let digest = Sha256::digest(&text);
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    out.extend(hex(&digest));
    out
}

/// The lowercase hex digits of `bytes`.
fn hex(bytes: &[u8]) -> impl Iterator<Item = char> + '_ {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    bytes.iter().flat_map(|b| [DIGITS[usize::from(b >> 4)], DIGITS[usize::from(b & 0xf)]]).map(char::from)
}

/// Writes `v` as compact JSON, object keys sorted.
fn canonical(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Object(m) => {
            out.push(b'{');
            // serde_json's map keeps its keys sorted unless `preserve_order` is on somewhere in the build.
            if m.keys().is_sorted() {
                for (i, (k, x)) in m.iter().enumerate() {
                    member(i, k, x, out);
                }
            } else {
                let mut members: Vec<(&String, &Value)> = m.iter().collect();
                members.sort_unstable_by_key(|&(k, _)| k);
                for (i, (k, x)) in members.into_iter().enumerate() {
                    member(i, k, x, out);
                }
            }
            out.push(b'}');
        }
        Value::Array(a) => {
            out.push(b'[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                canonical(x, out);
            }
            out.push(b']');
        }
        other => json_scalar(other, out),
    }
}

/// Appends the `i`th member of an object, `k: x`.
fn member(i: usize, k: &str, x: &Value, out: &mut Vec<u8>) {
    if i > 0 {
        out.push(b',');
    }
    json_scalar(k, out);
    out.push(b':');
    canonical(x, out);
}

/// Appends `v` as JSON (a string, a number, a boolean or null: writing one
/// into memory cannot fail).
fn json_scalar<T: serde::Serialize + ?Sized>(v: &T, out: &mut Vec<u8>) {
    let _ = serde_json::to_writer(out, v);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_digest_names_the_arguments_not_their_order() {
        let a = args_digest(&json!({ "a": 1, "b": "x" }));
        assert_eq!(a, args_digest(&serde_json::from_str(r#"{"b":"x","a":1}"#).unwrap()));
        assert_ne!(a, args_digest(&json!({ "a": 2, "b": "x" })));
        assert!(a.starts_with("sha256:") && a.len() == 71, "{a}");
        // The SHA-256 of the canonical text: keys sorted at every depth, JSON escapes kept.
        let nested = args_digest(&json!({ "z": [{ "y": true, "x": null }], "a": "q\"" }));
        let text = r#"{"a":"q\"","z":[{"x":null,"y":true}]}"#;
        let want: String = Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(nested, format!("sha256:{want}"));
    }

    #[test]
    fn debug_hides_the_task_id() {
        let e = LedgerEntry::new("http://h/mcp", "anonymous", "secret-id", "2026-07-28", "t", "d", 0);
        assert!(!format!("{e:?}").contains("secret-id"));
        assert_eq!(e.era(), Era::Modern);
        assert!(e.is_unfinished());
    }
}
