//! Sealing MRTR `requestState`: HMAC-SHA256 over the state and what it is bound to.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use hmac::{Hmac, Mac};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

type HmacSha256 = Hmac<Sha256>;

/// Seals and opens request state with a server secret.
#[derive(Clone)]
pub(crate) struct Sealer {
    key: [u8; 32],
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealer(..)")
    }
}

/// Why a `requestState` was refused.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum OpenError {
    Malformed,
    BadSignature,
    WrongBinding,
    Expired,
}

/// The members of a request's params that change between MRTR rounds.
const ROUND_FIELDS: [&str; 3] = ["_meta", "inputResponses", "requestState"];

/// The params without the round fields, serialised in `Map` order (sorted), so
/// the text is canonical; written straight into the hash, nothing copied.
struct Salient<'a>(&'a Map<String, Value>);

impl serde::Serialize for Salient<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        for (k, v) in self.0.iter().filter(|(k, _)| !ROUND_FIELDS.contains(&k.as_str())) {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// Feeds written bytes to a SHA-256.
struct HashWriter(Sha256);

impl std::io::Write for HashWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A digest of the params that identify a request, leaving out `_meta`,
/// `inputResponses` and `requestState` (they change between rounds).
pub(crate) fn params_digest(params: &Map<String, Value>) -> String {
    let mut w = HashWriter(Sha256::new());
    // Writing to a hash cannot fail; a serialisation error would mean a non-string key, impossible in a `Map`.
    let _ = serde_json::to_writer(&mut w, &Salient(params));
    hex(&w.0.finalize())
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    s
}

impl Sealer {
    pub(crate) fn new(key: [u8; 32]) -> Self {
        Self { key }
    }

    pub(crate) fn random() -> Self {
        Self::new(rand::random())
    }

    fn mac(&self, payload: &[u8]) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.key).expect("HMAC takes any key length");
        mac.update(payload);
        mac
    }

    pub(crate) fn seal(
        &self,
        state: &Value,
        principal: Option<&str>,
        method: &str,
        digest: &str,
        expires_ms: u64,
    ) -> String {
        let payload = json!({ "s": state, "p": principal, "m": method, "d": digest, "e": expires_ms }).to_string();
        let tag = self.mac(payload.as_bytes()).finalize().into_bytes();
        format!("{}.{}", B64.encode(payload.as_bytes()), B64.encode(tag))
    }

    pub(crate) fn open(
        &self,
        sealed: &str,
        principal: Option<&str>,
        method: &str,
        digest: &str,
        now_ms: u64,
    ) -> Result<Value, OpenError> {
        let (p, t) = sealed.split_once('.').ok_or(OpenError::Malformed)?;
        let payload = B64.decode(p).map_err(|_| OpenError::Malformed)?;
        let tag = B64.decode(t).map_err(|_| OpenError::Malformed)?;
        self.mac(&payload).verify_slice(&tag).map_err(|_| OpenError::BadSignature)?;
        let v: Value = serde_json::from_slice(&payload).map_err(|_| OpenError::Malformed)?;
        if v.get("p").and_then(Value::as_str) != principal
            || v.get("m").and_then(Value::as_str) != Some(method)
            || v.get("d").and_then(Value::as_str) != Some(digest)
        {
            return Err(OpenError::WrongBinding);
        }
        let exp = v.get("e").and_then(Value::as_u64).ok_or(OpenError::Malformed)?;
        if now_ms > exp {
            return Err(OpenError::Expired);
        }
        Ok(v.get("s").cloned().unwrap_or(Value::Null))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_tampering() {
        let s = Sealer::random();
        let sealed = s.seal(&json!({"n": 1}), Some("alice"), "tools/call", "d1", 100);
        assert_eq!(s.open(&sealed, Some("alice"), "tools/call", "d1", 50), Ok(json!({"n": 1})));
        assert_eq!(s.open(&sealed, Some("bob"), "tools/call", "d1", 50), Err(OpenError::WrongBinding));
        assert_eq!(s.open(&sealed, Some("alice"), "prompts/get", "d1", 50), Err(OpenError::WrongBinding));
        assert_eq!(s.open(&sealed, Some("alice"), "tools/call", "d2", 50), Err(OpenError::WrongBinding));
        assert_eq!(s.open(&sealed, Some("alice"), "tools/call", "d1", 101), Err(OpenError::Expired));
        let mut bad = sealed.clone();
        bad.insert(3, 'x');
        assert!(s.open(&bad, Some("alice"), "tools/call", "d1", 50).is_err());
        assert_eq!(s.open("nope", None, "m", "d", 0), Err(OpenError::Malformed));
    }

    #[test]
    fn digest_ignores_round_fields() {
        let a = json!({"name": "t", "arguments": {"x": 1}, "_meta": {"a": 1}}).as_object().unwrap().clone();
        let b = json!({"name": "t", "arguments": {"x": 1}, "requestState": "z", "inputResponses": {}})
            .as_object()
            .unwrap()
            .clone();
        assert_eq!(params_digest(&a), params_digest(&b));
        let mut salient = a.clone();
        salient.remove("_meta");
        let text = Value::Object(salient).to_string();
        assert_eq!(params_digest(&a), hex(&Sha256::digest(text.as_bytes())));
    }
}
