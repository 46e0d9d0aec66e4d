//! The stamps every result of a modern request carries — `resultType:
//! "complete"` unless its producer set one, and `_meta[serverInfo]` unless
//! turned off — in two forms that give the same JSON: inserted into the
//! result's tree ([`stamp`]), or written while the result is encoded
//! ([`Stamped`]), which copies nothing (the HTTP lane's plain JSON answers).

#[cfg(feature = "http")]
use crate::protocol::jsonrpc::RequestId;
use crate::protocol::meta::SERVER_INFO_KEY;
#[cfg(feature = "http")]
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

/// The key a result states its type under.
const RESULT_TYPE: &str = "resultType";
/// What a result that states none is.
const COMPLETE: &str = "complete";
/// Where a result's metadata lives.
const META: &str = "_meta";

/// Stamps `result` in place of its tree: the form every caller of
/// [`Server::handle_request`](super::Server::handle_request) receives.
pub(crate) fn stamp(mut result: Value, info: Option<&Value>) -> Value {
    if let Value::Object(m) = &mut result {
        // `contains_key` before `insert`: `entry` would allocate the key even when it is present.
        if !m.contains_key(RESULT_TYPE) {
            m.insert(RESULT_TYPE.into(), COMPLETE.into());
        }
        if let Some(info) = info {
            match m.get_mut(META) {
                Some(Value::Object(meta)) => {
                    meta.insert(SERVER_INFO_KEY.into(), info.clone());
                }
                Some(_) => {}
                None => {
                    let mut meta = Map::new();
                    meta.insert(SERVER_INFO_KEY.into(), info.clone());
                    m.insert(META.into(), Value::Object(meta));
                }
            }
        }
    }
    result
}

#[cfg(feature = "http")]
/// A result encoded as [`stamp`] would leave it, without changing or copying it:
/// the stamps are written at their place among the members (a map's members
/// are written in key order).
pub(crate) struct Stamped<'a> {
    /// The result as its handler returned it.
    pub(crate) result: &'a Value,
    /// The serverInfo object, unless the server does not stamp it.
    pub(crate) info: Option<&'a Value>,
}

#[cfg(feature = "http")]
/// The JSON-RPC response carrying a [`Stamped`] result: the encoding of
/// [`Message::Result`](crate::protocol::jsonrpc::Message::Result), member for member.
pub(crate) struct StampedResponse<'a> {
    /// The request id (echoed).
    pub(crate) id: &'a RequestId,
    /// The result.
    pub(crate) result: Stamped<'a>,
}

#[cfg(feature = "http")]
impl Serialize for StampedResponse<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("id", self.id)?;
        m.serialize_entry("jsonrpc", "2.0")?;
        m.serialize_entry("result", &self.result)?;
        m.end()
    }
}

#[cfg(feature = "http")]
/// The value of a member a result lacks.
enum Added<'a> {
    /// `"complete"`.
    Complete,
    /// `{serverInfo: …}`: a `_meta` the result lacks.
    NewMeta(&'a Value),
}

#[cfg(feature = "http")]
impl Serialize for Added<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Added::Complete => s.serialize_str(COMPLETE),
            Added::NewMeta(info) => {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry(SERVER_INFO_KEY, info)?;
                m.end()
            }
        }
    }
}

#[cfg(feature = "http")]
/// A `_meta` object with serverInfo set (added, or in place of the one it has).
struct MetaWithInfo<'a> {
    meta: &'a Map<String, Value>,
    info: &'a Value,
}

#[cfg(feature = "http")]
impl Serialize for MetaWithInfo<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let has = self.meta.contains_key(SERVER_INFO_KEY);
        let mut m = s.serialize_map(Some(self.meta.len() + usize::from(!has)))?;
        let mut pending = !has;
        for (k, v) in self.meta {
            if pending && SERVER_INFO_KEY < k.as_str() {
                m.serialize_entry(SERVER_INFO_KEY, self.info)?;
                pending = false;
            }
            if k == SERVER_INFO_KEY {
                m.serialize_entry(k, self.info)?;
            } else {
                m.serialize_entry(k, v)?;
            }
        }
        if pending {
            m.serialize_entry(SERVER_INFO_KEY, self.info)?;
        }
        m.end()
    }
}

#[cfg(feature = "http")]
impl Serialize for Stamped<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Value::Object(members) = self.result else {
            return self.result.serialize(s);
        };
        // What the result lacks, in key order ("_meta" sorts before "resultType").
        let meta = self.info.filter(|_| !members.contains_key(META)).map(|info| (META, Added::NewMeta(info)));
        let result_type = (!members.contains_key(RESULT_TYPE)).then_some((RESULT_TYPE, Added::Complete));
        let extra = [meta, result_type];
        let added = extra.iter().flatten().count();
        let mut m = s.serialize_map(Some(members.len() + added))?;
        let mut extra = extra.into_iter().flatten().peekable();
        for (k, v) in members {
            while let Some((key, value)) = extra.next_if(|(key, _)| *key < k.as_str()) {
                m.serialize_entry(key, &value)?;
            }
            match (k.as_str(), v, self.info) {
                (META, Value::Object(meta), Some(info)) => m.serialize_entry(k, &MetaWithInfo { meta, info })?,
                _ => m.serialize_entry(k, v)?,
            }
        }
        for (key, value) in extra {
            m.serialize_entry(key, &value)?;
        }
        m.end()
    }
}

#[cfg(all(test, feature = "http"))]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn both_forms_write_the_same_text() {
        let info = json!({"name": "srv", "version": "1.0.0"});
        let results = [
            json!({}),
            json!({"content": [{"type": "text", "text": "hi"}]}),
            json!({"content": [], "isError": true}),
            json!({"resultType": "task", "taskId": "t"}),
            json!({"resultType": "input_required", "_meta": {"a": 1}}),
            json!({"_meta": {"io.modelcontextprotocol/serverInfo": {"old": true}, "z": 2, "a": 1}}),
            json!({"_meta": {"io.modelcontextprotocol/zzz": 1, "io.modelcontextprotocol/aaa": 2}}),
            json!({"_meta": "not an object", "x": 1}),
            json!({"$first": 1, "A": 2, "_": 3, "_meta2": 4, "a": 5, "resultTypf": 6, "zzz": 7, "é": 8}),
            json!({"_meta": null}),
            json!([1, 2]),
            json!("text"),
            json!(null),
        ];
        for r in &results {
            for info in [Some(&info), None] {
                let tree = serde_json::to_string(&stamp(r.clone(), info)).expect("text");
                let written = serde_json::to_string(&Stamped { result: r, info }).expect("text");
                assert_eq!(written, tree, "{r}");
            }
        }
        let id = RequestId::Number(7);
        let response = StampedResponse { id: &id, result: Stamped { result: &results[1], info: Some(&info) } };
        let message = crate::protocol::jsonrpc::Message::Result {
            id: id.clone(),
            result: stamp(results[1].clone(), Some(&info)),
        };
        assert_eq!(serde_json::to_vec(&response).expect("bytes"), message.to_json_bytes());
    }
}
