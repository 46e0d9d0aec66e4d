//! What `PgNotifier` puts on its channel, and how it reads it back.
//!
//! Task changes that queue up together travel in one `NOTIFY`: a payload
//! `{"ch":[["<task id>",<version>],…]}` holds as many as fit under
//! [`MAX_PAYLOAD`] bytes, so PostgreSQL queues, and every listening node
//! receives and parses, one notification per batch rather than one per
//! change. A forwarded legacy response (`{"fwd":…}`) travels alone, as it is
//! built. The reader also accepts the single-change form `{"id":…,"v":…}`
//! that earlier releases published, so nodes of both releases can share a
//! channel while a deployment is upgraded.

use super::MAX_PAYLOAD;
use serde::Deserialize;
use serde_json::Value;

/// One item waiting to be published.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Outgoing {
    /// Task `id` reached `version`.
    Change {
        /// The task id.
        id: String,
        /// Its version after the change.
        version: u64,
    },
    /// A payload published as it is (a forwarded response).
    Raw(String),
}

const OPEN: &str = r#"{"ch":["#;
const CLOSE: &str = "]}";

/// The payloads for `items`, in their order: runs of changes packed into as
/// few payloads as fit under [`MAX_PAYLOAD`] bytes, each raw payload alone.
pub(super) fn pack(items: impl IntoIterator<Item = Outgoing>) -> Vec<String> {
    let mut out = Vec::new();
    let mut open: Option<String> = None;
    for item in items {
        match item {
            Outgoing::Change { id, version } => {
                // Task ids are url-safe text; escaping keeps any id valid JSON.
                let entry = format!("[{},{version}]", Value::String(id));
                if let Some(buf) = &open
                    && buf.len() + 1 + entry.len() + CLOSE.len() > MAX_PAYLOAD
                {
                    out.extend(open.take().map(close));
                }
                match &mut open {
                    Some(buf) => {
                        buf.push(',');
                        buf.push_str(&entry);
                    }
                    None => open = Some(format!("{OPEN}{entry}")),
                }
            }
            Outgoing::Raw(p) => {
                out.extend(open.take().map(close));
                out.push(p);
            }
        }
    }
    out.extend(open.map(close));
    out
}

fn close(mut buf: String) -> String {
    buf.push_str(CLOSE);
    buf
}

/// A payload read from the channel.
#[derive(Debug, Default, PartialEq, Deserialize)]
pub(super) struct Incoming {
    /// Changes, as `(task id, version)` pairs.
    #[serde(default)]
    ch: Vec<(String, u64)>,
    /// The single-change form: the task id…
    id: Option<String>,
    /// …and its version.
    v: Option<u64>,
    /// A forwarded legacy response.
    pub(super) fwd: Option<Value>,
}

impl Incoming {
    /// Reads a payload; `None` when it is not one of ours.
    pub(super) fn parse(payload: &str) -> Option<Self> {
        serde_json::from_str(payload).ok()
    }

    /// The task changes it carries, in order.
    pub(super) fn changes(self) -> impl Iterator<Item = (String, u64)> {
        let single = match (self.id, self.v) {
            (Some(id), Some(v)) => Some((id, v)),
            _ => None,
        };
        self.ch.into_iter().chain(single)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(i: usize) -> Outgoing {
        Outgoing::Change { id: format!("{i:0>43}"), version: i as u64 }
    }

    #[test]
    fn changes_pack_under_the_limit_and_read_back_in_order() {
        let items: Vec<Outgoing> = (0..1_000).map(change).collect();
        let payloads = pack(items);
        assert!(payloads.len() > 1 && payloads.len() < 20, "{} payloads", payloads.len());
        let mut seen = Vec::new();
        for p in &payloads {
            assert!(p.len() <= MAX_PAYLOAD, "{} bytes", p.len());
            seen.extend(Incoming::parse(p).expect("a payload of ours").changes());
        }
        let want: Vec<(String, u64)> = (0..1_000).map(|i| (format!("{i:0>43}"), i as u64)).collect();
        assert_eq!(seen, want);
    }

    #[test]
    fn raw_payloads_travel_alone_and_keep_their_place() {
        let fwd = r#"{"fwd":{"x":1}}"#.to_owned();
        let payloads = pack(vec![change(1), Outgoing::Raw(fwd.clone()), change(2), change(3)]);
        assert_eq!(payloads.len(), 3);
        assert_eq!(payloads[1], fwd);
        assert_eq!(Incoming::parse(&payloads[2]).unwrap().changes().count(), 2);
        assert!(Incoming::parse(&payloads[1]).unwrap().fwd.is_some());
        assert!(pack(Vec::new()).is_empty());
    }

    #[test]
    fn the_single_change_form_of_earlier_releases_is_read() {
        let got: Vec<_> = Incoming::parse(r#"{"id":"abc","v":7}"#).unwrap().changes().collect();
        assert_eq!(got, vec![("abc".to_owned(), 7)]);
        let odd = Outgoing::Change { id: "q\"\\".into(), version: 1 };
        let got: Vec<_> = Incoming::parse(&pack(vec![odd])[0]).unwrap().changes().collect();
        assert_eq!(got, vec![("q\"\\".to_owned(), 1)]);
        assert!(Incoming::parse("not json").is_none());
        assert_eq!(Incoming::parse(r#"{"other":1}"#).unwrap().changes().count(), 0);
    }
}
