//! One line of the intent journal: a record as one JSON object and a
//! newline, the entry's columns as the database holds them and nothing more.
//!
//! A line is written on every create, between the server's answer and the
//! handle the caller gets, so [`encode`] writes it by hand: the keys are
//! constants, a string is copied in runs between the bytes JSON escapes,
//! and nothing is allocated beyond the caller's buffer. [`decode`] reads it
//! back with serde (only at open, for a dead process's journal), so
//! whatever `encode` writes is checked against an ordinary JSON parser by
//! the tests below.

use super::super::LedgerEntry;
use crate::protocol::tasks::TaskStatus;
use serde::Deserialize;
use std::borrow::Cow;

/// One record waiting to be folded: the entry, in place of the call in
/// flight `call` when it answers one.
#[derive(Debug, Clone)]
pub(super) struct Op {
    /// Its place in the journal (from 1).
    pub(super) seq: u64,
    /// The call in flight it replaces.
    pub(super) call: Option<String>,
    /// The entry.
    pub(super) entry: LedgerEntry,
}

/// A line as read back.
#[derive(Deserialize)]
struct Line<'a> {
    seq: u64,
    #[serde(default, borrow)]
    call: Option<Cow<'a, str>>,
    #[serde(borrow)]
    server: Cow<'a, str>,
    #[serde(borrow)]
    task_id: Cow<'a, str>,
    #[serde(borrow)]
    principal: Cow<'a, str>,
    #[serde(borrow)]
    version: Cow<'a, str>,
    #[serde(borrow)]
    tool: Cow<'a, str>,
    #[serde(borrow)]
    args_digest: Cow<'a, str>,
    created_ms: i64,
    expires_ms: Option<i64>,
    #[serde(borrow)]
    status: Cow<'a, str>,
    updated_ms: i64,
    #[serde(borrow)]
    lost: Option<Cow<'a, str>>,
    resumable: bool,
    in_flight: bool,
}

/// Appends the line of record `seq` (`e`, in place of the call `call`) to
/// `out`, its newline included.
pub(super) fn encode(out: &mut Vec<u8>, seq: u64, call: Option<&str>, e: &LedgerEntry) {
    let mut n = itoa::Buffer::new();
    out.extend_from_slice(b"{\"seq\":");
    out.extend_from_slice(n.format(seq).as_bytes());
    if let Some(call) = call {
        out.extend_from_slice(b",\"call\":");
        string(out, call);
    }
    out.extend_from_slice(b",\"server\":");
    string(out, &e.server);
    out.extend_from_slice(b",\"task_id\":");
    string(out, &e.task_id);
    out.extend_from_slice(b",\"principal\":");
    string(out, &e.principal);
    out.extend_from_slice(b",\"version\":");
    string(out, &e.version);
    out.extend_from_slice(b",\"tool\":");
    string(out, &e.tool);
    out.extend_from_slice(b",\"args_digest\":");
    string(out, &e.args_digest);
    out.extend_from_slice(b",\"created_ms\":");
    out.extend_from_slice(n.format(e.created_ms).as_bytes());
    out.extend_from_slice(b",\"expires_ms\":");
    match e.expires_ms {
        Some(ms) => out.extend_from_slice(n.format(ms).as_bytes()),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"status\":");
    string(out, e.status.as_str());
    out.extend_from_slice(b",\"updated_ms\":");
    out.extend_from_slice(n.format(e.updated_ms).as_bytes());
    out.extend_from_slice(b",\"lost\":");
    match &e.lost {
        Some(why) => string(out, why),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(if e.resumable { b",\"resumable\":true" } else { b",\"resumable\":false" });
    out.extend_from_slice(if e.in_flight { b",\"in_flight\":true}\n" } else { b",\"in_flight\":false}\n" });
}

/// The record of one line (without its newline), or `None` when it is not
/// one: torn by a crash mid-write, or a status this code does not know.
pub(super) fn decode(line: &[u8]) -> Option<Op> {
    let l: Line<'_> = serde_json::from_slice(line).ok()?;
    let mut e = LedgerEntry::new(l.server, l.principal, l.task_id, l.version, l.tool, l.args_digest, l.created_ms);
    e.expires_ms = l.expires_ms;
    e.status = TaskStatus::parse(&l.status)?;
    e.updated_ms = l.updated_ms;
    e.lost = l.lost.map(Cow::into_owned);
    e.resumable = l.resumable;
    e.in_flight = l.in_flight;
    Some(Op { seq: l.seq, call: l.call.map(Cow::into_owned), entry: e })
}

/// `s` as a JSON string: `"` and `\` escaped with a backslash, control
/// characters as `\u00XX`, everything else (UTF-8 included) as it is.
fn string(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    out.push(b'"');
    // Most strings escape nothing: one pass with no early exit (the compiler
    // checks many bytes at a time), then one copy.
    if !bytes.iter().fold(false, |any, &b| any | (b < 0x20) | (b == b'"') | (b == b'\\')) {
        out.extend_from_slice(bytes);
        out.push(b'"');
        return;
    }
    let mut run = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if b >= 0x20 && b != b'"' && b != b'\\' {
            continue;
        }
        out.extend_from_slice(&bytes[run..i]);
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            _ => out.extend_from_slice(&[b'\\', b'u', b'0', b'0', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]),
        }
        run = i + 1;
    }
    out.extend_from_slice(&bytes[run..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn entry() -> LedgerEntry {
        let mut e = LedgerEntry::new(
            "https://example.test/mcp?a=\"b\"",
            "oauth:issuer\\sub",
            "t\u{1}\n\u{1f}é😀",
            "2026-07-28",
            "tool \"quoted\"",
            "sha256:00ff",
            1_700_000_000_123,
        );
        e.expires_ms = Some(-5);
        e.status = TaskStatus::InputRequired;
        e.updated_ms = i64::MAX;
        e.lost = Some("gone\t\u{7f}".into());
        e.resumable = false;
        e.in_flight = true;
        e
    }

    fn encoded(seq: u64, call: Option<&str>, e: &LedgerEntry) -> Vec<u8> {
        let mut out = Vec::new();
        encode(&mut out, seq, call, e);
        out
    }

    #[test]
    fn a_line_is_one_json_object_with_every_column_and_one_newline() {
        let e = entry();
        let line = encoded(u64::MAX, Some("call:\"x\""), &e);
        assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1, "one newline, at the end");
        assert_eq!(line.last(), Some(&b'\n'));
        let v: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(
            v,
            json!({
                "seq": u64::MAX, "call": "call:\"x\"", "server": e.server, "task_id": e.task_id,
                "principal": e.principal, "version": "2026-07-28", "tool": e.tool,
                "args_digest": "sha256:00ff", "created_ms": 1_700_000_000_123_i64, "expires_ms": -5,
                "status": "input_required", "updated_ms": i64::MAX, "lost": e.lost, "resumable": false,
                "in_flight": true,
            })
        );
    }

    #[test]
    fn what_is_encoded_decodes_to_the_same_record() {
        let mut plain = LedgerEntry::new("s", "anonymous", "task-1", "2025-11-25", "t", "sha256:", 1);
        plain.status = TaskStatus::Completed;
        for (seq, call, e) in [(1, None, plain), (7, Some("call:1"), entry())] {
            let line = encoded(seq, call, &e);
            let op = decode(&line[..line.len() - 1]).expect("decodes");
            assert_eq!((op.seq, op.call.as_deref()), (seq, call));
            assert_eq!(op.entry, e);
        }
    }

    #[test]
    fn a_torn_line_or_an_unknown_status_decodes_to_nothing() {
        let line = encoded(3, None, &entry());
        assert!(decode(&line[..line.len() / 2]).is_none());
        let text = String::from_utf8(line).unwrap().replace("input_required", "paused");
        assert!(decode(text.trim_end().as_bytes()).is_none());
    }
}
