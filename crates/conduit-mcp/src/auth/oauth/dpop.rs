//! DPoP proofs on the resource server (RFC 9449 §4.3, §7, §9): a
//! [`DpopVerifier`] checks the proof a request carries against the request
//! as the client sent it (`htm`, and `htu` against the server's configured
//! public URL, never the URL a proxy forwarded to), the access token it
//! presents (`ath`), the clock (`iat` within a window), the server's nonce
//! when it issues them ([`DpopVerifier::check`]), and then every `jti` once
//! per window ([`DpopVerifier::admit`], through a [`DpopReplayStore`]: this
//! process's memory, bounded in bytes, by default; a shared database's across
//! nodes). The resource server admits a proof's `jti` only once the token it
//! came with is valid and bound to the proof's key, so only a holder of such a
//! token can make the store remember anything. A check yields the proof key's
//! thumbprint, which a bound token's `cnf.jkt` must equal.
//!
//! Its refusals name the `DPoP` challenge's error: `invalid_dpop_proof`, or
//! `use_dpop_nonce` with the nonce to send back in `DPoP-Nonce`.

use super::dpop_replay::{DpopReplayStore, MemoryDpopReplay, ReplayStoreError, ReplayVerdict};
use super::proof_key::{ProofKey, ProofKeys};
use crate::protocol::oauth::dpop::{INVALID_DPOP_PROOF, PROOF_TYP, USE_DPOP_NONCE};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use jsonwebtoken::Algorithm;
use jsonwebtoken::jwk::Jwk;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::time::Duration;

/// The proof algorithms accepted by default: asymmetric only.
pub const DEFAULT_DPOP_ALGS: &[&str] = &["ES256", "ES384", "RS256", "PS256", "EdDSA"];

/// The largest proof read; a larger one is refused unread.
const MAX_PROOF: usize = 8 * 1024;
/// The longest `jti` taken.
const MAX_JTI: usize = 256;
/// JWK members that only a private key has.
const PRIVATE_MEMBERS: &[&str] = &["d", "p", "q", "dp", "dq", "qi", "oth", "k"];

/// How a [`DpopVerifier`] judges proofs.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct DpopConfig {
    /// The algorithms a proof may be signed with (default [`DEFAULT_DPOP_ALGS`]); never `none` or HMAC.
    pub algs: Vec<String>,
    /// How far a proof's `iat` may be from now, either way (default 60 s).
    pub iat_window: Duration,
    /// The memory the `jti`s seen within the window may take (default 16 MiB), when they
    /// are remembered in this process (no [`DpopReplayStore`] given).
    pub replay_bytes: usize,
    /// When set, proofs must carry a nonce this server issued (HMAC of the time, so
    /// every node with the same secret issues and accepts the same ones).
    pub nonce_secret: Option<[u8; 32]>,
    /// How long an issued nonce stays good (default 5 min; the previous one is taken too).
    pub nonce_lifetime: Duration,
}

impl Default for DpopConfig {
    fn default() -> Self {
        Self {
            algs: DEFAULT_DPOP_ALGS.iter().map(|a| (*a).to_owned()).collect(),
            iat_window: Duration::from_secs(60),
            replay_bytes: 16 * 1024 * 1024,
            nonce_secret: None,
            nonce_lifetime: Duration::from_secs(300),
        }
    }
}

impl DpopConfig {
    /// Takes proofs signed with these algorithms only.
    pub fn algs(mut self, algs: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.algs = algs.into_iter().map(Into::into).collect();
        self
    }

    /// Takes proofs whose `iat` is at most this far from now.
    pub fn iat_window(mut self, window: Duration) -> Self {
        self.iat_window = window;
        self
    }

    /// Remembers the `jti`s of the window in at most this many bytes.
    pub fn replay_bytes(mut self, bytes: usize) -> Self {
        self.replay_bytes = bytes;
        self
    }

    /// Issues nonces (HMAC of the time with `secret`, shared by every node) and requires them.
    pub fn nonce_secret(mut self, secret: [u8; 32]) -> Self {
        self.nonce_secret = Some(secret);
        self
    }
}

/// A refused proof: why, and the challenge's error code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{error}: {reason}")]
#[non_exhaustive]
pub struct DpopError {
    /// `invalid_dpop_proof` or `use_dpop_nonce`.
    pub error: &'static str,
    /// Why, in words (no token or key in it).
    pub reason: String,
    /// The nonce to send in `DPoP-Nonce` (with `use_dpop_nonce`).
    pub nonce: Option<String>,
}

fn invalid(reason: impl Into<String>) -> DpopError {
    DpopError { error: INVALID_DPOP_PROOF, reason: reason.into(), nonce: None }
}

/// A proof that passed: its key's thumbprint (RFC 7638, SHA-256, base64url).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct DpopProof {
    /// The thumbprint a bound token's `cnf.jkt` must equal.
    pub jkt: String,
    /// The proof's `jti`, to be taken once.
    jti: String,
    /// When its window closes: it is remembered until then.
    until_ms: u64,
    /// The SHA-256 of its header, and the key the header names (kept once the proof is taken).
    header: [u8; 32],
    key: Arc<ProofKey>,
}

/// The request a proof must describe.
#[derive(Debug, Clone, Copy)]
pub struct ProofRequest<'a> {
    /// The HTTP method, as sent.
    pub method: &'a str,
    /// The URL the client sent the request to: the server's public URL.
    pub url: &'a str,
    /// The access token presented with it, when there is one (`ath`).
    pub access_token: Option<&'a str>,
    /// Now, in milliseconds since the epoch.
    pub now_ms: u64,
}

/// Checks DPoP proofs ([`check`](Self::check)) and takes each once ([`admit`](Self::admit)).
#[derive(Debug)]
pub struct DpopVerifier {
    cfg: DpopConfig,
    algs: Vec<Algorithm>,
    replay: Arc<dyn DpopReplayStore>,
    /// The keys of headers of proofs taken lately, parsed.
    keys: ProofKeys,
}

impl DpopVerifier {
    /// A verifier with `cfg`; an algorithm that is not asymmetric is an error.
    pub fn new(cfg: DpopConfig) -> Result<Self, String> {
        let mut algs = Vec::new();
        for a in &cfg.algs {
            let alg: Algorithm = a.parse().map_err(|_| format!("{a:?} is not a JWS algorithm"))?;
            if matches!(alg, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512) {
                return Err(format!("{a} is symmetric: a DPoP proof is signed with a private key"));
            }
            algs.push(alg);
        }
        if algs.is_empty() {
            return Err("no DPoP algorithm".into());
        }
        Ok(Self { replay: Arc::new(MemoryDpopReplay::new(cfg.replay_bytes)), algs, cfg, keys: ProofKeys::default() })
    }

    /// Remembers the `jti`s seen in `store` instead of this process's memory (every
    /// node given one store takes a proof once between them).
    #[must_use]
    pub fn replay_store(mut self, store: Arc<dyn DpopReplayStore>) -> Self {
        self.replay = store;
        self
    }

    /// The algorithms, space-separated: the `algs` of a `DPoP` challenge.
    pub fn algs(&self) -> String {
        self.cfg.algs.join(" ")
    }

    /// The nonce to issue now, when this server issues them.
    pub fn nonce(&self, now_ms: u64) -> Option<String> {
        let secret = self.cfg.nonce_secret?;
        Some(self.nonce_at(&secret, self.bucket(now_ms)))
    }

    fn bucket(&self, now_ms: u64) -> u64 {
        now_ms / (self.cfg.nonce_lifetime.as_millis().max(1) as u64)
    }

    fn nonce_at(&self, secret: &[u8; 32], bucket: u64) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes any key length");
        mac.update(b"conduit-mcp dpop nonce");
        mac.update(&bucket.to_be_bytes());
        URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
    }

    /// Checks `proof` (the one `DPoP` header's value) for `req`: everything but whether
    /// its `jti` was seen before, which [`admit`](Self::admit) decides (and remembers).
    pub fn check(&self, proof: &str, req: &ProofRequest<'_>) -> Result<DpopProof, DpopError> {
        if proof.len() > MAX_PROOF {
            return Err(invalid("the proof is too large"));
        }
        let mut parts = proof.split('.');
        let (Some(head), Some(body), Some(sig), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
            return Err(invalid("the proof is not a JWS"));
        };
        let header: [u8; 32] = Sha256::digest(head.as_bytes()).into();
        let key = match self.keys.get(&header, req.now_ms) {
            Some(k) => k,
            None => Arc::new(self.header_key(head)?),
        };
        let sig = URL_SAFE_NO_PAD.decode(sig).map_err(|_| invalid("the signature is not base64url"))?;
        let signed = &proof.as_bytes()[..head.len() + 1 + body.len()];
        if !key.verifies(signed, &sig) {
            return Err(invalid("the signature does not verify with the jwk"));
        }
        let claims: Value = URL_SAFE_NO_PAD
            .decode(body)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .filter(Value::is_object)
            .ok_or_else(|| invalid("the proof's claims are not a JSON object"))?;
        let text = |k: &str| claims.get(k).and_then(Value::as_str);
        let jti =
            text("jti").filter(|j| !j.is_empty() && j.len() <= MAX_JTI).ok_or_else(|| invalid("no usable jti"))?;
        if text("htm") != Some(req.method) {
            return Err(invalid("htm is not the request's method"));
        }
        if !text("htu").is_some_and(|u| same_target(u, req.url)) {
            return Err(invalid("htu is not the request's URL"));
        }
        let iat = claims.get("iat").and_then(Value::as_i64).ok_or_else(|| invalid("no iat"))?;
        let now_s = i64::try_from(req.now_ms / 1000).unwrap_or(i64::MAX);
        let window = i64::try_from(self.cfg.iat_window.as_secs()).unwrap_or(i64::MAX);
        if (now_s - iat).abs() > window {
            return Err(invalid("iat is outside the acceptance window"));
        }
        match req.access_token {
            Some(t) if text("ath") != Some(URL_SAFE_NO_PAD.encode(Sha256::digest(t.as_bytes())).as_str()) => {
                return Err(invalid("ath is not the presented token's hash"));
            }
            _ => {}
        }
        if let Some(secret) = &self.cfg.nonce_secret {
            let bucket = self.bucket(req.now_ms);
            let fresh = [bucket, bucket.saturating_sub(1)].map(|b| self.nonce_at(secret, b));
            if !text("nonce").is_some_and(|n| fresh.iter().any(|f| f == n)) {
                return Err(DpopError {
                    error: USE_DPOP_NONCE,
                    reason: "the proof must carry this server's nonce".into(),
                    nonce: Some(fresh[0].clone()),
                });
            }
        }
        // Its iat may be up to a window ahead: it stays acceptable two windows from now at most.
        let until_ms = req.now_ms.saturating_add(2 * self.cfg.iat_window.as_millis() as u64);
        Ok(DpopProof { jkt: key.jkt.clone(), jti: jti.to_owned(), until_ms, header, key })
    }

    /// The key a proof's header names, for the algorithm it names (see `check`'s refusals).
    fn header_key(&self, head: &str) -> Result<ProofKey, DpopError> {
        let raw: Value = URL_SAFE_NO_PAD
            .decode(head)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .ok_or_else(|| invalid("the proof's header is not JSON"))?;
        if raw.get("typ").and_then(Value::as_str) != Some(PROOF_TYP) {
            return Err(invalid("typ must be dpop+jwt"));
        }
        let raw_jwk = raw.get("jwk").and_then(Value::as_object).ok_or_else(|| invalid("no jwk in the header"))?;
        if PRIVATE_MEMBERS.iter().any(|m| raw_jwk.contains_key(*m)) {
            return Err(invalid("the jwk holds private key material"));
        }
        let alg: Algorithm = raw
            .get("alg")
            .and_then(Value::as_str)
            .and_then(|a| a.parse().ok())
            .filter(|a| self.algs.contains(a))
            .ok_or_else(|| invalid(format!("alg must be one of {}", self.algs())))?;
        let jwk: Jwk = serde_json::from_value(Value::Object(raw_jwk.clone())).map_err(|_| invalid("unreadable jwk"))?;
        ProofKey::new(&jwk, alg).ok_or_else(|| invalid("unusable jwk (not a key for its alg)"))
    }

    /// Takes the checked `proof` once: the first time within its window it is remembered
    /// and `Ok(Ok(()))`; again, `Ok(Err(_))` with the refusal. `Err` when the replay store
    /// cannot answer (nothing can be said of the proof then).
    pub async fn admit(&self, proof: &DpopProof, now_ms: u64) -> Result<Result<(), DpopError>, ReplayStoreError> {
        Ok(match self.replay.admit(&proof.jkt, &proof.jti, now_ms, proof.until_ms).await? {
            ReplayVerdict::Fresh => {
                // Taken: its token is valid and bound to this key, so its parse is worth keeping.
                self.keys.put(proof.header, proof.key.clone(), now_ms);
                Ok(())
            }
            ReplayVerdict::Replayed => Err(invalid("this proof was used already")),
            ReplayVerdict::Full => Err(invalid("too many proofs in the window; send again later")),
        })
    }
}

/// Whether the proof's `htu` names `url` (RFC 9449 §4.3: query and fragment
/// ignored; scheme and host case-insensitive, a default port the same as none).
fn same_target(htu: &str, url: &str) -> bool {
    if htu == url {
        return true;
    }
    let parse = |s: &str| reqwest::Url::parse(crate::protocol::oauth::dpop::htu(s)).ok();
    match (parse(htu), parse(url)) {
        (Some(a), Some(b)) => {
            a.scheme() == b.scheme()
                && a.host_str() == b.host_str()
                && a.port_or_known_default() == b.port_or_known_default()
                && a.path() == b.path()
                && a.username().is_empty()
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::EncodingKey;
    use jsonwebtoken::jwk::ThumbprintHash;
    use serde_json::json;

    // A throwaway P-256 key, used only by these tests.
    const PEM: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgbzoIA9CBcUtTgjgR
i8anZZjW9T9R8FLs71Sfr5a0QAOhRANCAAQJGIWuoVcmz2gDjjrpDImcaChaCMdd
vNLZ7H/CKkbHU2uhoappXqDXgnBTbT2lTtxrNGOgaARrozyUW9VN0HHd
-----END PRIVATE KEY-----
";
    const URL: &str = "https://mcp.example.com/mcp";
    const NOW_MS: u64 = 1_800_000_000_000;
    const TOKEN: &str = "an-access-token";

    fn key() -> (EncodingKey, Value) {
        let k = EncodingKey::from_ec_pem(PEM.as_bytes()).unwrap();
        let mut jwk = serde_json::to_value(Jwk::from_encoding_key(&k, Algorithm::ES256).unwrap()).unwrap();
        jwk.as_object_mut().unwrap().remove("alg");
        (k, jwk)
    }

    fn b64(v: &Value) -> String {
        URL_SAFE_NO_PAD.encode(v.to_string())
    }

    /// A proof with `header` and `claims` as given, signed with the test key as ES256 (or `alg`'s HMAC).
    fn jws(header: Value, claims: Value) -> String {
        let signing = format!("{}.{}", b64(&header), b64(&claims));
        let sig = if header["alg"] == "HS256" {
            jsonwebtoken::crypto::sign(signing.as_bytes(), &EncodingKey::from_secret(b"k").unwrap(), Algorithm::HS256)
        } else {
            jsonwebtoken::crypto::sign(signing.as_bytes(), &key().0, Algorithm::ES256)
        };
        format!("{signing}.{}", sig.unwrap())
    }

    fn header() -> Value {
        json!({ "typ": "dpop+jwt", "alg": "ES256", "jwk": key().1 })
    }

    fn claims(jti: &str) -> Value {
        json!({
            "jti": jti, "htm": "POST", "htu": URL, "iat": NOW_MS / 1000,
            "ath": URL_SAFE_NO_PAD.encode(Sha256::digest(TOKEN.as_bytes())),
        })
    }

    fn req() -> ProofRequest<'static> {
        ProofRequest { method: "POST", url: URL, access_token: Some(TOKEN), now_ms: NOW_MS }
    }

    fn refused(v: &DpopVerifier, proof: &str) -> String {
        let e = v.check(proof, &req()).unwrap_err();
        assert_eq!(e.error, INVALID_DPOP_PROOF);
        e.reason
    }

    /// Checks and admits `proof`, as the resource server does.
    async fn taken(v: &DpopVerifier, proof: &str) -> Result<DpopProof, DpopError> {
        let p = v.check(proof, &req())?;
        v.admit(&p, NOW_MS).await.unwrap().map(|()| p)
    }

    async fn refused_again(v: &DpopVerifier, proof: &str) -> String {
        let e = taken(v, proof).await.unwrap_err();
        assert_eq!(e.error, INVALID_DPOP_PROOF);
        e.reason
    }

    #[tokio::test]
    async fn a_good_proof_once_and_its_thumbprint() {
        let v = DpopVerifier::new(DpopConfig::default()).unwrap();
        let proof = jws(header(), claims("one"));
        let jwk: Jwk = serde_json::from_value(key().1).unwrap();
        let ok = taken(&v, &proof).await.unwrap();
        assert_eq!(ok.jkt, jwk.thumbprint(ThumbprintHash::SHA256).unwrap());
        assert!(v.check(&proof, &req()).is_ok(), "a check alone does not take the proof");
        assert!(refused_again(&v, &proof).await.contains("used already"), "the same proof again");
        // Its header's key is kept now: another proof with that header still has its signature checked.
        let other = jws(header(), claims("forged"));
        let forged = format!("{}.{}", other.rsplit_once('.').unwrap().0, proof.rsplit_once('.').unwrap().1);
        assert!(refused(&v, &forged).contains("signature"), "a kept key verifies every proof");
        // htu: query ignored; scheme/host case and the default port do not matter.
        let mut c = claims("two");
        c["htu"] = json!("HTTPS://MCP.example.com:443/mcp?x=1");
        assert!(v.check(&jws(header(), c), &req()).is_ok());
    }

    #[test]
    fn every_bad_proof_is_refused_as_invalid() {
        let v = DpopVerifier::new(DpopConfig::default()).unwrap();
        let with = |k: &str, val: Value| {
            let mut c = claims(&format!("jti-{k}"));
            c[k] = val;
            jws(header(), c)
        };
        let mut private = header();
        private["jwk"]["d"] = json!("c2VjcmV0");
        let mut none = header();
        none["alg"] = json!("none");
        let mut hs = header();
        hs["alg"] = json!("HS256");
        let mut typ = header();
        typ["typ"] = json!("JWT");
        let mut no_jwk = header();
        no_jwk.as_object_mut().unwrap().remove("jwk");
        for (proof, why) in [
            (with("htm", json!("GET")), "htm"),
            (with("htu", json!("https://mcp.example.com/other")), "htu"),
            (with("htu", json!("https://evil.example.com/mcp")), "htu"),
            (with("iat", json!(NOW_MS / 1000 - 3600)), "iat"),
            (with("iat", json!(NOW_MS / 1000 + 3600)), "iat"),
            (with("ath", json!("not-the-hash")), "ath"),
            (with("jti", json!("")), "jti"),
            (jws(private, claims("p")), "private"),
            (jws(none, claims("n")), "alg"),
            (jws(hs, claims("h")), "alg"),
            (jws(typ, claims("t")), "typ"),
            (jws(no_jwk, claims("j")), "jwk"),
            ("a.b".to_owned(), "JWS"),
            ("x".repeat(1024 * 1024), "too large"),
        ] {
            let reason = refused(&v, &proof);
            assert!(reason.contains(why), "{why}: {reason}");
        }
        // A proof signed by another key than the one it names.
        let forged = jws(header(), claims("f"));
        let mut parts: Vec<&str> = forged.split('.').collect();
        let other = jws(header(), claims("g"));
        parts[2] = other.rsplit('.').next().unwrap();
        assert!(refused(&v, &parts.join(".")).contains("signature"));
        // A proof without a token presented has no ath to check; with one, it must match.
        let no_token = ProofRequest { access_token: None, ..req() };
        assert!(v.check(&jws(header(), claims("free")), &no_token).is_ok());
        assert!(DpopVerifier::new(DpopConfig { algs: vec!["HS256".into()], ..DpopConfig::default() }).is_err());
    }

    #[test]
    fn a_nonce_of_this_server_and_no_other() {
        let cfg = DpopConfig { nonce_secret: Some([7; 32]), ..DpopConfig::default() };
        let v = DpopVerifier::new(cfg.clone()).unwrap();
        let e = v.check(&jws(header(), claims("a")), &req()).unwrap_err();
        assert_eq!(e.error, USE_DPOP_NONCE);
        let nonce = e.nonce.unwrap();
        assert_eq!(Some(&nonce), v.nonce(NOW_MS).as_ref());
        let mut c = claims("b");
        c["nonce"] = json!(nonce);
        assert!(v.check(&jws(header(), c.clone()), &req()).is_ok());
        // Another node with the same secret takes it; a server with another secret does not.
        let twin = DpopVerifier::new(cfg.clone()).unwrap();
        c["jti"] = json!("c");
        assert!(twin.check(&jws(header(), c.clone()), &req()).is_ok());
        let other = DpopVerifier::new(DpopConfig { nonce_secret: Some([8; 32]), ..cfg }).unwrap();
        c["jti"] = json!("d");
        assert_eq!(other.check(&jws(header(), c), &req()).unwrap_err().error, USE_DPOP_NONCE);
    }

    #[cfg(feature = "client")]
    #[test]
    fn the_clients_proofs_pass() {
        let v = DpopVerifier::new(DpopConfig::default()).unwrap();
        let key = crate::client::oauth::dpop::DpopKey::generate().unwrap();
        let now_s = i64::try_from(NOW_MS / 1000).unwrap();
        let proof = key.proof("POST", "https://mcp.example.com/mcp?q", Some(TOKEN), None, now_s).unwrap();
        let first = v.check(&proof, &req()).unwrap();
        let again = key.proof("POST", URL, Some(TOKEN), None, now_s).unwrap();
        let again = v.check(&again, &req()).unwrap();
        assert_eq!(again.jkt, first.jkt, "one key, one thumbprint");
        assert_ne!(again.jti, first.jti, "a fresh jti each time");
        let get = key.proof("GET", URL, Some(TOKEN), None, now_s).unwrap();
        assert!(v.check(&get, &req()).is_err());
    }
}
