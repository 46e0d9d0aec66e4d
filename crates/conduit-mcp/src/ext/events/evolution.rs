//! Whether an event type offered again under the same name changed
//! additively (its live subscriptions go on) or not (they end with
//! `Unsupported`, `data: {feature, reason: "schema_changed"}`; events.md
//! §2.1). One rule, kept simple and on the safe side — whatever it does not
//! recognise as additive is breaking:
//!
//! - `inputSchema` is unchanged (every argument accepted before is accepted
//!   and read alike);
//! - `payloadSchema` is unchanged, or only adds properties: every member but
//!   `properties`, `$defs` and the top-level `description` is unchanged
//!   (`required` included, so an added property is optional), every property
//!   and definition it had is unchanged, and it did not forbid other
//!   properties (`additionalProperties: false`).
//!
//! The name, description and delivery modes may change too; a stream or
//! subscription whose mode is no longer offered ends with `Unsupported`
//! naming the mode (checked where it is followed, not here).

use crate::protocol::events::EventDescriptor;
use serde_json::{Map, Value};

/// How a type offered again compares with the one it replaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    /// Nothing a subscriber relies on changed.
    Additive,
    /// The schema named (`"inputSchema"` or `"payloadSchema"`) changed otherwise.
    Breaking(&'static str),
}

/// Members of a payload schema an additive change may add to (beside `description`).
const GROWING: [&str; 2] = ["properties", "$defs"];

/// How `new` compares with `old`.
pub(crate) fn compare(old: &EventDescriptor, new: &EventDescriptor) -> Change {
    if old.input_schema != new.input_schema {
        return Change::Breaking("inputSchema");
    }
    if old.payload_schema == new.payload_schema || only_adds(&old.payload_schema, &new.payload_schema) {
        Change::Additive
    } else {
        Change::Breaking("payloadSchema")
    }
}

/// Whether the object schema `new` is `old` with properties (and definitions) added.
fn only_adds(old: &Value, new: &Value) -> bool {
    let (Value::Object(old), Value::Object(new)) = (old, new) else { return false };
    let fixed = |m: &Map<String, Value>| {
        let mut m = m.clone();
        for k in GROWING.iter().chain(&["description"]) {
            m.remove(*k);
        }
        m
    };
    if fixed(old) != fixed(new) || old.get("additionalProperties") == Some(&Value::Bool(false)) {
        return false;
    }
    GROWING.iter().all(|k| keeps(old.get(*k), new.get(*k)))
}

/// Whether every member of `old` (an object, or absent) is in `new`, unchanged.
fn keeps(old: Option<&Value>, new: Option<&Value>) -> bool {
    match (old, new) {
        (None, None | Some(Value::Object(_))) => true,
        (Some(Value::Object(o)), Some(Value::Object(n))) => o.iter().all(|(k, v)| n.get(k) == Some(v)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn described(input: Value, payload: Value) -> EventDescriptor {
        EventDescriptor::new("t", "d", vec![], input, payload)
    }

    #[test]
    fn only_added_optional_properties_are_additive() {
        let input = json!({ "type": "object", "properties": { "severity": { "type": "string" } } });
        let payload = json!({ "type": "object", "description": "v1",
            "properties": { "id": { "type": "string" } }, "required": ["id"] });
        let old = described(input.clone(), payload.clone());
        assert_eq!(compare(&old, &old), Change::Additive, "unchanged");
        let mut grown = payload.clone();
        grown["properties"]["note"] = json!({ "type": "string" });
        grown["$defs"] = json!({ "Note": { "type": "string" } });
        grown["description"] = json!("v2");
        assert_eq!(compare(&old, &described(input.clone(), grown)), Change::Additive);

        let mut required = payload.clone();
        required["properties"]["note"] = json!({ "type": "string" });
        required["required"] = json!(["id", "note"]);
        let mut retyped = payload.clone();
        retyped["properties"]["id"] = json!({ "type": "integer" });
        let mut removed = payload.clone();
        removed["properties"] = json!({});
        let mut closed = payload.clone();
        closed["additionalProperties"] = json!(false);
        let mut closed_grown = closed.clone();
        closed_grown["properties"]["note"] = json!({ "type": "string" });
        for breaking in [required, retyped, removed, json!(true)] {
            assert_eq!(compare(&old, &described(input.clone(), breaking)), Change::Breaking("payloadSchema"));
        }
        let closed_old = described(input.clone(), closed);
        assert_eq!(compare(&closed_old, &described(input.clone(), closed_grown)), Change::Breaking("payloadSchema"));
        let mut narrower = input.clone();
        narrower["properties"]["severity"]["enum"] = json!(["P1"]);
        let mut wider = input;
        wider["properties"]["region"] = json!({ "type": "string" });
        for changed in [narrower, wider] {
            assert_eq!(compare(&old, &described(changed, payload.clone())), Change::Breaking("inputSchema"));
        }
    }
}
