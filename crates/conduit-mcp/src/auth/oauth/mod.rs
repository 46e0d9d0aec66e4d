//! An OAuth 2.1 resource server (feature `oauth`): access tokens from the
//! authorization servers you trust, checked on every request.
//!
//! [`OAuth`] is an [`Authenticate`]: give it to
//! [`HttpConfig::oauth`](crate::transport::http::HttpConfig::oauth), which also
//! serves the Protected Resource Metadata (RFC 9728) and answers every
//! unauthenticated request, of either protocol era, with
//! `401` and `WWW-Authenticate: Bearer resource_metadata="…", scope="…"`.
//!
//! - **JWT access tokens** are verified with the issuer's keys, found through
//!   its metadata (RFC 8414, then OpenID discovery; the metadata must name the
//!   same issuer) and cached for [`OAuthConfig::keys_ttl`]. A token signed by a
//!   key not in the cache makes one fetch per [`OAuthConfig::refetch_interval`]
//!   at most, so keys rotate without a restart and made-up `kid`s cannot flood
//!   the authorization server; known keys keep working while it is down. The
//!   algorithm must be one the key allows (never `none`, never HMAC); `iss` must
//!   be a trusted issuer, `exp` is required, `exp`/`nbf` get
//!   [`OAuthConfig::leeway`], and `aud` must name [`OAuthConfig::resource`]. A
//!   verified token's principal is cached by the token's SHA-256 (bounded in bytes:
//!   [`OAuthConfig::jwt_cache_bytes`]), so a token seen again costs a hash, not a
//!   signature check, until its `exp` (with the leeway) or until the keys that verified
//!   it are due to be fetched again, whichever is first.
//! - **Opaque tokens** are introspected (RFC 7662) at each issuer that has
//!   credentials ([`OAuthConfig::introspection_client_for`]), with its own, in
//!   order until one calls the token active. Active answers are cached for
//!   [`OAuthConfig::introspection_ttl`] (never past the token's `exp`), refused
//!   tokens for [`OAuthConfig::introspection_inactive_ttl`], both by the token's
//!   SHA-256 and bounded in bytes; one token is introspected once at a time;
//!   each issuer is asked [`OAuthConfig::max_concurrent_introspections`] at once
//!   at most and not at all for [`OAuthConfig::introspection_backoff`] after a
//!   failure (503 at once meanwhile; a cached token never waits). An answer for a
//!   refresh token is refused.
//! - The [`Principal`] id is `ISSUER#SUB`, so equal subjects of two issuers
//!   are two principals; its scopes are the token's plus every scope they
//!   imply ([`OAuthConfig::implies`]). A token without [`OAuthConfig::scopes`]
//!   gets `403 insufficient_scope`.
//! - The AS being unreachable when nothing cached can decide is `503`, not `401`:
//!   the client's token may be fine. No token is ever logged or passed on.
//!
//! ```no_run
//! use conduit_mcp::auth::oauth::{OAuth, OAuthConfig};
//! use conduit_mcp::transport::http::HttpConfig;
//!
//! let oauth = OAuth::new(
//!     OAuthConfig::new("https://auth.example.com", "https://mcp.example.com/mcp").scope("mcp:read"),
//! )
//! .expect("valid OAuth configuration");
//! let http = HttpConfig::default().oauth(oauth);
//! # let _ = http;
//! ```

mod access_token;
mod bound;
mod config;
pub(crate) mod config_toml;
mod dpop;
mod dpop_replay;
mod fetch;
mod introspect;
mod introspect_gate;
mod issuer;
mod metadata;
mod proof_key;
mod resource;
mod scopes;
mod single_flight;
mod token_cache;

pub use config::{ClientCredentials, Issuer, MAX_LEEWAY, OAuthConfig};
pub use dpop::{DEFAULT_DPOP_ALGS, DpopConfig, DpopError, DpopProof, DpopVerifier, ProofRequest};
pub use dpop_replay::{DpopReplayStore, MemoryDpopReplay, ReplayStoreError, ReplayVerdict, replay_key};
pub use resource::ProtectedResource;

use super::{AuthError, Authenticate, Principal, bearer_token};
use async_trait::async_trait;
use introspect::Introspection;
use issuer::IssuerState;
use scopes::ScopeHierarchy;
use std::sync::Arc;
use token_cache::ByHash;

/// How long a connection reuses a principal for the same `Authorization` header.
const REUSE_ON_CONNECTION: std::time::Duration = std::time::Duration::from_secs(1);

/// What every request's check shares: the configuration, the HTTP client and the caches.
pub(super) struct Shared {
    cfg: OAuthConfig,
    resource_url: reqwest::Url,
    http: reqwest::Client,
    issuers: Vec<IssuerState>,
    hierarchy: ScopeHierarchy,
    introspection: Introspection,
    /// Principals of JWTs verified already.
    verified: ByHash<Principal>,
    resource: ProtectedResource,
    /// The DPoP proof checks, when DPoP-bound tokens are taken.
    dpop: Option<DpopVerifier>,
}

/// An OAuth 2.1 resource server: validates bearer tokens (see the module docs).
#[derive(Clone)]
pub struct OAuth {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for OAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuth").field("resource", &self.shared.cfg.resource).finish_non_exhaustive()
    }
}

impl OAuth {
    /// Checks `cfg` and builds the resource server (no request is made yet).
    pub fn new(cfg: OAuthConfig) -> Result<Self, crate::config::ConfigError> {
        let bad = |key: &str, message: String| crate::config::ConfigError::new("oauth", key, message);
        if cfg.issuers.is_empty() {
            return Err(bad("issuer", "at least one issuer is required".into()));
        }
        for i in &cfg.issuers {
            fetch::check_url("issuer", &i.url).map_err(|e| bad("issuer", e))?;
        }
        if let Some(why) = &cfg.misplaced_introspection_client {
            return Err(bad("introspection_client", why.clone()));
        }
        if cfg.leeway > MAX_LEEWAY {
            return Err(bad("leeway_s", format!("at most {} seconds", MAX_LEEWAY.as_secs())));
        }
        if cfg.scopes.iter().any(|s| s == "offline_access") {
            return Err(bad("scopes", "offline_access is for refresh tokens, not a resource scope".into()));
        }
        if let Some(s) = cfg.scopes.iter().find(|s| s.is_empty() || s.contains([' ', '"', '\\'])) {
            return Err(bad("scopes", format!("{s:?} is not a scope token")));
        }
        let resource = ProtectedResource::new(&cfg).map_err(|e| bad("resource", e))?;
        let resource_url = reqwest::Url::parse(&cfg.resource).map_err(|e| bad("resource", e.to_string()))?;
        let http = fetch::client(cfg.fetch_timeout).map_err(|e| bad("oauth", e))?;
        let mut dpop = cfg.dpop.clone().map(DpopVerifier::new).transpose().map_err(|e| bad("dpop", e))?;
        if let Some(store) = &cfg.dpop_replay {
            dpop = dpop.map(|v| v.replay_store(store.clone()));
        }
        let shared = Shared {
            dpop,
            issuers: cfg
                .issuers
                .iter()
                .map(|i| IssuerState::new(i.clone(), cfg.max_concurrent_introspections))
                .collect(),
            hierarchy: ScopeHierarchy::new(&cfg.scope_hierarchy),
            introspection: Introspection::default(),
            verified: ByHash::default(),
            resource,
            resource_url,
            http,
            cfg,
        };
        Ok(Self { shared: Arc::new(shared) })
    }

    /// The configuration.
    pub fn config(&self) -> &OAuthConfig {
        &self.shared.cfg
    }

    /// The Protected Resource Metadata and where it is served.
    pub fn protected_resource(&self) -> &ProtectedResource {
        &self.shared.resource
    }
}

impl OAuth {
    /// The principal of a valid `token` (its scopes not yet judged).
    async fn principal_of(&self, token: &str) -> Result<Principal, AuthError> {
        let sh = &*self.shared;
        // A JWT verified before costs a hash and a lookup. Both paths expand the scopes
        // before they cache the principal.
        let key = token_cache::token_hash(token);
        let principal = if let Some(p) = sh.verified.get(&key, sh.cfg.clock.now_ms()) {
            p
        } else if access_token::looks_like_jwt(token) {
            access_token::validate(sh, token, key).await?
        } else {
            introspect::introspect(sh, token, key).await?
        };
        Ok(principal)
    }

    /// `principal`, when it has every scope each request needs.
    fn scoped(&self, principal: Principal) -> Result<Principal, AuthError> {
        let needed = &self.shared.cfg.scopes;
        if !principal.has_scopes(needed) {
            return Err(AuthError::InsufficientScope(needed.clone()));
        }
        Ok(principal)
    }
}

#[async_trait]
impl Authenticate for OAuth {
    /// A Bearer token (a DPoP-bound one is refused: it needs its proof).
    async fn authenticate(&self, headers: &http::HeaderMap) -> Result<Principal, AuthError> {
        let token = bearer_token(headers)?.ok_or(AuthError::Missing)?;
        let principal = self.principal_of(token).await?;
        self.unbound(principal)
    }

    /// A Bearer token, or a DPoP-bound one with its proof for this request.
    async fn authenticate_request(
        &self,
        method: &http::Method,
        headers: &http::HeaderMap,
    ) -> Result<Principal, AuthError> {
        match bound::dpop_token(headers)? {
            Some(token) => self.bound(method, headers, token).await,
            None => self.authenticate(headers).await,
        }
    }

    /// A Bearer token as [`authenticate`](Authenticate::authenticate) takes it; a DPoP-bound
    /// one without a new proof, its binding checked against the key proven at open
    /// (a stream's re-check: docs/auth.md, "DPoP-bound tokens").
    async fn reauthenticate(&self, headers: &http::HeaderMap, opened: &Principal) -> Result<Principal, AuthError> {
        match bound::dpop_token(headers)? {
            Some(token) => self.still_bound(token, opened).await,
            None => self.authenticate(headers).await,
        }
    }

    fn dpop_algs(&self) -> Option<String> {
        self.shared.dpop.as_ref().map(DpopVerifier::algs)
    }

    fn scheme(&self) -> &str {
        if self.shared.cfg.require_dpop { crate::protocol::oauth::dpop::SCHEME } else { "Bearer" }
    }

    fn now_ms(&self) -> u64 {
        self.shared.cfg.clock.now_ms()
    }

    /// A second at most: a token's answer depends on it alone, and a connection that
    /// keeps sending it is asked again (from the cache) once a second.
    /// Never for a DPoP-bound token: each request has a proof of its own to check.
    fn reuse_on_connection(&self, principal: &Principal) -> Option<std::time::Duration> {
        bound::confirmation(principal).is_none().then_some(REUSE_ON_CONNECTION)
    }
}
