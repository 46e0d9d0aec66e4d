//! One trusted issuer's cached metadata and signing keys: fetched on first use,
//! used for `keys_ttl`, fetched again on an unknown `kid` — at most once per
//! `refetch_interval`, one fetch at a time — and kept when a fetch fails, so
//! known keys work while the authorization server is down.

use super::config::Issuer;
use super::introspect_gate::Gate;
use super::metadata::{AsMetadata, discover};
use super::{Shared, fetch};
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// Keys read from one JWKS at most (the rest are ignored).
const MAX_KEYS: usize = 64;

/// A verification key and the algorithms it may verify.
pub(super) struct KeyEntry {
    pub(super) key: DecodingKey,
    pub(super) algorithms: Vec<Algorithm>,
}

/// A key with its `kid`, if the JWKS named one.
type NamedKey = (Option<String>, Arc<KeyEntry>);

/// What a key lookup found.
pub(super) enum Found {
    /// Candidate keys (one when the token names a known `kid`), and until when (ms) the
    /// key set they come from is fresh: what they verify may be believed that long.
    Keys(Vec<Arc<KeyEntry>>, u64),
    /// Keys are known, but none matches.
    Unknown,
    /// No keys could ever be fetched: the AS is unreachable or broken.
    Unavailable(String),
}

#[derive(Default)]
struct State {
    metadata: Option<AsMetadata>,
    by_kid: HashMap<String, Arc<KeyEntry>>,
    without_kid: Vec<Arc<KeyEntry>>,
    /// Last successful key fetch (ms).
    fetched_ms: Option<u64>,
    /// Last attempt, successful or not (ms): the rate limit.
    attempted_ms: Option<u64>,
    last_error: Option<String>,
}

/// The cache of one issuer.
pub(super) struct IssuerState {
    pub(super) issuer: Issuer,
    /// What its introspection endpoint is asked at once (`introspect_gate`).
    pub(super) introspection: Gate,
    state: RwLock<State>,
    refresh: tokio::sync::Mutex<()>,
}

impl IssuerState {
    /// The cache of `issuer`, its introspection endpoint asked `introspections_at_once` at most.
    pub(super) fn new(issuer: Issuer, introspections_at_once: usize) -> Self {
        let introspection = Gate::new(introspections_at_once);
        Self { issuer, introspection, state: RwLock::default(), refresh: tokio::sync::Mutex::new(()) }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|p| p.into_inner())
    }

    fn lookup(&self, kid: Option<&str>, alg: Algorithm) -> Vec<Arc<KeyEntry>> {
        let st = self.read();
        let fits = |k: &&Arc<KeyEntry>| k.algorithms.contains(&alg);
        match kid {
            Some(kid) => st.by_kid.get(kid).filter(fits).cloned().into_iter().collect(),
            None => st.by_kid.values().chain(st.without_kid.iter()).filter(fits).cloned().collect(),
        }
    }

    /// The keys that may have signed a token with this `kid` and `alg`.
    pub(super) async fn find(&self, sh: &Shared, kid: Option<&str>, alg: Algorithm) -> Found {
        let now = sh.cfg.clock.now_ms();
        let fresh_until = |st: &State| st.fetched_ms.map_or(0, |f| f.saturating_add(ms(sh.cfg.keys_ttl)));
        let fresh = fresh_until(&self.read()) > now;
        let hit = self.lookup(kid, alg);
        if !hit.is_empty() && fresh {
            return Found::Keys(hit, fresh_until(&self.read()));
        }
        // A known key past its TTL still verifies while a refresh is under way elsewhere;
        // without one, wait for the fetch in flight: it is the answer.
        self.refresh(sh, now, hit.is_empty()).await;
        let hit = self.lookup(kid, alg);
        let st = self.read();
        if !hit.is_empty() {
            Found::Keys(hit, fresh_until(&st))
        } else if st.fetched_ms.is_none() {
            Found::Unavailable(st.last_error.clone().unwrap_or_else(|| "signing keys not fetched yet".into()))
        } else {
            Found::Unknown
        }
    }

    /// The issuer's metadata, discovered on first use (rate-limited like the keys).
    pub(super) async fn metadata(&self, sh: &Shared) -> Result<AsMetadata, String> {
        if let Some(m) = self.read().metadata.clone() {
            return Ok(m);
        }
        self.refresh(sh, sh.cfg.clock.now_ms(), true).await;
        let st = self.read();
        st.metadata.clone().ok_or_else(|| st.last_error.clone().unwrap_or_else(|| "metadata not fetched yet".into()))
    }

    /// Fetches metadata (if not known) and keys, unless another fetch ran
    /// within `refetch_interval`; one at a time. With a fetch in flight, waits for
    /// it when `wait` (the caller has nothing to go on without it), else returns.
    async fn refresh(&self, sh: &Shared, now: u64, wait: bool) {
        let may = |st: &State| st.attempted_ms.is_none_or(|a| now.saturating_sub(a) >= ms(sh.cfg.refetch_interval));
        let _one = match self.refresh.try_lock() {
            Ok(one) => one,
            Err(_) if wait => {
                drop(self.refresh.lock().await);
                return;
            }
            Err(_) => return,
        };
        {
            let mut st = self.state.write().unwrap_or_else(|p| p.into_inner());
            if !may(&st) {
                return; // another request just fetched
            }
            st.attempted_ms = Some(now);
        }
        let result = self.fetch(sh).await;
        let mut st = self.state.write().unwrap_or_else(|p| p.into_inner());
        match result {
            Ok((metadata, keys)) => {
                st.metadata = Some(metadata);
                st.by_kid.clear();
                st.without_kid.clear();
                for (kid, entry) in keys {
                    match kid {
                        Some(kid) => drop(st.by_kid.insert(kid, entry)),
                        None => st.without_kid.push(entry),
                    }
                }
                st.fetched_ms = Some(now);
                st.last_error = None;
            }
            Err(e) => {
                if let Some(suppressed) = crate::log_limit::admit(&format!("oauth issuer {}", self.issuer.url)) {
                    tracing::warn!(issuer = %self.issuer.url, error = %e, suppressed, "cannot refresh the authorization server's keys; known keys stay in use");
                }
                st.last_error = Some(e);
            }
        }
    }

    async fn fetch(&self, sh: &Shared) -> Result<(AsMetadata, Vec<NamedKey>), String> {
        let known = self.read().metadata.clone();
        let metadata = match known {
            Some(m) => m,
            None => discover(&sh.http, &self.issuer.url).await?,
        };
        let Some(jwks_uri) = &metadata.jwks_uri else {
            return Ok((metadata, Vec::new()));
        };
        let doc = fetch::json(sh.http.get(jwks_uri).header("accept", "application/json"))
            .await
            .map_err(|e| format!("{jwks_uri}: {e}"))?;
        let keys = parse_jwks(&doc).map_err(|e| format!("{jwks_uri}: {e}"))?;
        Ok((metadata, keys))
    }
}

fn ms(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The usable signature keys of a JWKS document; symmetric, encryption and
/// unsupported keys are skipped.
fn parse_jwks(doc: &Value) -> Result<Vec<NamedKey>, String> {
    let keys = doc.get("keys").and_then(Value::as_array).ok_or("not a JWK set (no \"keys\" array)")?;
    let mut out = Vec::new();
    for raw in keys.iter().take(MAX_KEYS) {
        let Ok(jwk) = serde_json::from_value::<Jwk>(raw.clone()) else { continue };
        if matches!(jwk.common.public_key_use, Some(ref u) if *u != PublicKeyUse::Signature) {
            continue;
        }
        let algorithms = algorithms_of(&jwk);
        if algorithms.is_empty() {
            continue;
        }
        let Ok(key) = DecodingKey::from_jwk(&jwk) else { continue };
        out.push((jwk.common.key_id.clone(), Arc::new(KeyEntry { key, algorithms })));
    }
    Ok(out)
}

/// The asymmetric signature algorithms a key may verify: its `alg`, or those of its type and curve.
fn algorithms_of(jwk: &Jwk) -> Vec<Algorithm> {
    use Algorithm::*;
    let by_type = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => vec![RS256, RS384, RS512, PS256, PS384, PS512],
        AlgorithmParameters::EllipticCurve(p) => match p.curve {
            EllipticCurve::P256 => vec![ES256],
            EllipticCurve::P384 => vec![ES384],
            _ => vec![],
        },
        AlgorithmParameters::OctetKeyPair(p) if p.curve == EllipticCurve::Ed25519 => vec![EdDSA],
        _ => vec![],
    };
    let Some(named) = jwk.common.key_algorithm else { return by_type };
    let named = match named {
        KeyAlgorithm::RS256 => RS256,
        KeyAlgorithm::RS384 => RS384,
        KeyAlgorithm::RS512 => RS512,
        KeyAlgorithm::PS256 => PS256,
        KeyAlgorithm::PS384 => PS384,
        KeyAlgorithm::PS512 => PS512,
        KeyAlgorithm::ES256 => ES256,
        KeyAlgorithm::ES384 => ES384,
        KeyAlgorithm::EdDSA => EdDSA,
        _ => return vec![],
    };
    by_type.into_iter().filter(|a| *a == named).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_asymmetric_signature_keys_are_kept() {
        let doc = json!({ "keys": [
            { "kty": "oct", "k": "c2VjcmV0", "kid": "hmac" },
            { "kty": "EC", "crv": "P-256", "kid": "enc", "use": "enc",
              "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0" },
            { "kty": "EC", "crv": "P-256", "kid": "sig", "alg": "ES256",
              "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0" },
            { "kty": "EC", "crv": "P-256", "kid": "lies", "alg": "RS256",
              "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0" },
            "garbage"
        ]});
        let keys = parse_jwks(&doc).expect("a set");
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0].0.as_deref(), Some("sig"));
        assert_eq!(keys[0].1.algorithms, [Algorithm::ES256]);
        assert!(parse_jwks(&json!({ "nokeys": [] })).is_err());
    }
}
