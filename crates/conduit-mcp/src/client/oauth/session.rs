//! One server's OAuth state inside a client: the token every request
//! carries, and what to do when the server refuses it (refresh, discover and
//! authorize again, step up to more scope), one renewal at a time.
//!
//! Renewing is bounded so that a server cannot turn its refusals into a
//! storm at the authorization server: a 401 is answered by a refresh (no
//! discovery: the refresh token goes back where it came from); discovery is
//! kept for the session; a 401 on a token this session obtained less than
//! [`FRESH_MS`] ago is a refusal, after one fresh look at the metadata in
//! case the server moved to another authorization server (SEP-2352); and a
//! token about to expire is renewed before use at most once per [`FRESH_MS`].

use super::authorize::{self, Request};
use super::discovery::{self, AuthServer, ResourceMetadata};
use super::dpop::{DpopKey, Nonce};
use super::fetch::Fetch;
use super::register;
use super::retry::Retry;
use super::scope;
use super::store::{ClientRegistration, StoredTokens};
use super::token::{self, Grant, Tokens};
use super::{BearerAssertion, EnterpriseIdp, GrantKind, JwtSource, OAuth};
use crate::client::error::ClientError;
use crate::client::http_options::HttpOptions;
use crate::protocol::oauth::challenge::{self, Challenge};
use crate::protocol::oauth::dpop::{SCHEME as DPOP_SCHEME, USE_DPOP_NONCE};
use crate::protocol::oauth::grants::JWT_BEARER_GRANT;
use reqwest::Url;
use reqwest::header::HeaderMap;
use tokio::sync::Mutex;

mod present;

/// How close to its expiry a token is refreshed before use.
const EXPIRY_MARGIN_MS: i64 = 30_000;
/// How many times one request may re-authorize for more scope.
const MAX_STEP_UPS: u32 = 2;
/// How many 401s one request answers by renewing the token.
const MAX_UNAUTHORIZED: u32 = 2;
/// A 401 on a token this session obtained less than this long ago is a
/// refusal: renewing it again would only repeat it.
const FRESH_MS: i64 = 10_000;
/// How many `use_dpop_nonce` refusals one request answers with the server's new nonce.
const MAX_NONCE_RETRIES: u32 = 1;

/// The OAuth side of one client connection.
#[derive(Debug)]
pub(crate) struct Session {
    cfg: OAuth,
    server: Url,
    /// The store key: the server URL as given.
    key: String,
    fetch: Fetch,
    state: Mutex<State>,
    /// The authorization server's last `DPoP-Nonce`.
    pub(super) as_nonce: Nonce,
    /// The MCP server's last `DPoP-Nonce`.
    pub(super) rs_nonce: Nonce,
}

#[derive(Debug, Default)]
struct State {
    loaded: bool,
    tokens: Option<StoredTokens>,
    /// The DPoP key of the stored tokens, read once.
    key: Option<DpopKey>,
    /// When this session last obtained a token (its clock, in ms).
    obtained_at: Option<i64>,
    /// What discovery found, kept for the session.
    discovered: Option<Discovered>,
}

/// The result of discovery, and the `resource_metadata` URL it started from.
#[derive(Debug, Clone)]
struct Discovered {
    named: Option<String>,
    prm: ResourceMetadata,
    asm: AuthServer,
}

impl Session {
    pub(crate) fn new(cfg: OAuth, server: Url, opts: HttpOptions) -> Result<Self, ClientError> {
        Ok(Self {
            cfg,
            key: server.to_string(),
            server,
            fetch: Fetch::new(opts)?,
            state: Mutex::default(),
            as_nonce: Nonce::default(),
            rs_nonce: Nonce::default(),
        })
    }

    fn now(&self) -> i64 {
        (self.cfg.clock)()
    }

    /// Now, in seconds (the `iat` of proofs and assertions).
    pub(super) fn now_s(&self) -> i64 {
        self.now().div_euclid(1000)
    }

    async fn load(&self, st: &mut State) -> Result<(), ClientError> {
        if !st.loaded {
            st.tokens = self.cfg.store.tokens(&self.key).await?;
            st.loaded = true;
        }
        Ok(())
    }

    /// Whether this session obtained its token less than [`FRESH_MS`] ago.
    fn fresh(&self, st: &State) -> bool {
        st.tokens.is_some() && st.obtained_at.is_some_and(|at| self.now() - at < FRESH_MS)
    }

    /// The tokens held now (loaded from the store on first use): the task
    /// ledger names the principal from them.
    pub(crate) async fn tokens_now(&self) -> Result<Option<StoredTokens>, ClientError> {
        let mut st = self.state.lock().await;
        self.load(&mut st).await?;
        Ok(st.tokens.clone())
    }

    /// The access token to send now, and the DPoP key it is bound to
    /// (refreshed first when it has expired or is about to, at most once per
    /// [`FRESH_MS`]: an authorization server that issues tokens expiring at
    /// once cannot make every request a refresh).
    pub(super) async fn current(&self) -> Result<Option<(String, Option<DpopKey>)>, ClientError> {
        let mut st = self.state.lock().await;
        self.load(&mut st).await?;
        let expired =
            st.tokens.as_ref().is_some_and(|t| t.expires_at_ms.is_some_and(|e| self.now() + EXPIRY_MARGIN_MS >= e));
        if expired
            && !self.fresh(&st)
            && let Err(e) = self.renew_silently(&mut st).await
        {
            tracing::debug!("could not renew an expired token before use: {e}");
        }
        let bound = st.tokens.as_ref().is_some_and(|t| t.dpop_bound);
        let key = if bound { Self::key_of(&mut st)? } else { None };
        Ok(st.tokens.as_ref().map(|t| (t.access_token.clone(), key)))
    }

    /// Answers a 401 or 403 from the server (its `WWW-Authenticate` values
    /// `header`, its `headers`); `Ok(true)`: send the request again.
    pub(crate) async fn renew(
        &self,
        status: u16,
        used: Option<&str>,
        header: &str,
        headers: &HeaderMap,
        retry: &mut Retry,
    ) -> Result<bool, ClientError> {
        // RFC 9449 §9: the server wants its nonce in the proof; one more try with it.
        let wants_nonce = status == 401
            && challenge::parse_scheme(header, DPOP_SCHEME).is_some_and(|c| c.error.as_deref() == Some(USE_DPOP_NONCE));
        if wants_nonce && self.rs_nonce.keep(headers) && retry.nonces < MAX_NONCE_RETRIES {
            retry.nonces += 1;
            return Ok(true);
        }
        let challenge = challenge::parse(header);
        if let Some(asked) = challenge.as_ref().and_then(|c| c.scopes.as_deref()) {
            scope::check("the server's challenge", asked)?;
        }
        if status == 403 && !challenge.as_ref().is_some_and(Challenge::insufficient_scope) {
            return Ok(false);
        }
        let mut st = self.state.lock().await;
        self.load(&mut st).await?;
        let current = st.tokens.as_ref().map(|t| t.access_token.as_str());
        if current.is_some() && current != used {
            return Ok(true); // another request renewed it meanwhile
        }
        if status == 401 {
            retry.unauthorized += 1;
            if retry.unauthorized > MAX_UNAUTHORIZED {
                return Err(ClientError::Unauthorized { status });
            }
            let fresh = self.fresh(&st);
            if fresh {
                // Only a server that moved to another authorization server can
                // cure this; any other refusal of a token just issued stands.
                let found = self.discover(&mut st, challenge.as_ref(), true).await?;
                if st.tokens.as_ref().is_some_and(|t| t.issuer == found.asm.issuer) {
                    return Err(ClientError::Unauthorized { status });
                }
            }
            self.obtain(&mut st, challenge.as_ref(), None, !fresh && retry.unauthorized == 1).await?;
            return Ok(true);
        }
        retry.step_ups += 1;
        let asked = challenge.and_then(|c| c.scopes).unwrap_or_default();
        let had = st.tokens.as_ref().map(|t| t.scopes.clone()).unwrap_or_default();
        let mut wanted = had.clone();
        wanted.extend(asked.iter().filter(|s| !had.contains(s)).cloned());
        if retry.step_ups > MAX_STEP_UPS || wanted.len() == had.len() {
            return Err(ClientError::OAuth(format!(
                "the server still refuses for insufficient scope (asks for {:?}) after the client requested {:?}",
                asked.join(" "),
                had.join(" ")
            )));
        }
        if self.cfg.authorizer.is_none() && self.cfg.grant == GrantKind::AuthorizationCode {
            return Err(ClientError::ScopeRequired { server: self.key.clone(), scopes: wanted });
        }
        // A refresh cannot add scope: authorize again with the union (SEP-2350).
        let challenge = Challenge { scopes: Some(asked), ..Challenge::default() };
        self.obtain(&mut st, Some(&challenge), Some(wanted), false).await?;
        Ok(true)
    }

    /// A new login, whatever is stored: discovery (from `challenge`, else the
    /// well-known metadata), a new grant, the tokens stored and returned.
    pub(crate) async fn login(&self, challenge: Option<&Challenge>) -> Result<StoredTokens, ClientError> {
        let mut st = self.state.lock().await;
        *st = State { loaded: true, ..State::default() };
        self.obtain(&mut st, challenge, None, false).await?;
        st.tokens.clone().ok_or_else(|| ClientError::LoginRequired(self.key.clone()))
    }

    /// Refreshes (or repeats a grant no person takes part in) without
    /// discovery, from what was stored; the DPoP binding is kept.
    async fn renew_silently(&self, st: &mut State) -> Result<(), ClientError> {
        let Some(old) = st.tokens.clone() else { return Ok(()) };
        let endpoint = Url::parse(&old.token_endpoint).map_err(|e| ClientError::OAuth(e.to_string()))?;
        let client = self.stored_client(&old.issuer, &old.client_id).await?;
        let key = Self::key_of(st)?;
        let ep = self.endpoint(&endpoint, &old.issuer, &client, key.as_ref());
        let assertion;
        let grant = match (&old.refresh_token, old.grant_type.as_str()) {
            (Some(r), _) => Grant::Refresh(r),
            (None, "client_credentials") => Grant::ClientCredentials,
            (None, JWT_BEARER_GRANT) => {
                assertion = self.bearer_assertion(&old.issuer, &old.resource, &old.scopes, Some(&old)).await?;
                Grant::JwtBearer(&assertion)
            }
            (None, _) => return Err(ClientError::OAuth("the token expired and there is no refresh token".into())),
        };
        match token::request(&ep, grant, &old.resource, &old.scopes).await {
            Ok(t) => self.keep(st, &old, t).await,
            Err(e) => {
                // Another process may have rotated the refresh token meanwhile.
                if let Some(fresh) = self.cfg.store.tokens(&self.key).await?
                    && fresh.access_token != old.access_token
                {
                    st.tokens = Some(fresh);
                    return Ok(());
                }
                Err(e)
            }
        }
    }

    /// The JWT of a JWT bearer grant at the authorization server `issuer`
    /// for `resource`: the workload's token as it is now, or an ID-JAG
    /// fresh from the identity provider.
    /// Without one configured, what the `stored` tokens name is used: the workload
    /// token's source, or the identity provider (its ID token and secret read from
    /// their sources).
    async fn bearer_assertion(
        &self,
        issuer: &str,
        resource: &str,
        scopes: &[String],
        stored: Option<&StoredTokens>,
    ) -> Result<String, ClientError> {
        match &self.cfg.bearer_assertion {
            Some(BearerAssertion::Workload(source)) => source.read(),
            Some(BearerAssertion::Enterprise(idp)) => idp.exchange(&self.fetch, issuer, resource, scopes).await,
            None => {
                let workload = stored.and_then(|t| t.jwt_source.as_deref()).and_then(JwtSource::from_stored);
                let idp = stored.and_then(|t| t.enterprise_idp.as_ref()).and_then(EnterpriseIdp::from_stored);
                match (workload, idp) {
                    (Some(source), _) => source.read(),
                    (None, Some(idp)) => idp.exchange(&self.fetch, issuer, resource, scopes).await,
                    (None, None) => Err(ClientError::OAuth(
                        "the JWT bearer grant needs a workload token or an identity provider: log in again".into(),
                    )),
                }
            }
        }
    }

    /// The client a stored token was issued to, at its issuer.
    async fn stored_client(&self, issuer: &str, client_id: &str) -> Result<ClientRegistration, ClientError> {
        if let Some(r) = self.cfg.store.registration(issuer).await?.filter(|r| r.client_id == client_id) {
            return Ok(r);
        }
        let id = &self.cfg.identity;
        Ok(match (&id.client_id, &id.metadata_url) {
            (Some(c), _) if c == client_id => ClientRegistration::new(
                issuer,
                c,
                id.client_secret.clone(),
                id.pre_registered_method(None),
                "pre-registered",
            ),
            _ => ClientRegistration::new(issuer, client_id, None, "none", "metadata-document"),
        })
    }

    /// Stores a token response, keeping what it does not repeat: the scope
    /// granted replaces the one asked for when the answer names it.
    async fn keep(&self, st: &mut State, base: &StoredTokens, t: Tokens) -> Result<(), ClientError> {
        let mut new = base.clone();
        new.access_token = t.access_token;
        if t.refresh_token.is_some() {
            new.refresh_token = t.refresh_token;
        }
        if let Some(mut granted) = t.scope {
            // `offline_access` asks for a refresh token, not for access: an authorization server
            // that names only the access token's scopes (with a resource indicator) granted it when
            // a refresh token came with them.
            let offline = "offline_access";
            if base.scopes.iter().any(|s| s == offline)
                && new.refresh_token.is_some()
                && !granted.iter().any(|s| s == offline)
            {
                granted.push(offline.to_owned());
            }
            new.scopes = granted;
        }
        new.dpop_bound = t.dpop_bound;
        let now = self.now();
        new.expires_at_ms = t.expires_in.map(|s| now.saturating_add(s.saturating_mul(1000)));
        self.cfg.store.save_tokens(&self.key, &new).await?;
        st.tokens = Some(new);
        st.obtained_at = Some(now);
        Ok(())
    }

    /// The protected resource metadata and the authorization server: kept
    /// for the session, found again when `fresh` or when the challenge names
    /// another metadata URL.
    async fn discover(
        &self,
        st: &mut State,
        challenge: Option<&Challenge>,
        fresh: bool,
    ) -> Result<Discovered, ClientError> {
        let named = challenge.and_then(|c| c.resource_metadata.clone());
        if let Some(d) = st.discovered.as_ref().filter(|d| !fresh && (named.is_none() || d.named == named)) {
            return Ok(d.clone());
        }
        let prm = discovery::protected_resource(&self.fetch, &self.server, challenge).await?;
        let issuer = self.choose_issuer(&prm)?;
        let asm = discovery::authorization_server(&self.fetch, issuer).await?;
        let found = Discovered { named, prm, asm };
        st.discovered = Some(found.clone());
        Ok(found)
    }

    /// The authorization server to use of those the metadata names: the
    /// first, or the first this client was told it may use ([`OAuth::issuer`]).
    fn choose_issuer<'a>(&self, prm: &'a ResourceMetadata) -> Result<&'a str, ClientError> {
        let named = prm.authorization_servers.first().map_or("", String::as_str);
        if self.cfg.issuers.is_empty() {
            return Ok(named);
        }
        prm.authorization_servers.iter().find(|a| self.cfg.issuers.contains(a)).map(String::as_str).ok_or_else(|| {
            ClientError::IssuerNotAllowed {
                server: self.key.clone(),
                issuer: named.to_owned(),
                allowed: self.cfg.issuers.clone(),
            }
        })
    }

    /// The scopes to ask for: the challenge's, else all the resource lists,
    /// else none; `offline_access` added when the AS offers it (user grants).
    fn select_scopes(&self, challenge: Option<&Challenge>, prm: &ResourceMetadata, asm: &AuthServer) -> Vec<String> {
        if let Some(s) = &self.cfg.scopes {
            return s.clone();
        }
        let mut scopes = match challenge.and_then(|c| c.scopes.clone()).filter(|s| !s.is_empty()) {
            Some(s) => s,
            None => prm.scopes_supported.clone().unwrap_or_default(),
        };
        let offline = asm.scopes_supported.as_ref().is_some_and(|s| s.iter().any(|s| s == "offline_access"));
        if offline && self.cfg.grant == GrantKind::AuthorizationCode && !scopes.iter().any(|s| s == "offline_access") {
            scopes.push("offline_access".into());
        }
        scopes
    }

    /// Discovers the authorization server and gets a token: a refresh when
    /// allowed and possible, else a new grant (asking the person, through the
    /// [`Authorizer`](super::Authorizer), for the authorization code grant).
    async fn obtain(
        &self,
        st: &mut State,
        challenge: Option<&Challenge>,
        scopes: Option<Vec<String>>,
        allow_refresh: bool,
    ) -> Result<(), ClientError> {
        let interactive = self.cfg.authorizer.is_some() || self.cfg.grant != GrantKind::AuthorizationCode;
        if !interactive && st.tokens.as_ref().is_none_or(|t| t.refresh_token.is_none()) {
            return Err(ClientError::LoginRequired(self.key.clone()));
        }
        // A refresh needs no discovery: the refresh token goes back to the issuer it came from.
        let mut refused = false;
        if allow_refresh && st.tokens.as_ref().is_some_and(|t| t.refresh_token.is_some()) {
            match self.renew_silently(st).await {
                Ok(()) => return Ok(()),
                Err(e) => tracing::debug!("refresh failed, authorizing again: {e}"),
            }
            refused = true;
        }
        // After a refused refresh, look again: the server may have moved.
        let Discovered { prm, asm, .. } = self.discover(st, challenge, refused).await?;
        if st.tokens.as_ref().is_some_and(|t| t.issuer != asm.issuer) {
            // The server moved to another authorization server: its tokens are not sent again.
            st.tokens = None;
            self.cfg.store.remove_tokens(&self.key).await?;
        }
        let Some(authorizer) = self.cfg.authorizer.clone().filter(|_| self.cfg.grant == GrantKind::AuthorizationCode)
        else {
            if self.cfg.grant == GrantKind::AuthorizationCode {
                return Err(ClientError::LoginRequired(self.key.clone()));
            }
            let scopes = scopes.unwrap_or_else(|| self.select_scopes(challenge, &prm, &asm));
            scope::check("the scopes to ask for", &scopes)?;
            let client = register::client_for(&self.fetch, &*self.cfg.store, &self.cfg.identity, &asm, None).await?;
            let key = self.new_dpop_key(&asm)?;
            let ep = self.endpoint(&asm.token_endpoint, &asm.issuer, &client, key.as_ref());
            let (assertion, grant_type);
            let grant = if self.cfg.grant == GrantKind::JwtBearer {
                let stored = st.tokens.clone();
                assertion = self.bearer_assertion(&asm.issuer, &prm.resource, &scopes, stored.as_ref()).await?;
                grant_type = JWT_BEARER_GRANT;
                Grant::JwtBearer(&assertion)
            } else {
                grant_type = "client_credentials";
                Grant::ClientCredentials
            };
            let t = token::request(&ep, grant, &prm.resource, &scopes).await?;
            let base = self.base(&asm, &prm, &client, scopes, grant_type, key.as_ref());
            return self.keep(st, &base, t).await;
        };
        let scopes = scopes.unwrap_or_else(|| self.select_scopes(challenge, &prm, &asm));
        scope::check("the scopes to ask for", &scopes)?;
        let preferred =
            self.cfg.store.registration(&asm.issuer).await?.and_then(|r| r.redirect_uris.into_iter().next());
        let redirect_uri = authorizer.redirect_uri(preferred.as_deref()).await?;
        let client =
            register::client_for(&self.fetch, &*self.cfg.store, &self.cfg.identity, &asm, Some(&redirect_uri)).await?;
        let req = Request {
            client_id: &client.client_id,
            redirect_uri: &redirect_uri,
            scopes: &scopes,
            resource: &prm.resource,
        };
        let (url, pending) = authorize::start(&asm, &req)?;
        self.fetch
            .opts
            .check_credentials_to(&url, "an authorization request")
            .map_err(|e| ClientError::OAuth(e.to_string()))?;
        let callback = authorizer.authorize(url.as_str()).await?;
        let code = authorize::finish(&pending, &callback)?;
        let grant = Grant::Code { code: &code, redirect_uri: &redirect_uri, verifier: &pending.verifier };
        let key = self.new_dpop_key(&asm)?;
        let ep = self.endpoint(&asm.token_endpoint, &asm.issuer, &client, key.as_ref());
        let t = token::request(&ep, grant, &prm.resource, &scopes).await?;
        let base = self.base(&asm, &prm, &client, scopes, "authorization_code", key.as_ref());
        self.keep(st, &base, t).await
    }

    fn base(
        &self,
        asm: &AuthServer,
        prm: &ResourceMetadata,
        client: &ClientRegistration,
        scopes: Vec<String>,
        grant: &str,
        dpop_key: Option<&DpopKey>,
    ) -> StoredTokens {
        StoredTokens {
            access_token: String::new(),
            refresh_token: None,
            expires_at_ms: None,
            scopes,
            issuer: asm.issuer.clone(),
            token_endpoint: asm.token_endpoint.to_string(),
            revocation_endpoint: asm.revocation_endpoint.as_ref().map(Url::to_string),
            resource: prm.resource.clone(),
            client_id: client.client_id.clone(),
            grant_type: grant.to_owned(),
            dpop_key: dpop_key.map(|k| k.stored().to_owned()),
            dpop_bound: false,
            jwt_source: match &self.cfg.bearer_assertion {
                Some(BearerAssertion::Workload(source)) => source.stored(),
                _ => None,
            },
            enterprise_idp: match &self.cfg.bearer_assertion {
                Some(BearerAssertion::Enterprise(idp)) => idp.stored(),
                _ => None,
            },
        }
    }
}
