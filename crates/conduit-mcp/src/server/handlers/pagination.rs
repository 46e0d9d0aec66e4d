//! Paginated list results (`tools/list`, `prompts/list`, `resources/list`,
//! `resources/templates/list`) and the caching hints they carry.

use crate::protocol::RpcError;
use crate::protocol::discover::CacheHints;
use crate::protocol::version::Era;
use crate::server::Server;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use serde_json::{Map, Value, json};

/// Adds `ttlMs` and `cacheScope` on the era that has them (2026-07-28; a
/// 2025-11-25 result has no caching hints).
pub(super) fn add_cache(r: &mut Value, hints: CacheHints, era: Era) {
    if era != Era::Modern {
        return;
    }
    r["ttlMs"] = json!(hints.ttl_ms);
    r["cacheScope"] = json!(hints.cache_scope);
}

fn decode_cursor(c: &str) -> Option<usize> {
    let bytes = B64.decode(c).ok()?;
    std::str::from_utf8(&bytes).ok()?.strip_prefix("o:")?.parse().ok()
}

fn encode_cursor(offset: usize) -> String {
    B64.encode(format!("o:{offset}"))
}

/// One page of `items` under `key`, from `params.cursor`.
pub(super) fn page(
    server: &Server,
    era: Era,
    params: &Map<String, Value>,
    key: &str,
    items: impl ExactSizeIterator<Item = Value>,
) -> Result<Value, RpcError> {
    let len = items.len();
    let start = match params.get("cursor") {
        None => 0,
        Some(Value::String(c)) => decode_cursor(c).ok_or_else(|| RpcError::invalid_params("Invalid cursor"))?,
        Some(_) => return Err(RpcError::invalid_params("Invalid cursor")),
    };
    if start > len {
        return Err(RpcError::invalid_params("Invalid cursor"));
    }
    let end = (start + server.inner.options.page_size).min(len);
    let page: Vec<Value> = items.skip(start).take(end - start).collect();
    let mut r = json!({ key: page });
    if end < len {
        r["nextCursor"] = json!(encode_cursor(end));
    }
    add_cache(&mut r, server.inner.options.list_cache, era);
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip() {
        assert_eq!(decode_cursor(&encode_cursor(42)), Some(42));
        assert_eq!(decode_cursor("nope"), None);
    }
}
