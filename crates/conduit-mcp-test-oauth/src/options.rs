//! What the authorization server is told and answers: its static clients,
//! start options, per-resource settings, keys, faults, counts and tokens.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A client registered at the AS from the start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StaticClient {
    /// `client_id`.
    pub id: &'static str,
    /// `client_secret` (sent with `client_secret_basic`); `None` for a public client.
    pub secret: Option<&'static str>,
}

/// `rs`: the resource server's credentials, for RFC 7662 introspection.
pub const RESOURCE_SERVER: StaticClient = StaticClient { id: "rs", secret: Some("rs-secret") };
/// `svc`: a machine client (client_credentials), every resource scope.
pub const SERVICE: StaticClient = StaticClient { id: "svc", secret: Some("svc-secret") };
/// `app`: a public native client; redirect URIs `http://127.0.0.1/callback` and
/// `http://localhost/callback` on any port.
pub const APP: StaticClient = StaticClient { id: "app", secret: None };
/// `web`: a confidential client with the same redirect URIs as [`APP`].
pub const WEB: StaticClient = StaticClient { id: "web", secret: Some("web-secret") };

/// `idp-client`: this client at the identity provider that stands beside the AS
/// (`/idp/token`, its RFC 8693 token exchange for ID-JAGs).
pub const IDP_CLIENT: StaticClient = StaticClient { id: "idp-client", secret: Some("idp-secret") };

/// The JWT bearer grant type (RFC 7523 §2.1), for the `grant_types` of a client that uses it.
pub const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// How the AS is configured at start (`tests/oauth/as.mjs` documents each key).
#[derive(Debug, Clone, Default, Serialize)]
#[non_exhaustive]
pub struct Options {
    /// `"ES256"` (default) or `"RS256"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alg: Option<String>,
    /// The account a login without `login_hint` signs in as (default `alice`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// Access-token lifetime in seconds (default 600).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access_token_ttl: Option<u64>,
    /// How long a `slow` fault holds a request, in milliseconds (default 30 000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slow_ms: Option<u64>,
    /// Extra static clients, as oidc-provider client metadata.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub clients: Vec<Value>,
    /// Every DPoP proof at the token endpoint must carry the AS's nonce (RFC 9449 §8).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub dpop_nonce: bool,
    /// The client of the AS that the identity provider's ID-JAGs name (default `ent`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id_jag_client: Option<String>,
}

impl Options {
    /// Signing keys of this algorithm (`"ES256"` or `"RS256"`).
    pub fn alg(mut self, alg: &str) -> Self {
        self.alg = Some(alg.to_owned());
        self
    }

    /// The default account.
    pub fn account(mut self, account: &str) -> Self {
        self.account = Some(account.to_owned());
        self
    }

    /// Access-token lifetime.
    pub fn access_token_ttl(mut self, seconds: u64) -> Self {
        self.access_token_ttl = Some(seconds);
        self
    }

    /// How long a `slow` fault holds a request.
    pub fn slow_ms(mut self, ms: u64) -> Self {
        self.slow_ms = Some(ms);
        self
    }

    /// Makes every DPoP proof at the token endpoint carry the AS's nonce.
    pub fn dpop_nonce(mut self) -> Self {
        self.dpop_nonce = true;
        self
    }

    /// The client of the AS the identity provider's ID-JAGs name.
    pub fn id_jag_client(mut self, client_id: &str) -> Self {
        self.id_jag_client = Some(client_id.to_owned());
        self
    }

    /// An extra static client (oidc-provider client metadata).
    pub fn client(mut self, metadata: Value) -> Self {
        self.clients.push(metadata);
        self
    }
}

/// How the AS treats one resource indicator.
#[derive(Debug, Clone, Default, Serialize)]
#[non_exhaustive]
pub struct ResourceSettings {
    /// `"jwt"` (default) or `"opaque"` (only introspection can read it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// The scopes the AS may grant for it (default: every resource scope).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scopes: Option<Vec<String>>,
    /// Access-token lifetime in seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl: Option<u64>,
}

impl ResourceSettings {
    /// Opaque access tokens for this resource.
    pub fn opaque() -> Self {
        Self { format: Some("opaque".into()), ..Self::default() }
    }
}

/// Which key a minted token is signed with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Key {
    /// The key the AS signs with now (published in its JWKS).
    Current,
    /// The key before the last rotation (published only if the rotation kept it).
    Previous,
    /// A fresh key the AS never published.
    Unknown,
    /// No signature: `alg: none`.
    None,
    /// HS256 with the current public key's PEM as the secret, under the current `kid`.
    Hs256,
}

/// How an endpoint family misbehaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Fault {
    /// Served normally.
    #[default]
    Ok,
    /// 503.
    Down,
    /// Held for `slow_ms`, then 503.
    Slow,
    /// 200 with a body that is not JSON.
    Garbage,
    /// Served, with `issuer` replaced by another one (metadata only).
    WrongIssuer,
}

impl Fault {
    pub(crate) fn wire(self) -> &'static str {
        match self {
            Fault::Ok => "ok",
            Fault::Down => "down",
            Fault::Slow => "slow",
            Fault::Garbage => "garbage",
            Fault::WrongIssuer => "wrong_issuer",
        }
    }
}

/// Faults per endpoint family.
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct Faults {
    /// `/jwks`.
    pub jwks: Fault,
    /// Both discovery documents.
    pub metadata: Fault,
    /// `/token/introspection`.
    pub introspection: Fault,
}

impl Faults {
    /// Everything served normally.
    pub fn none() -> Self {
        Self::default()
    }

    /// Sets the JWKS fault.
    pub fn jwks(mut self, f: Fault) -> Self {
        self.jwks = f;
        self
    }

    /// Sets the metadata fault.
    pub fn metadata(mut self, f: Fault) -> Self {
        self.metadata = f;
        self
    }

    /// Sets the introspection fault.
    pub fn introspection(mut self, f: Fault) -> Self {
        self.introspection = f;
        self
    }
}

/// Requests the AS served per endpoint family since start (or the last reset).
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// `/jwks`.
    pub jwks: u64,
    /// The discovery documents.
    pub metadata: u64,
    /// `/token/introspection`.
    pub introspection: u64,
    /// `/token`.
    pub token: u64,
    /// ID-JAGs the identity provider issued (`/idp/token`).
    #[serde(default)]
    pub exchange: u64,
    /// JWT bearer grants that issued an access token.
    #[serde(default)]
    pub jwt_bearer: u64,
}

/// A token endpoint's answer.
#[derive(Debug, Clone, Deserialize)]
#[non_exhaustive]
pub struct TokenResponse {
    /// The access token.
    pub access_token: String,
    /// `Bearer`.
    pub token_type: String,
    /// Seconds until it expires.
    #[serde(default)]
    pub expires_in: Option<u64>,
    /// The granted scopes.
    #[serde(default)]
    pub scope: Option<String>,
    /// A refresh token (granted with `offline_access`).
    #[serde(default)]
    pub refresh_token: Option<String>,
}
