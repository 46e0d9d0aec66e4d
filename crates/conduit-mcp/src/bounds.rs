//! How much of a client's text the server keeps: the bounds shared by what
//! outlives a request (a task, a session, a replay buffer).
//!
//! A message a client can make the server repeat (a status message, a
//! progress message built from its arguments) is cut at
//! [`MAX_STATUS_MESSAGE_BYTES`]; a session's `clientInfo` keeps its `name`,
//! `title` and `version`, each cut at [`MAX_CLIENT_INFO_FIELD_BYTES`].

use serde_json::{Map, Value};

/// The longest status or progress message kept or sent, in bytes (longer
/// ones are cut at a character boundary and end with `…`).
pub const MAX_STATUS_MESSAGE_BYTES: usize = 1024;

/// The longest `clientInfo` field (`name`, `title`, `version`) a session keeps, in bytes.
pub const MAX_CLIENT_INFO_FIELD_BYTES: usize = 256;

/// The most bytes of `clientInfo` a session keeps, as compact JSON.
pub const MAX_CLIENT_INFO_BYTES: usize = 3 * MAX_CLIENT_INFO_FIELD_BYTES + 64;

/// `text` cut to at most `max` bytes at a character boundary, ending with `…` when cut.
pub fn cut_text(text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    const ELLIPSIS: &str = "…";
    let mut end = max.saturating_sub(ELLIPSIS.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut cut = text;
    cut.truncate(end);
    cut.push_str(ELLIPSIS);
    cut
}

/// `message` cut to at most [`MAX_STATUS_MESSAGE_BYTES`] bytes.
pub fn cut_message(message: String) -> String {
    cut_text(message, MAX_STATUS_MESSAGE_BYTES)
}

/// What a session keeps of the client's `clientInfo`, as compact JSON text:
/// its string `name`, `title` and `version`, each cut at
/// [`MAX_CLIENT_INFO_FIELD_BYTES`] (`null` when it is not an object).
pub fn client_info(info: &Value) -> String {
    let Some(whole) = info.as_object() else { return "null".to_owned() };
    let mut kept = Map::new();
    for key in ["name", "title", "version"] {
        if let Some(v) = whole.get(key).and_then(Value::as_str) {
            let v = cut_text(v.to_owned(), MAX_CLIENT_INFO_FIELD_BYTES);
            kept.insert(key.to_owned(), Value::String(v));
        }
    }
    Value::Object(kept).to_string()
}

/// The size of `v` as compact JSON, counted without building the string.
pub fn json_len<T: serde::Serialize + ?Sized>(v: &T) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Count(0);
    let _ = serde_json::to_writer(&mut c, v);
    c.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_are_cut_at_a_character_boundary() {
        assert_eq!(cut_message("short".into()), "short");
        let long = "é".repeat(MAX_STATUS_MESSAGE_BYTES);
        let cut = cut_message(long);
        assert!(cut.len() <= MAX_STATUS_MESSAGE_BYTES && cut.ends_with('…'), "{}", cut.len());
    }

    #[test]
    fn json_len_is_the_serialized_length() {
        let v = json!({ "a": [1, "two", null], "b": "é" });
        assert_eq!(json_len(&v), serde_json::to_string(&v).map(|s| s.len()).unwrap_or(0));
    }

    #[test]
    fn client_info_keeps_the_identity_within_its_bound() {
        let pad = "x".repeat(100_000);
        let whole = json!({ "name": "probe", "version": pad, "title": "é".repeat(1000), "icons": [pad], "extra": 1 });
        let kept = client_info(&whole);
        assert!(kept.len() <= MAX_CLIENT_INFO_BYTES, "{}", kept.len());
        let v: Value = serde_json::from_str(&kept).expect("JSON");
        assert_eq!(v["name"], "probe");
        assert!(v.get("icons").is_none() && v.get("extra").is_none());
        assert_eq!(client_info(&json!("not an object")), "null");
    }
}
