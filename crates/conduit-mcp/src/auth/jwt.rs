//! JWT bearer tokens (HS256, RS256, ES256) with issuer and audience checks.

use super::{AuthError, Authenticate, Principal, bearer_token};
use async_trait::async_trait;
use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode};
use serde_json::{Map, Value};

/// The signature algorithms accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum JwtAlgorithm {
    /// HMAC with SHA-256 (shared secret).
    Hs256,
    /// RSA PKCS#1 v1.5 with SHA-256.
    Rs256,
    /// ECDSA P-256 with SHA-256.
    Es256,
}

/// Validates JWT bearer tokens and maps their claims to a [`Principal`].
///
/// The principal id is the `sub` claim; scopes come from `scope`
/// (space-separated) or `scp` (array). `exp` is required, and the issuer and
/// audience are checked (RFC 8707: tokens must be meant for this server).
#[derive(Clone)]
pub struct Jwt {
    key: DecodingKey,
    validation: Validation,
}

impl std::fmt::Debug for Jwt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jwt").field("algorithms", &self.validation.algorithms).finish_non_exhaustive()
    }
}

impl Jwt {
    fn with_key(key: DecodingKey, alg: Algorithm, issuer: &str, audience: &str) -> Self {
        let mut validation = Validation::new(alg);
        validation.set_issuer(&[issuer]);
        validation.set_audience(&[audience]);
        validation.set_required_spec_claims(&["exp", "sub", "iss", "aud"]);
        validation.leeway = 30;
        Self { key, validation }
    }

    /// HS256 with a shared secret.
    pub fn hs256(secret: &[u8], issuer: &str, audience: &str) -> Result<Self, AuthError> {
        let key = DecodingKey::from_secret(secret).map_err(|e| AuthError::Invalid(format!("HMAC key: {e}")))?;
        Ok(Self::with_key(key, Algorithm::HS256, issuer, audience))
    }

    /// RS256 with an RSA public key in PEM.
    pub fn rs256_pem(public_pem: &[u8], issuer: &str, audience: &str) -> Result<Self, AuthError> {
        let key = DecodingKey::from_rsa_pem(public_pem).map_err(|e| AuthError::Invalid(format!("RSA key: {e}")))?;
        Ok(Self::with_key(key, Algorithm::RS256, issuer, audience))
    }

    /// ES256 with a P-256 public key in PEM.
    pub fn es256_pem(public_pem: &[u8], issuer: &str, audience: &str) -> Result<Self, AuthError> {
        let key = DecodingKey::from_ec_pem(public_pem).map_err(|e| AuthError::Invalid(format!("EC key: {e}")))?;
        Ok(Self::with_key(key, Algorithm::ES256, issuer, audience))
    }

    /// The algorithm this validator accepts.
    pub fn algorithm(&self) -> JwtAlgorithm {
        match self.validation.algorithms.first() {
            Some(Algorithm::RS256) => JwtAlgorithm::Rs256,
            Some(Algorithm::ES256) => JwtAlgorithm::Es256,
            _ => JwtAlgorithm::Hs256,
        }
    }
}

#[async_trait]
impl Authenticate for Jwt {
    async fn authenticate(&self, headers: &http::HeaderMap) -> Result<Principal, AuthError> {
        let token = bearer_token(headers)?.ok_or(AuthError::Missing)?;
        let data = decode::<Map<String, Value>>(token, &self.key, &self.validation)
            .map_err(|e| AuthError::Invalid(e.to_string()))?;
        let claims = data.claims;
        let sub = claims.get("sub").and_then(Value::as_str).ok_or_else(|| AuthError::Invalid("missing sub".into()))?;
        let mut p = Principal::new(sub);
        if let Some(s) = claims.get("scope").and_then(Value::as_str) {
            p = p.scopes(s.split_whitespace());
        }
        if let Some(arr) = claims.get("scp").and_then(Value::as_array) {
            p = p.scopes(arr.iter().filter_map(Value::as_str));
        }
        // `exp` is required by the validation; leeway as it allowed.
        p.valid_until_ms = claims
            .get("exp")
            .and_then(Value::as_u64)
            .map(|e| e.saturating_add(self.validation.leeway).saturating_mul(1000));
        Ok(p.claims(claims))
    }

    /// A second at most: the token alone decides, and a signature check costs more than
    /// a comparison with the connection's last token.
    fn reuse_on_connection(&self, _principal: &Principal) -> Option<std::time::Duration> {
        Some(std::time::Duration::from_secs(1))
    }
}
