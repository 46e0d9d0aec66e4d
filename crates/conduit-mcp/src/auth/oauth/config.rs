//! What an OAuth resource server is configured with: the one canonical
//! resource URI, the authorization servers it trusts, the scopes every request
//! needs, the scope hierarchy, and the cache and clock settings.

use crate::clock::{Clock, SystemClock};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// The largest clock leeway accepted for `exp`/`nbf` (a larger one is refused).
pub const MAX_LEEWAY: Duration = Duration::from_secs(300);

/// Credentials the resource server presents to one authorization server
/// (`client_secret_basic`), for RFC 7662 introspection. They belong to that
/// issuer: no other is ever sent them.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientCredentials {
    /// The client id registered at the authorization server.
    pub id: String,
    secret: String,
}

impl ClientCredentials {
    /// A client id and its secret.
    pub fn new(id: impl Into<String>, secret: impl Into<String>) -> Self {
        Self { id: id.into(), secret: secret.into() }
    }

    pub(crate) fn secret(&self) -> &str {
        &self.secret
    }
}

impl std::fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCredentials").field("id", &self.id).field("secret", &"…").finish()
    }
}

/// One authorization server whose tokens are accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Issuer {
    /// The issuer identifier, exactly as the AS's metadata and tokens say it.
    pub url: String,
    /// This issuer's credentials for introspecting opaque tokens (`None`: this issuer
    /// is never asked about one, and only its JWTs are accepted).
    pub introspection_client: Option<ClientCredentials>,
}

impl Issuer {
    /// An issuer without introspection.
    pub fn new(url: impl Into<String>) -> Self {
        Self { url: url.into(), introspection_client: None }
    }

    /// Introspects opaque tokens at this issuer with these credentials (its own).
    #[must_use]
    pub fn introspection_client(mut self, id: impl Into<String>, secret: impl Into<String>) -> Self {
        self.introspection_client = Some(ClientCredentials::new(id, secret));
        self
    }
}

/// The configuration of an OAuth 2.1 resource server ([`OAuth`](super::OAuth)).
///
/// ```
/// use conduit_mcp::auth::oauth::OAuthConfig;
///
/// let cfg = OAuthConfig::new("https://auth.example.com", "https://mcp.example.com/mcp")
///     .scope("mcp:read")
///     .implies("mcp:admin", ["mcp:deploy", "mcp:read"])
///     .introspection_client_for("https://auth.example.com", "mcp-server", "its-secret");
/// # let _ = cfg;
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
#[must_use]
pub struct OAuthConfig {
    /// The canonical URI of the endpoint (RFC 8707 resource indicator): the PRM
    /// `resource`, what clients send as `resource`, and the `aud` tokens must carry.
    pub resource: String,
    /// Trusted authorization servers (at least one).
    pub issuers: Vec<Issuer>,
    /// Scopes every request needs; advertised as `scopes_supported` and in the 401 challenge.
    pub scopes: Vec<String>,
    /// Broader scope → the narrower scopes it implies (transitively).
    pub scope_hierarchy: BTreeMap<String, Vec<String>>,
    /// Scopes per tool name, for applications that configure them here (the
    /// reference server applies them to its tools).
    pub tool_scopes: BTreeMap<String, Vec<String>>,
    /// The PRM URL named in challenges (default: the path-inserted well-known URL of `resource`).
    pub resource_metadata_url: Option<String>,
    /// `resource_name` in the PRM document.
    pub resource_name: Option<String>,
    /// Clock skew allowed on `exp` and `nbf` (default 60 s, at most [`MAX_LEEWAY`]).
    pub leeway: Duration,
    /// How long fetched signing keys are used before they are fetched again (default 10 min).
    pub keys_ttl: Duration,
    /// The least time between two fetches of an issuer's keys or metadata (default 30 s):
    /// a flood of unknown `kid`s costs the AS one request per interval.
    pub refetch_interval: Duration,
    /// How long an introspection answer is reused (default 60 s, never past the token's `exp`).
    pub introspection_ttl: Duration,
    /// Bytes of introspection answers kept at most (default 4 MiB).
    pub introspection_cache_bytes: usize,
    /// Bytes of verified JWTs' principals kept at most (default 4 MiB): a token seen
    /// again is not verified again until its `exp` (with the leeway) or, if sooner, until
    /// the keys that verified it are [`keys_ttl`](Self::keys_ttl) old.
    pub jwt_cache_bytes: usize,
    /// How long a refused opaque token (inactive, or active but not for this server) is
    /// answered 401 without asking again (default 10 s).
    pub introspection_inactive_ttl: Duration,
    /// Bytes of refused tokens kept at most (default 256 KiB: 128 bytes each, so 2048).
    pub introspection_inactive_cache_bytes: usize,
    /// Introspections one issuer is asked at once (default 8); a token that would be one
    /// more gets 503 at once (the cached ones are not asked, and never wait).
    pub max_concurrent_introspections: usize,
    /// After an introspection fails (an error answer, a timeout), how long that issuer is not
    /// asked (default 5 s): uncached opaque tokens get 503 at once meanwhile; then one request
    /// at a time tries again until one succeeds.
    pub introspection_backoff: Duration,
    /// Timeout of each request to an authorization server (default 5 s).
    pub fetch_timeout: Duration,
    /// The clock tokens are checked against.
    pub clock: Arc<dyn Clock>,
    /// DPoP-bound tokens (RFC 9449) are taken, their proofs checked so (default: none;
    /// a bound token is then refused, with any scheme).
    pub dpop: Option<super::DpopConfig>,
    /// Every token must come with a DPoP proof (`Authorization: DPoP`); Bearer is refused.
    pub require_dpop: bool,
    /// Where the `jti`s of DPoP proofs are remembered (default: this process's memory,
    /// [`DpopConfig::replay_bytes`](super::DpopConfig::replay_bytes) of it). Nodes behind one
    /// load balancer need one shared store, or a proof one took is taken by the next.
    pub dpop_replay: Option<Arc<dyn super::DpopReplayStore>>,
    /// Why the introspection credentials given cannot be placed (read by `OAuth::new`).
    pub(super) misplaced_introspection_client: Option<String>,
}

impl OAuthConfig {
    /// Tokens from `issuer` for `resource`, with the defaults.
    pub fn new(issuer: impl Into<String>, resource: impl Into<String>) -> Self {
        Self {
            resource: resource.into(),
            issuers: vec![Issuer::new(issuer)],
            scopes: Vec::new(),
            scope_hierarchy: BTreeMap::new(),
            tool_scopes: BTreeMap::new(),
            resource_metadata_url: None,
            resource_name: None,
            leeway: Duration::from_secs(60),
            keys_ttl: Duration::from_secs(600),
            refetch_interval: Duration::from_secs(30),
            introspection_ttl: Duration::from_secs(60),
            introspection_cache_bytes: 4 * 1024 * 1024,
            jwt_cache_bytes: 4 * 1024 * 1024,
            introspection_inactive_ttl: Duration::from_secs(10),
            introspection_inactive_cache_bytes: 256 * 1024,
            max_concurrent_introspections: 8,
            introspection_backoff: Duration::from_secs(5),
            fetch_timeout: Duration::from_secs(5),
            clock: Arc::new(SystemClock),
            dpop: None,
            require_dpop: false,
            dpop_replay: None,
            misplaced_introspection_client: None,
        }
    }

    /// Also trusts tokens from `issuer`.
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuers.push(Issuer::new(issuer));
        self
    }

    /// Introspects opaque tokens at the one issuer trusted so far, with these credentials.
    /// They belong to that issuer alone: with several issuers, say whose they are with
    /// [`introspection_client_for`](Self::introspection_client_for) (here [`OAuth::new`](super::OAuth::new)
    /// refuses the configuration).
    pub fn introspection_client(mut self, id: impl Into<String>, secret: impl Into<String>) -> Self {
        match self.issuers.as_mut_slice() {
            [only] => only.introspection_client = Some(ClientCredentials::new(id, secret)),
            several => {
                self.misplaced_introspection_client = Some(format!(
                    "{} issuers are trusted: name the one these credentials belong to (introspection_client_for)",
                    several.len()
                ));
            }
        }
        self
    }

    /// Introspects opaque tokens at `issuer` (one already trusted) with its credentials;
    /// other issuers are never sent them. An issuer not trusted makes
    /// [`OAuth::new`](super::OAuth::new) refuse the configuration.
    pub fn introspection_client_for(mut self, issuer: &str, id: impl Into<String>, secret: impl Into<String>) -> Self {
        match self.issuers.iter_mut().find(|i| i.url == issuer) {
            Some(i) => i.introspection_client = Some(ClientCredentials::new(id, secret)),
            None => {
                self.misplaced_introspection_client =
                    Some(format!("credentials for {issuer:?}, which is not a trusted issuer"));
            }
        }
        self
    }

    /// Adds a scope every request needs.
    pub fn scope(mut self, scope: impl Into<String>) -> Self {
        self.scopes.push(scope.into());
        self
    }

    /// `broad` implies each of `narrower` (a token with `broad` satisfies them).
    pub fn implies<I, S>(mut self, broad: impl Into<String>, narrower: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scope_hierarchy.entry(broad.into()).or_default().extend(narrower.into_iter().map(Into::into));
        self
    }

    /// Records that tool `name` needs `scopes`.
    pub fn tool_scope(mut self, name: impl Into<String>, scope: impl Into<String>) -> Self {
        self.tool_scopes.entry(name.into()).or_default().push(scope.into());
        self
    }

    /// The scopes recorded for tool `name` (empty when none).
    pub fn scopes_of_tool(&self, name: &str) -> Vec<String> {
        self.tool_scopes.get(name).cloned().unwrap_or_default()
    }

    /// Names the PRM URL in challenges explicitly (behind a proxy that rewrites paths).
    pub fn resource_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.resource_metadata_url = Some(url.into());
        self
    }

    /// Sets the clock skew allowed on `exp` and `nbf`.
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// Sets how long signing keys are used before they are fetched again.
    pub fn keys_ttl(mut self, ttl: Duration) -> Self {
        self.keys_ttl = ttl;
        self
    }

    /// Sets the least time between two fetches from one issuer.
    pub fn refetch_interval(mut self, interval: Duration) -> Self {
        self.refetch_interval = interval;
        self
    }

    /// Sets how long an introspection answer is reused.
    pub fn introspection_ttl(mut self, ttl: Duration) -> Self {
        self.introspection_ttl = ttl;
        self
    }

    /// Sets how long a refused opaque token is refused without asking again.
    pub fn introspection_inactive_ttl(mut self, ttl: Duration) -> Self {
        self.introspection_inactive_ttl = ttl;
        self
    }

    /// Sets how many introspections one issuer is asked at once.
    pub fn max_concurrent_introspections(mut self, n: usize) -> Self {
        self.max_concurrent_introspections = n;
        self
    }

    /// Sets how long an issuer is not asked after an introspection failed.
    pub fn introspection_backoff(mut self, backoff: Duration) -> Self {
        self.introspection_backoff = backoff;
        self
    }

    /// Sets the timeout of each request to an authorization server.
    pub fn fetch_timeout(mut self, timeout: Duration) -> Self {
        self.fetch_timeout = timeout;
        self
    }

    /// Checks tokens against this clock (tests inject a `ManualClock`).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Takes DPoP-bound tokens, their proofs checked with `dpop`.
    pub fn dpop(mut self, dpop: super::DpopConfig) -> Self {
        self.dpop = Some(dpop);
        self
    }

    /// Remembers the `jti`s of DPoP proofs in `store` (shared by every node) instead of
    /// this process's memory.
    pub fn dpop_replay_store(mut self, store: Arc<dyn super::DpopReplayStore>) -> Self {
        self.dpop_replay = Some(store);
        self
    }

    /// Refuses tokens without a DPoP proof (and takes DPoP with the defaults, unless set).
    pub fn require_dpop(mut self, required: bool) -> Self {
        self.require_dpop = required;
        if required && self.dpop.is_none() {
            self.dpop = Some(super::DpopConfig::default());
        }
        self
    }
}
