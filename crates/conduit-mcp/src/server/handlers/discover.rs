//! `server/discover`: versions, capabilities, instructions.

use super::pagination::add_cache;
use crate::protocol::version::Era;
use crate::server::Server;
use serde_json::{Map, Value, json};

/// Merges `add` into `into`, object values one level deep.
fn merge(into: &mut Map<String, Value>, add: &Map<String, Value>) {
    for (k, v) in add {
        match (into.get_mut(k), v) {
            (Some(Value::Object(have)), Value::Object(more)) => {
                have.extend(more.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            _ => {
                into.insert(k.clone(), v.clone());
            }
        }
    }
}

/// The capabilities this server advertises in `era`.
pub(crate) fn capabilities(server: &Server, era: Era) -> Map<String, Value> {
    let i = &server.inner;
    let mut caps = Map::new();
    if !i.tools.is_empty() {
        caps.insert("tools".into(), json!({ "listChanged": true }));
    }
    if !i.prompts.is_empty() {
        caps.insert("prompts".into(), json!({ "listChanged": true }));
    }
    if !i.resources.is_empty() || !i.templates.is_empty() {
        caps.insert("resources".into(), json!({ "subscribe": true, "listChanged": true }));
    }
    if i.completion.is_some() {
        caps.insert("completions".into(), json!({}));
    }
    merge(&mut caps, &server.era_table(era).capabilities);
    caps
}

pub(super) fn discover(server: &Server, era: Era) -> Value {
    let mut r = json!({
        "supportedVersions": server.supported_versions(),
        "capabilities": capabilities(server, era),
    });
    add_cache(&mut r, server.inner.options.discover_cache, era);
    if let Some(text) = &server.inner.instructions {
        r["instructions"] = json!(text);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::merge;
    use serde_json::json;

    #[test]
    fn merges_one_level_deep() {
        let mut a = json!({"extensions": {"a": {}}, "tools": {}}).as_object().unwrap().clone();
        merge(&mut a, json!({"extensions": {"b": {"x": 1}}, "tasks": {}}).as_object().unwrap());
        assert_eq!(
            serde_json::Value::Object(a),
            json!({"extensions": {"a": {}, "b": {"x": 1}}, "tools": {}, "tasks": {}})
        );
    }
}
