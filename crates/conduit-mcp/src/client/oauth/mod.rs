//! OAuth 2.1 for MCP clients (both `2025-11-25` and `2026-07-28`).
//!
//! Give a [`ClientBuilder`](super::ClientBuilder) an [`OAuth`] and every
//! HTTP request carries its access token; when the server answers 401 the
//! client finds the authorization server the way the spec says and gets a
//! token, then sends the request again:
//!
//! 1. the protected resource metadata (RFC 9728) from the challenge's
//!    `resource_metadata`, else the path-inserted, else the root well-known
//!    URL; its `resource` must describe the server (else nothing is sent);
//! 2. the authorization server's metadata (RFC 8414, then OpenID discovery,
//!    in the spec's order), used only when its `issuer` is the one looked up;
//! 3. the client's identity there: pre-registered ([`OAuth::client_id`]),
//!    a Client ID Metadata Document ([`OAuth::client_metadata_url`]) when the
//!    server accepts them, else dynamic registration (`application_type`
//!    native for loopback redirects), kept per issuer;
//! 4. the authorization code with PKCE S256, `state` and `resource`, through
//!    an [`Authorizer`] (the person's browser: [`LoopbackBrowser`]); the
//!    answer's `iss` is checked (RFC 9207) before anything in it is used;
//! 5. the token (with `resource`), refreshed silently when it expires
//!    (same scopes, same client authentication).
//!
//! A 403 `insufficient_scope` re-authorizes with the union of the scopes
//! held and those asked for (at most twice per request, and never for
//! nothing new). Tokens and registrations live in a [`CredentialStore`]
//! ([`MemoryCredentials`] by default). Without an authorizer the client
//! only refreshes: a server that needs a new login answers
//! [`ClientError::LoginRequired`].
//!
//! Beyond the person's login, the enterprise flows: a machine's client
//! credentials authenticated with its own key ([`ClientAssertionKey`],
//! `private_key_jwt`, RFC 7523 §2.2: [`OAuth::client_credentials_jwt`],
//! or [`OAuth::client_assertion_key`] for any grant); a workload's identity
//! token as a JWT bearer grant ([`OAuth::workload_identity`], the token
//! read again from its [`JwtSource`] at each use); enterprise-managed
//! authorization ([`OAuth::enterprise`]: the person's ID token exchanged at
//! the identity provider for an ID-JAG, presented as a JWT bearer grant).
//! [`OAuth::dpop`] binds the tokens to a key of the credential's own
//! (RFC 9449) where the authorization server offers it: every token request
//! and every MCP request carries a fresh proof, and a server's `DPoP-Nonce`
//! is honoured with one retry.
//!
//! A login needs no MCP session: [`ClientBuilder::login`](super::ClientBuilder::login)
//! runs steps 1 to 5 from the server's URL alone (the metadata from the
//! challenge of one GET without credentials, else the well-known URLs) and
//! stores the tokens, so a server that answers `server/discover` without a
//! token can be logged into; [`ClientBuilder::logout`](super::ClientBuilder::logout)
//! revokes and forgets them.
//!
//! ```no_run
//! # async fn demo() -> Result<(), conduit_mcp::client::ClientError> {
//! use conduit_mcp::client::ClientBuilder;
//! use conduit_mcp::client::oauth::{LoopbackBrowser, OAuth};
//! let browser = LoopbackBrowser::new(|url| {
//!     eprintln!("open {url}");
//!     Ok(())
//! });
//! let client = ClientBuilder::http("https://mcp.example.com/mcp")
//!     .oauth(OAuth::new().authorizer(browser).client_name("my agent"))
//!     .connect()
//!     .await?;
//! # let _ = client; Ok(()) }
//! ```

mod assertion;
mod authorize;
mod discovery;
pub(crate) mod dpop;
mod enterprise;
mod fetch;
mod jwt_source;
mod login;
mod loopback;
mod register;
pub(crate) mod retry;
mod scope;
pub(crate) mod session;
mod store;
mod token;

pub use assertion::ClientAssertionKey;
pub use authorize::Authorizer;
pub use enterprise::{EnterpriseIdp, StoredIdp};
pub use jwt_source::JwtSource;
pub use loopback::{LoopbackBrowser, OpenUrl};
pub use scope::is_scope_token;
pub use store::{ClientRegistration, CredentialStore, MemoryCredentials, StoredTokens};

use super::error::ClientError;
use super::http_options::HttpOptions;
pub(crate) use login::login;
use register::Identity;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// Which grant gets the tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GrantKind {
    AuthorizationCode,
    ClientCredentials,
    /// RFC 7523 §2.1, the JWT from [`OAuth::bearer_assertion`].
    JwtBearer,
}

/// Where the JWT of a JWT bearer grant comes from.
#[derive(Debug, Clone)]
pub(crate) enum BearerAssertion {
    /// A workload's identity token, as it is.
    Workload(JwtSource),
    /// An ID-JAG, exchanged for the person's ID token at the identity provider.
    Enterprise(EnterpriseIdp),
}

/// How a client authorizes with OAuth 2.1 (see the [module docs](self)).
#[must_use]
#[derive(Clone)]
pub struct OAuth {
    pub(crate) store: Arc<dyn CredentialStore>,
    pub(crate) identity: Identity,
    pub(crate) authorizer: Option<Arc<dyn Authorizer>>,
    pub(crate) scopes: Option<Vec<String>>,
    /// The authorization servers this client may use (empty: the server's first).
    pub(crate) issuers: Vec<String>,
    pub(crate) grant: GrantKind,
    /// The JWT of the JWT bearer grant.
    pub(crate) bearer_assertion: Option<BearerAssertion>,
    /// Bind tokens to a DPoP key where the authorization server offers it.
    pub(crate) dpop: bool,
    pub(crate) clock: Arc<dyn Fn() -> i64 + Send + Sync>,
}

impl std::fmt::Debug for OAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuth")
            .field("store", &self.store)
            .field("client_id", &self.identity.client_id)
            .field("grant", &self.grant)
            .field("bearer_assertion", &self.bearer_assertion)
            .field("dpop", &self.dpop)
            .field("scopes", &self.scopes)
            .field("issuers", &self.issuers)
            .finish_non_exhaustive()
    }
}

fn system_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl Default for OAuth {
    fn default() -> Self {
        Self::new()
    }
}

impl OAuth {
    /// The authorization code grant, credentials in memory, no authorizer
    /// (stored tokens are used and refreshed; nobody is asked to log in).
    pub fn new() -> Self {
        Self {
            store: Arc::new(MemoryCredentials::new()),
            identity: Identity { client_name: "conduit-mcp client".into(), ..Identity::default() },
            authorizer: None,
            scopes: None,
            issuers: Vec::new(),
            grant: GrantKind::AuthorizationCode,
            bearer_assertion: None,
            dpop: false,
            clock: Arc::new(system_ms),
        }
    }

    /// The client credentials grant, the client authenticated by a JWT it
    /// signs with `key` (`private_key_jwt`), whose public half is registered
    /// for `client_id` at the authorization server.
    pub fn client_credentials_jwt(client_id: impl Into<String>, key: ClientAssertionKey) -> Self {
        let mut o = Self::new().client_id(client_id).client_assertion_key(key);
        o.grant = GrantKind::ClientCredentials;
        o
    }

    /// Workload identity federation: the JWT bearer grant (RFC 7523 §2.1)
    /// with the workload's identity token from `token` (read again at each
    /// use, so a rotated token is picked up), as the pre-registered `client_id`.
    /// A refused token is reported, never retried with another grant.
    pub fn workload_identity(client_id: impl Into<String>, token: JwtSource) -> Self {
        let mut o = Self::new().client_id(client_id);
        o.grant = GrantKind::JwtBearer;
        o.bearer_assertion = Some(BearerAssertion::Workload(token));
        o
    }

    /// Enterprise-managed authorization: the person's ID token is exchanged at
    /// the enterprise identity provider `idp` for an ID-JAG naming the MCP
    /// server's authorization server and resource (RFC 8693), which that
    /// authorization server trades for tokens (the JWT bearer grant). Give
    /// this client's registration there with [`client_id`](Self::client_id)
    /// and [`client_secret`](Self::client_secret).
    pub fn enterprise(idp: EnterpriseIdp) -> Self {
        let mut o = Self::new();
        o.grant = GrantKind::JwtBearer;
        o.bearer_assertion = Some(BearerAssertion::Enterprise(idp));
        o
    }

    /// Authenticates this client at the token endpoint with a JWT signed by
    /// `key` (`private_key_jwt`, RFC 7523 §2.2) instead of a secret.
    pub fn client_assertion_key(mut self, key: ClientAssertionKey) -> Self {
        self.identity.assertion_key = Some(key);
        self
    }

    /// Binds the tokens to a key of this credential's own (DPoP, RFC 9449)
    /// where the authorization server offers it (ES256 in its
    /// `dpop_signing_alg_values_supported`): the key is made at the first
    /// token request and kept with the tokens; each token request and each
    /// request to the MCP server carries a fresh proof.
    pub fn dpop(mut self, on: bool) -> Self {
        self.dpop = on;
        self
    }

    /// The client credentials grant (a machine, no person): `client_id` and
    /// its secret, pre-registered at the authorization server.
    pub fn client_credentials(client_id: impl Into<String>, client_secret: impl Into<String>) -> Self {
        let mut o = Self::new().client_id(client_id).client_secret(client_secret);
        o.grant = GrantKind::ClientCredentials;
        o
    }

    /// Where tokens and registrations are kept.
    pub fn store(mut self, store: impl CredentialStore + 'static) -> Self {
        self.store = Arc::new(store);
        self
    }

    /// Who takes the person through authorization (without one, the client never starts a login).
    pub fn authorizer(mut self, authorizer: impl Authorizer + 'static) -> Self {
        self.authorizer = Some(Arc::new(authorizer));
        self
    }

    /// A pre-registered client id (used before metadata documents and dynamic registration).
    pub fn client_id(mut self, id: impl Into<String>) -> Self {
        self.identity.client_id = Some(id.into());
        self
    }

    /// The pre-registered client's secret. It goes to whichever authorization
    /// server the MCP server names, unless [`issuer`](Self::issuer) says which
    /// may have it.
    pub fn client_secret(mut self, secret: impl Into<String>) -> Self {
        self.identity.client_secret = Some(secret.into());
        self
    }

    /// Uses this authorization server only (its issuer, exactly as the
    /// server's metadata names it); called again, any of those named. A server
    /// whose metadata names none of them gets nothing (no registration, no
    /// client secret, no authorization request):
    /// [`ClientError::IssuerNotAllowed`]. Without it, the first authorization
    /// server the metadata names is used.
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuers.push(issuer.into());
        self
    }

    /// The token endpoint authentication method of the pre-registered client
    /// (`client_secret_basic`, `client_secret_post`, `private_key_jwt`,
    /// `none`; default: `private_key_jwt` with a
    /// [key](Self::client_assertion_key), else chosen from what the
    /// authorization server supports).
    pub fn token_endpoint_auth_method(mut self, method: impl Into<String>) -> Self {
        self.identity.auth_method = Some(method.into());
        self
    }

    /// The https URL of this client's Client ID Metadata Document, used as
    /// its client id where the authorization server accepts them.
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.identity.metadata_url = Some(url.into());
        self
    }

    /// The name sent at dynamic registration.
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.identity.client_name = name.into();
        self
    }

    /// Asks for exactly these scopes (default: the challenge's, else what the server lists).
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes = Some(scopes.into_iter().map(Into::into).collect());
        self
    }

    /// The clock token expiry is checked against (milliseconds since the epoch).
    pub fn clock(mut self, now_ms: impl Fn() -> i64 + Send + Sync + 'static) -> Self {
        self.clock = Arc::new(now_ms);
        self
    }

    /// The tokens stored for the server at `server_url`.
    pub async fn tokens(&self, server_url: &str) -> Result<Option<StoredTokens>, ClientError> {
        self.store.tokens(&store_key(server_url)?).await
    }
}

/// The key tokens are stored under: the server URL, parsed and printed back.
pub(crate) fn store_key(server_url: &str) -> Result<String, ClientError> {
    Ok(super::http_options::parse_url("the server URL", server_url)?.to_string())
}

/// Logs out of the server at `server_url`: revokes its refresh token (and
/// access token) where the authorization server offers revocation, and
/// forgets them. Returns whether tokens were stored.
pub(crate) async fn logout(oauth: &OAuth, server_url: &str, opts: HttpOptions) -> Result<bool, ClientError> {
    let key = store_key(server_url)?;
    let Some(t) = oauth.store.tokens(&key).await? else { return Ok(false) };
    if let Some(endpoint) = t.revocation_endpoint.as_deref().and_then(|e| reqwest::Url::parse(e).ok()) {
        let fetch = fetch::Fetch::new(opts)?;
        let client = oauth.store.registration(&t.issuer).await?.filter(|r| r.client_id == t.client_id);
        let client =
            client.unwrap_or_else(|| ClientRegistration::new(&t.issuer, &t.client_id, None, "none", "unknown"));
        for (token, hint) in
            [(t.refresh_token.as_deref(), "refresh_token"), (Some(t.access_token.as_str()), "access_token")]
        {
            let Some(token) = token else { continue };
            let mut form = vec![("token", token), ("token_type_hint", hint)];
            let basic = fetch::client_auth(&mut form, &client, None);
            if let Err(e) = fetch.post_form(&endpoint, &form, basic).await {
                tracing::debug!("token revocation failed: {e}");
            }
        }
    }
    oauth.store.remove_tokens(&key).await?;
    Ok(true)
}
