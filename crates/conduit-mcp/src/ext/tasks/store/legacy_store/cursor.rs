//! `tasks/list` cursors: a position in an owner's list, sealed with a key so
//! that a cursor the store did not issue, issued to another principal, or
//! altered in any byte is refused ([`StoreError::InvalidCursor`]).

use crate::task::StoreError;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

type HmacSha256 = Hmac<Sha256>;

/// Bytes of the tag at the end of a cursor (128 bits of HMAC-SHA256).
const TAG: usize = 16;

/// The format byte that starts every cursor's payload.
const FORMAT: u8 = 1;

/// The longest cursor accepted, in characters (a task id of up to 256 bytes).
const MAX_CURSOR: usize = 384;

/// Separates this use of the key from any other.
const DOMAIN: &[u8] = b"conduit-mcp legacy tasks/list cursor\0";

/// Where a page of an owner's tasks ends: tasks are listed in
/// `(created_at_ms, task_id)` order, and the next page starts after this.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListPosition {
    /// The creation time of the last task listed, epoch ms.
    pub created_at_ms: u64,
    /// Its id.
    pub task_id: String,
}

impl ListPosition {
    /// The position of the task created at `created_at_ms` with id `task_id`.
    pub fn new(created_at_ms: u64, task_id: impl Into<String>) -> Self {
        Self { created_at_ms, task_id: task_id.into() }
    }
}

/// The secret that seals a store's list cursors.
///
/// Every node that shares a store must use the same key, or a cursor issued
/// by one is refused by another: the SQL stores keep theirs in the database;
/// the memory store (one node) draws a random one.
#[derive(Clone)]
pub struct CursorKey([u8; 32]);

impl std::fmt::Debug for CursorKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorKey(..)")
    }
}

impl CursorKey {
    /// A key of these bytes.
    pub fn new(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// A fresh random key.
    pub fn random() -> Self {
        Self(rand::random())
    }

    /// A key derived from a secret of any length (SHA-256 of it).
    pub fn derive(secret: &[u8]) -> Self {
        Self(Sha256::digest(secret).into())
    }

    fn mac(&self, owner: Option<&str>, payload: &[u8]) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.0).expect("HMAC takes any key length");
        mac.update(DOMAIN);
        match owner {
            None => mac.update(&[0]),
            Some(o) => {
                mac.update(&[1]);
                mac.update(&(o.len() as u64).to_be_bytes());
                mac.update(o.as_bytes());
            }
        }
        mac.update(payload);
        mac
    }

    /// The cursor that resumes `owner`'s list after `at`.
    pub fn seal(&self, owner: Option<&str>, at: &ListPosition) -> String {
        let mut bytes = Vec::with_capacity(1 + 8 + at.task_id.len() + TAG);
        bytes.push(FORMAT);
        bytes.extend_from_slice(&at.created_at_ms.to_be_bytes());
        bytes.extend_from_slice(at.task_id.as_bytes());
        let tag = self.mac(owner, &bytes).finalize().into_bytes();
        bytes.extend_from_slice(&tag[..TAG]);
        B64.encode(bytes)
    }

    /// The position sealed in `cursor`, if this key sealed it for `owner`;
    /// [`StoreError::InvalidCursor`] otherwise.
    pub fn open(&self, cursor: &str, owner: Option<&str>) -> Result<ListPosition, StoreError> {
        if cursor.len() > MAX_CURSOR {
            return Err(StoreError::InvalidCursor);
        }
        let bytes = B64.decode(cursor).map_err(|_| StoreError::InvalidCursor)?;
        if bytes.len() < 1 + 8 + 1 + TAG || bytes[0] != FORMAT {
            return Err(StoreError::InvalidCursor);
        }
        let (payload, tag) = bytes.split_at(bytes.len() - TAG);
        self.mac(owner, payload).verify_truncated_left(tag).map_err(|_| StoreError::InvalidCursor)?;
        let mut created = [0u8; 8];
        created.copy_from_slice(&payload[1..9]);
        let task_id = std::str::from_utf8(&payload[9..]).map_err(|_| StoreError::InvalidCursor)?;
        Ok(ListPosition::new(u64::from_be_bytes(created), task_id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_opens_only_with_its_key_for_its_owner_and_unaltered() {
        let key = CursorKey::new([7; 32]);
        let at = ListPosition::new(1_800_000_000_123, "abcDEF_-123");
        let c = key.seal(Some("alice"), &at);
        assert_eq!(key.open(&c, Some("alice")), Ok(at.clone()));
        assert_eq!(key.open(&c, Some("bob")), Err(StoreError::InvalidCursor));
        assert_eq!(key.open(&c, None), Err(StoreError::InvalidCursor));
        assert_eq!(CursorKey::new([8; 32]).open(&c, Some("alice")), Err(StoreError::InvalidCursor));
        let anon = key.seal(None, &at);
        assert_eq!(key.open(&anon, None), Ok(at.clone()));
        assert_eq!(key.open(&anon, Some("")), Err(StoreError::InvalidCursor));
        // Every single-character change is caught.
        let alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        for i in 0..c.len() {
            for r in alphabet.chars().take(3) {
                let mut t: Vec<char> = c.chars().collect();
                if t[i] == r {
                    continue;
                }
                t[i] = r;
                let t: String = t.into_iter().collect();
                assert_eq!(key.open(&t, Some("alice")), Err(StoreError::InvalidCursor), "{t}");
            }
        }
        for bad in ["", "!!!", "AAAA", &"A".repeat(MAX_CURSOR + 1), &c[..c.len() - 1]] {
            assert_eq!(key.open(bad, Some("alice")), Err(StoreError::InvalidCursor));
        }
        assert_eq!(CursorKey::derive(b"s").open(&CursorKey::derive(b"s").seal(None, &at), None), Ok(at));
    }
}
