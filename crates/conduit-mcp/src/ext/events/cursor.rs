//! Event cursors: a position in an event type's log, sealed with a key and
//! bound to the principal and the event type, so that a cursor altered in
//! any byte, issued to another principal or for another type, or never
//! issued at all is refused (`-32602`).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// Bytes of the tag at the end of a cursor (128 bits of HMAC-SHA256).
const TAG: usize = 16;

/// The format byte that starts every cursor's payload.
const FORMAT: u8 = 1;

/// Bytes of a cursor before encoding: the format, the epoch, the position, the tag.
const SEALED: usize = 1 + 16 + TAG;

/// Characters of every cursor this seal makes (base64url of [`SEALED`] bytes, unpadded).
pub(crate) const CURSOR_CHARS: usize = (SEALED * 4).div_ceil(3);

/// The longest cursor accepted, in characters.
const MAX_CURSOR: usize = 128;

/// Separates this use of the key from any other.
const DOMAIN: &[u8] = b"conduit-mcp events cursor\0";

/// A position in one event type's log: the log's epoch (which log) and the
/// last position delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Position {
    pub(crate) epoch: u64,
    pub(crate) seq: u64,
}

/// Why a cursor was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BadCursor;

/// Seals and opens cursors.
#[derive(Clone)]
pub(crate) struct CursorSeal {
    key: [u8; 32],
}

impl std::fmt::Debug for CursorSeal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorSeal(..)")
    }
}

fn framed(mac: &mut HmacSha256, bytes: &[u8]) {
    mac.update(&(bytes.len() as u64).to_be_bytes());
    mac.update(bytes);
}

impl CursorSeal {
    pub(crate) fn new(key: [u8; 32]) -> Self {
        Self { key }
    }

    fn mac(&self, owner: Option<&str>, name: &str, payload: &[u8]) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.key).expect("HMAC takes any key length");
        mac.update(DOMAIN);
        match owner {
            None => mac.update(&[0]),
            Some(o) => {
                mac.update(&[1]);
                framed(&mut mac, o.as_bytes());
            }
        }
        framed(&mut mac, name.as_bytes());
        mac.update(payload);
        mac
    }

    /// The cursor of `at` in event type `name`, for `owner`.
    pub(crate) fn seal(&self, owner: Option<&str>, name: &str, at: Position) -> String {
        let mut bytes = Vec::with_capacity(SEALED);
        bytes.push(FORMAT);
        bytes.extend_from_slice(&at.epoch.to_be_bytes());
        bytes.extend_from_slice(&at.seq.to_be_bytes());
        let tag = self.mac(owner, name, &bytes).finalize().into_bytes();
        bytes.extend_from_slice(&tag[..TAG]);
        B64.encode(bytes)
    }

    /// The position in `cursor`, if this seal made it for `owner` and `name`.
    pub(crate) fn open(&self, cursor: &str, owner: Option<&str>, name: &str) -> Result<Position, BadCursor> {
        if cursor.len() > MAX_CURSOR {
            return Err(BadCursor);
        }
        let bytes = B64.decode(cursor).map_err(|_| BadCursor)?;
        if bytes.len() != SEALED || bytes[0] != FORMAT {
            return Err(BadCursor);
        }
        let (payload, tag) = bytes.split_at(1 + 16);
        self.mac(owner, name, payload).verify_truncated_left(tag).map_err(|_| BadCursor)?;
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&payload[i..i + 8]);
            u64::from_be_bytes(w)
        };
        Ok(Position { epoch: word(1), seq: word(9) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_opens_only_for_its_owner_and_type_unaltered() {
        let seal = CursorSeal::new([3; 32]);
        let at = Position { epoch: 7, seq: 42 };
        let c = seal.seal(Some("alice"), "task.status_changed", at);
        assert_eq!(seal.open(&c, Some("alice"), "task.status_changed"), Ok(at));
        assert_eq!(c.len(), CURSOR_CHARS, "every cursor is as long: the webhook body bound counts on it");
        assert_eq!(seal.open(&c, Some("bob"), "task.status_changed"), Err(BadCursor));
        assert_eq!(seal.open(&c, None, "task.status_changed"), Err(BadCursor));
        assert_eq!(seal.open(&c, Some("alice"), "other"), Err(BadCursor));
        assert_eq!(CursorSeal::new([4; 32]).open(&c, Some("alice"), "task.status_changed"), Err(BadCursor));
        for i in 0..c.len() {
            let mut t: Vec<char> = c.chars().collect();
            t[i] = if t[i] == 'A' { 'B' } else { 'A' };
            let t: String = t.into_iter().collect();
            assert_eq!(seal.open(&t, Some("alice"), "task.status_changed"), Err(BadCursor), "{t}");
        }
        for bad in ["", "!!", &"A".repeat(MAX_CURSOR + 1)] {
            assert_eq!(seal.open(bad, Some("alice"), "task.status_changed"), Err(BadCursor));
        }
    }
}
