//! Static bearer tokens and API keys.

use super::{AuthError, Authenticate, Principal, bearer_token};
use async_trait::async_trait;
use sha2::{Digest, Sha256};
use std::collections::HashMap;

fn digest_id(secret: &str) -> String {
    let d = Sha256::digest(secret.as_bytes());
    let hex: String = d.iter().take(16).map(|b| format!("{b:02x}")).collect();
    format!("token:{hex}")
}

/// Accepts a fixed set of bearer tokens.
///
/// Each token maps to a principal: one you name, or one whose id is a digest
/// of the secret (so the id is stable but never reveals the token).
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct BearerTokens {
    tokens: HashMap<String, Principal>,
}

impl BearerTokens {
    /// An empty set (rejects everything).
    pub fn new() -> Self {
        Self::default()
    }

    /// Accepts `token` as `principal`.
    pub fn token(mut self, token: impl Into<String>, principal: Principal) -> Self {
        self.tokens.insert(token.into(), principal);
        self
    }

    /// Accepts `token` with a principal id derived from a digest of it.
    pub fn token_with_digest_id(mut self, token: impl Into<String>) -> Self {
        let token = token.into();
        let p = Principal::new(digest_id(&token));
        self.tokens.insert(token, p);
        self
    }
}

#[async_trait]
impl Authenticate for BearerTokens {
    async fn authenticate(&self, headers: &http::HeaderMap) -> Result<Principal, AuthError> {
        let token = bearer_token(headers)?.ok_or(AuthError::Missing)?;
        self.tokens.get(token).cloned().ok_or_else(|| AuthError::Invalid("unknown token".into()))
    }
}

/// Accepts API keys in a header (default `X-API-Key`).
#[derive(Debug, Clone)]
#[must_use]
pub struct ApiKeys {
    header: http::HeaderName,
    keys: HashMap<String, Principal>,
}

impl Default for ApiKeys {
    fn default() -> Self {
        Self { header: http::HeaderName::from_static("x-api-key"), keys: HashMap::new() }
    }
}

impl ApiKeys {
    /// Keys read from `X-API-Key`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads keys from another header.
    pub fn header(mut self, name: http::HeaderName) -> Self {
        self.header = name;
        self
    }

    /// Accepts `key` as `principal`.
    pub fn key(mut self, key: impl Into<String>, principal: Principal) -> Self {
        self.keys.insert(key.into(), principal);
        self
    }

    /// Accepts `key` with a principal id derived from a digest of it.
    pub fn key_with_digest_id(mut self, key: impl Into<String>) -> Self {
        let key = key.into();
        let p = Principal::new(digest_id(&key));
        self.keys.insert(key, p);
        self
    }
}

#[async_trait]
impl Authenticate for ApiKeys {
    async fn authenticate(&self, headers: &http::HeaderMap) -> Result<Principal, AuthError> {
        let v = headers.get(&self.header).ok_or(AuthError::Missing)?;
        let v = v.to_str().map_err(|_| AuthError::Invalid("API key is not ASCII".into()))?.trim();
        self.keys.get(v).cloned().ok_or_else(|| AuthError::Invalid("unknown API key".into()))
    }

    fn scheme(&self) -> &str {
        "ApiKey"
    }

    fn credentials_header(&self) -> http::HeaderName {
        self.header.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(name: &str, value: &str) -> http::HeaderMap {
        let mut h = http::HeaderMap::new();
        h.insert(http::HeaderName::from_bytes(name.as_bytes()).unwrap(), value.parse().unwrap());
        h
    }

    #[tokio::test]
    async fn bearer_tokens() {
        let a = BearerTokens::new().token("s3cret", Principal::new("alice")).token_with_digest_id("other");
        assert_eq!(a.authenticate(&headers("authorization", "Bearer s3cret")).await.unwrap().id(), "alice");
        let d = a.authenticate(&headers("authorization", "bearer other")).await.unwrap();
        assert!(d.id.starts_with("token:") && !d.id.contains("other"));
        assert_eq!(a.authenticate(&http::HeaderMap::new()).await, Err(AuthError::Missing));
        assert!(matches!(a.authenticate(&headers("authorization", "Bearer nope")).await, Err(AuthError::Invalid(_))));
        assert!(matches!(a.authenticate(&headers("authorization", "Basic abc")).await, Err(AuthError::Invalid(_))));
    }

    #[tokio::test]
    async fn api_keys() {
        let a = ApiKeys::new().key("k1", Principal::new("svc"));
        assert_eq!(a.authenticate(&headers("x-api-key", " k1 ")).await.unwrap().id(), "svc");
        assert_eq!(a.authenticate(&http::HeaderMap::new()).await, Err(AuthError::Missing));
        assert!(matches!(a.authenticate(&headers("x-api-key", "k2")).await, Err(AuthError::Invalid(_))));
    }
}
