//! Authentication: who is calling, proved per request.
//!
//! An [`Authenticate`] implementation turns request headers into a
//! [`Principal`]. With no authenticator configured every request has principal
//! `None`. Built in: static bearer tokens ([`BearerTokens`]), an API-key header
//! ([`ApiKeys`]), with the `jwt` feature JWTs checked against keys you give
//! (`Jwt`, HS256/RS256/ES256 with issuer and audience checks), and with the
//! `oauth` feature an OAuth 2.1 resource server (`oauth::OAuth`: tokens of the
//! authorization servers you trust, their keys discovered and cached,
//! introspection for opaque tokens).
//!
// The guide (docs/auth.md); its examples need the OAuth resource server and the client.
#![cfg_attr(
    any(not(doctest), all(feature = "oauth", feature = "client")),
    doc = include_str!("../../guides/auth.md")
)]

#[cfg(feature = "jwt")]
mod jwt;
#[cfg(feature = "oauth")]
pub mod oauth;
mod static_tokens;

#[cfg(feature = "jwt")]
pub use jwt::{Jwt, JwtAlgorithm};
pub use static_tokens::{ApiKeys, BearerTokens};

use async_trait::async_trait;
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use std::sync::Arc;

/// An authenticated caller.
///
/// Cheap to clone (its parts are shared): an authenticator that caches principals
/// hands each request the same one.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
#[must_use]
pub struct Principal {
    /// Stable identifier; tasks are owned by it.
    pub id: Arc<str>,
    /// Granted OAuth scopes (with the ones they imply, where an authenticator knows them).
    pub scopes: Arc<BTreeSet<String>>,
    /// Raw claims (JWT) or other attributes.
    pub claims: Arc<Map<String, Value>>,
    /// When the credentials stop proving this principal, in milliseconds since the Unix epoch
    /// by the authenticator's clock, leeway included: a JWT's `exp`, an introspection answer's
    /// reuse limit. `None`: no end is known (static tokens, API keys). A long-lived stream
    /// opened with these credentials ends (or checks them again) at this instant.
    pub valid_until_ms: Option<u64>,
}

impl Principal {
    /// A principal with an id and no scopes.
    pub fn new(id: impl Into<String>) -> Self {
        let id: String = id.into();
        Self { id: id.into(), scopes: Arc::default(), claims: Arc::default(), valid_until_ms: None }
    }

    /// Sets the claims.
    pub fn claims(mut self, claims: Map<String, Value>) -> Self {
        self.claims = Arc::new(claims);
        self
    }

    /// Sets when the credentials stop proving this principal (see [`Principal::valid_until_ms`]).
    pub fn valid_until_ms(mut self, ms: u64) -> Self {
        self.valid_until_ms = Some(ms);
        self
    }

    /// Adds scopes.
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Arc::make_mut(&mut self.scopes).extend(scopes.into_iter().map(Into::into));
        self
    }

    /// The id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Whether every scope in `required` is granted.
    pub fn has_scopes(&self, required: &[String]) -> bool {
        required.iter().all(|s| self.scopes.contains(s))
    }
}

/// Why authentication failed: `Missing` and `Invalid` are answered with HTTP
/// 401, `InvalidRequest` with 400, `InsufficientScope` with 403, `Unavailable` with 503.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// No credentials were presented.
    #[error("authentication required")]
    Missing,
    /// Credentials were presented but are not valid (expired, bad signature, wrong audience, ...).
    #[error("invalid credentials: {0}")]
    Invalid(String),
    /// The request carries its credentials in a way that cannot be read as one
    /// (two `Authorization` headers, for one): nothing in it is tried.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// Valid credentials without scopes every request needs (they are listed).
    #[error("insufficient scope")]
    InsufficientScope(Vec<String>),
    /// The credentials cannot be checked now (the authorization server is unreachable).
    #[error("authentication is unavailable: {0}")]
    Unavailable(String),
    /// A DPoP proof (RFC 9449) was missing or refused: HTTP 401 with a `DPoP` challenge.
    #[error("DPoP proof refused: {description}")]
    Proof {
        /// The challenge's error: `invalid_dpop_proof`, `use_dpop_nonce`, or `invalid_token`.
        error: String,
        /// Why, in words (no token or key in it).
        description: String,
        /// The nonce to send in `DPoP-Nonce`, when the server asks for one.
        nonce: Option<String>,
        /// The proof algorithms taken, space-separated (the challenge's `algs`).
        algs: String,
    },
}

/// Proves who a request comes from.
#[async_trait]
pub trait Authenticate: Send + Sync + 'static {
    /// Authenticates one request from its headers.
    async fn authenticate(&self, headers: &http::HeaderMap) -> Result<Principal, AuthError>;

    /// Authenticates one request from its method and headers (a DPoP proof names the
    /// method); default: [`authenticate`](Self::authenticate).
    async fn authenticate_request(
        &self,
        method: &http::Method,
        headers: &http::HeaderMap,
    ) -> Result<Principal, AuthError> {
        let _ = method;
        self.authenticate(headers).await
    }

    /// The DPoP proof algorithms taken, space-separated, when DPoP-bound tokens are
    /// (default: none): a 401 then carries a `DPoP algs="…"` challenge too.
    fn dpop_algs(&self) -> Option<String> {
        None
    }

    /// The `scheme` used in `WWW-Authenticate` challenges (default `Bearer`).
    fn scheme(&self) -> &str {
        "Bearer"
    }

    /// The header the credentials travel in (default `Authorization`). The HTTP
    /// transport refuses a request that carries it (or `Authorization`) more than
    /// once with 400 before this authenticator sees it: which one would count?
    fn credentials_header(&self) -> http::HeaderName {
        http::header::AUTHORIZATION
    }

    /// Now, in milliseconds since the Unix epoch, by the clock the principals'
    /// [`valid_until_ms`](Principal::valid_until_ms) are read against (default: the
    /// system clock). An authenticator with an injected clock returns its reading, so
    /// a long-lived stream ends when that clock says its credentials lapsed.
    fn now_ms(&self) -> u64 {
        crate::clock::Clock::now_ms(&crate::clock::SystemClock)
    }

    /// How long a connection may answer its later requests that carry byte-identical
    /// credentials with `principal` without asking again (default: never). Only for an
    /// authenticator whose answer depends on the credentials header alone and on
    /// nothing that changes per request; never past the principal's
    /// [`valid_until_ms`](Principal::valid_until_ms).
    fn reuse_on_connection(&self, principal: &Principal) -> Option<std::time::Duration> {
        let _ = principal;
        None
    }

    /// Checks again the credentials a long-lived stream was opened with, once they reach
    /// their [`valid_until_ms`](Principal::valid_until_ms): `headers` are the opening
    /// request's credentials, `opened` the principal they proved then. No new request
    /// comes with the check, so nothing proven per request (a DPoP proof) can be asked
    /// for; an authenticator that takes such credentials checks what still can be: the
    /// credentials themselves, and that they are still bound to what was proven at open.
    /// Default: [`authenticate`](Self::authenticate).
    async fn reauthenticate(&self, headers: &http::HeaderMap, opened: &Principal) -> Result<Principal, AuthError> {
        let _ = opened;
        self.authenticate(headers).await
    }
}

/// Reads `Authorization: Bearer <token>`; `None` when absent, an error when malformed.
pub(crate) fn bearer_token(headers: &http::HeaderMap) -> Result<Option<&str>, AuthError> {
    let Some(v) = headers.get(http::header::AUTHORIZATION) else {
        return Ok(None);
    };
    let v = v.to_str().map_err(|_| AuthError::Invalid("authorization header is not ASCII".into()))?;
    let (scheme, token) =
        v.trim().split_once(' ').ok_or_else(|| AuthError::Invalid("malformed authorization header".into()))?;
    if !scheme.eq_ignore_ascii_case("bearer") || token.trim().is_empty() {
        return Err(AuthError::Invalid("expected a Bearer token".into()));
    }
    Ok(Some(token.trim()))
}
