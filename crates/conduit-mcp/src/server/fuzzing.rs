//! Entry points for the fuzz targets in `fuzz/` (compiled only under
//! `cargo fuzz`, which sets `--cfg fuzzing`): the sealed MRTR state, which
//! is otherwise reachable only through a whole request.

use super::seal::Sealer;
use serde_json::Value;

/// Seals `state` under `key` for this binding (see the MRTR round state).
pub fn seal(key: [u8; 32], state: &Value, principal: Option<&str>, method: &str, digest: &str, exp: u64) -> String {
    Sealer::new(key).seal(state, principal, method, digest, exp)
}

/// Opens a sealed state under `key` for this binding; `Err` with the reason's name.
pub fn open(
    key: [u8; 32],
    sealed: &str,
    principal: Option<&str>,
    method: &str,
    digest: &str,
    now_ms: u64,
) -> Result<Value, String> {
    Sealer::new(key).open(sealed, principal, method, digest, now_ms).map_err(|e| format!("{e:?}"))
}
