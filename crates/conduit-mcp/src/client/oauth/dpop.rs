//! The client's half of DPoP (RFC 9449): a P-256 key per credential, kept
//! with the tokens it binds (so a refresh keeps the binding), and the proof
//! each request carries: `typ` `dpop+jwt`, `alg` ES256, the public `jwk`;
//! `htm`, `htu`, `iat`, a fresh `jti`, the server's nonce when it gave one,
//! and `ath` (the access token's SHA-256) on requests to the MCP server.

use super::assertion::random_id;
use crate::client::error::ClientError;
use crate::protocol::oauth::dpop::{PROOF_TYP, htu};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use p256::pkcs8::EncodePrivateKey;
use rand::TryRngCore;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use std::fmt;
use std::sync::Mutex;

/// The one proof algorithm this client signs with.
pub(crate) const ALG: &str = "ES256";

/// A DPoP key: the private key (PKCS#8, base64url, as stored) and its public JWK.
#[derive(Clone)]
pub(crate) struct DpopKey {
    stored: String,
    key: EncodingKey,
    jwk: Jwk,
}

impl fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DpopKey").finish_non_exhaustive()
    }
}

impl DpopKey {
    /// A new key, from the operating system's random numbers.
    pub(crate) fn generate() -> Result<Self, ClientError> {
        let failed = |e: &dyn fmt::Display| ClientError::OAuth(format!("making a DPoP key failed: {e}"));
        loop {
            let mut bytes = [0u8; 32];
            rand::rngs::OsRng.try_fill_bytes(&mut bytes).map_err(|e| failed(&e))?;
            // Out of range (or zero) about once in 2^32 draws: draw again.
            let Ok(secret) = p256::SecretKey::from_slice(&bytes) else { continue };
            let der = secret.to_pkcs8_der().map_err(|e| failed(&e))?;
            return Self::from_stored(&URL_SAFE_NO_PAD.encode(der.as_bytes()));
        }
    }

    /// The key as [`stored`](Self::stored) it.
    pub(crate) fn from_stored(stored: &str) -> Result<Self, ClientError> {
        let der = URL_SAFE_NO_PAD
            .decode(stored.trim())
            .map_err(|_| ClientError::OAuth("the stored DPoP key is not base64url".into()))?;
        let key = EncodingKey::from_ec_der(&der);
        let jwk = Jwk::from_encoding_key(&key, Algorithm::ES256)
            .map_err(|e| ClientError::OAuth(format!("the stored DPoP key cannot be read: {e}")))?;
        Ok(Self { stored: stored.trim().to_owned(), key, jwk })
    }

    /// The private key as the credential store keeps it (PKCS#8 DER, base64url): a secret.
    pub(crate) fn stored(&self) -> &str {
        &self.stored
    }

    /// A proof for a `method` request to `url` (its query and fragment left
    /// out), with the server's `nonce` and, for a resource request, the
    /// `access_token` it presents.
    pub(crate) fn proof(
        &self,
        method: &str,
        url: &str,
        access_token: Option<&str>,
        nonce: Option<&str>,
        now_s: i64,
    ) -> Result<String, ClientError> {
        let mut claims = Map::new();
        claims.insert("jti".into(), json!(random_id()));
        claims.insert("htm".into(), json!(method));
        claims.insert("htu".into(), json!(htu(url)));
        claims.insert("iat".into(), json!(now_s));
        if let Some(n) = nonce {
            claims.insert("nonce".into(), json!(n));
        }
        if let Some(t) = access_token {
            claims.insert("ath".into(), json!(URL_SAFE_NO_PAD.encode(Sha256::digest(t.as_bytes()))));
        }
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some(PROOF_TYP.into());
        let mut jwk = self.jwk.clone();
        jwk.common.key_algorithm = None;
        header.jwk = Some(jwk);
        jsonwebtoken::encode(&header, &Value::Object(claims), &self.key)
            .map_err(|e| ClientError::OAuth(format!("signing a DPoP proof failed: {e}")))
    }
}

/// The last `DPoP-Nonce` a server gave (RFC 9449 §8, §9): every later proof to it carries it.
#[derive(Debug, Default)]
pub(crate) struct Nonce(Mutex<Option<String>>);

/// The longest nonce kept: a server cannot make every proof arbitrarily large.
const MAX_NONCE: usize = 512;

impl Nonce {
    /// The nonce to put in the next proof.
    pub(crate) fn get(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Keeps the `DPoP-Nonce` of a response, when it has a usable one; whether it did.
    pub(crate) fn keep(&self, headers: &reqwest::header::HeaderMap) -> bool {
        let Some(n) = headers.get(crate::protocol::oauth::dpop::NONCE_HEADER).and_then(|v| v.to_str().ok()) else {
            return false;
        };
        // RFC 9449 §8.1: NQCHAR, which a JSON string carries as it is.
        if n.is_empty() || n.len() > MAX_NONCE || !n.bytes().all(|b| b == b' ' || b.is_ascii_graphic()) {
            return false;
        }
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(n.to_owned());
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::jwk::ThumbprintHash;
    use jsonwebtoken::{DecodingKey, Validation};

    #[test]
    fn a_proof_is_signed_by_the_key_it_names() {
        let key = DpopKey::generate().unwrap();
        let again = DpopKey::from_stored(key.stored()).unwrap();
        assert_eq!(
            key.jwk.thumbprint(ThumbprintHash::SHA256).unwrap(),
            again.jwk.thumbprint(ThumbprintHash::SHA256).unwrap()
        );
        let proof = again.proof("POST", "https://m.example/mcp?x=1", Some("tok"), Some("n1"), 1_800_000_000).unwrap();
        let header = jsonwebtoken::decode_header(&proof).unwrap();
        assert_eq!(header.typ.as_deref(), Some("dpop+jwt"));
        let jwk = header.jwk.unwrap();
        let public = serde_json::to_value(&jwk).unwrap();
        assert!(public.get("d").is_none() && public["kty"] == "EC" && public["crv"] == "P-256", "{public}");
        let mut v = Validation::new(Algorithm::ES256);
        v.required_spec_claims.clear();
        v.validate_exp = false;
        let claims = jsonwebtoken::decode::<Value>(&proof, &DecodingKey::from_jwk(&jwk).unwrap(), &v).unwrap().claims;
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://m.example/mcp");
        assert_eq!(claims["nonce"], "n1");
        assert_eq!(claims["iat"], 1_800_000_000);
        // RFC 9449 §7.1's example: the hash of this token.
        let ath =
            again.proof("GET", "https://m.example/mcp", Some("Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU"), None, 0);
        let ath = jsonwebtoken::dangerous::insecure_decode::<Value>(ath.unwrap()).unwrap().claims;
        assert_eq!(ath["ath"], "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo");
        assert!(ath.get("nonce").is_none());
        let other = again.proof("POST", "https://m.example/mcp", Some("tok"), None, 0).unwrap();
        let jti = |p: &str| jsonwebtoken::dangerous::insecure_decode::<Value>(p).unwrap().claims["jti"].clone();
        assert_ne!(jti(&proof), jti(&other));
        assert!(DpopKey::from_stored("not base64!").is_err());
    }
}
