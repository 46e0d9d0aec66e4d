//! Task ids: 32 random bytes, 43 url-safe characters. The first character
//! also says which era's store a task was made in, so that a by-id worker call
//! on a paired handle ([`Tasks::drive_legacy`](crate::ext::tasks::Tasks::drive_legacy))
//! reads that store first: one read, not a miss in the other store (a database
//! round trip on PostgreSQL) before it.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;

/// A new task id for the extension's (2026-07-28) store, never starting with
/// `-` (so that no command line reads one as a flag).
pub fn new_task_id() -> String {
    mint(false)
}

/// A new task id for the legacy (2025-11-25) era's store.
pub(crate) fn new_legacy_task_id() -> String {
    mint(true)
}

/// Whether `id` was minted for the legacy era's store. Only an ordering hint:
/// ids minted before the mark existed may be either, so a by-id call still
/// tries the other store when the first has no such task.
pub(crate) fn is_legacy_task_id(id: &str) -> bool {
    matches!(id.as_bytes().first(), Some(b'Q'..=b'Z' | b'a'..=b'f'))
}

fn mint(legacy: bool) -> String {
    let mut bytes: [u8; 32] = rand::random();
    // The first character is the top six bits of the first byte. The top bit clear keeps
    // it within `A`..`f`, never `-` (62) or `_` (63); the next bit is the era: `A`..`P`
    // for the extension's store, `Q`..`f` for the legacy one. 254 random bits remain.
    bytes[0] = (bytes[0] & 0x3f) | if legacy { 0x40 } else { 0 };
    B64.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minted_ids_never_start_with_a_dash_and_name_their_era() {
        // One id in 64 would start with `-` by chance: 100 000 make a miss certain.
        for _ in 0..50_000 {
            let (modern, legacy) = (new_task_id(), new_legacy_task_id());
            for id in [&modern, &legacy] {
                assert_eq!(id.len(), 43);
                assert!(!id.starts_with('-'), "{id}");
            }
            assert!(!is_legacy_task_id(&modern), "{modern}");
            assert!(is_legacy_task_id(&legacy), "{legacy}");
        }
    }
}
