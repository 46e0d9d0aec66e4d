//! Where tokens and client credentials live between requests and between
//! runs: the [`CredentialStore`] trait, what it holds ([`StoredTokens`] per
//! MCP server, [`ClientRegistration`] per authorization server issuer), and
//! the in-memory default.

use crate::client::error::ClientError;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;

/// The tokens one MCP server (resource) was granted, and what is needed to
/// refresh them without discovery.
#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoredTokens {
    /// The access token (a bearer capability: never logged).
    pub access_token: String,
    /// The refresh token, when the authorization server issued one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires, in milliseconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at_ms: Option<i64>,
    /// The scopes requested (sent again on refresh, so the new token has the same).
    #[serde(default)]
    pub scopes: Vec<String>,
    /// The issuer of the authorization server that issued them.
    pub issuer: String,
    /// The token endpoint of that authorization server.
    pub token_endpoint: String,
    /// Its revocation endpoint (RFC 7009), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revocation_endpoint: Option<String>,
    /// The `resource` the tokens were requested for.
    pub resource: String,
    /// The client id they were issued to.
    pub client_id: String,
    /// How they were obtained: `authorization_code`, `client_credentials`
    /// or the JWT bearer grant (`urn:ietf:params:oauth:grant-type:jwt-bearer`).
    pub grant_type: String,
    /// The DPoP private key the tokens are bound to (RFC 9449; PKCS#8 DER,
    /// base64url): a secret, kept with the tokens so a refresh keeps the binding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_key: Option<String>,
    /// Whether the access token is DPoP-bound (sent as `Authorization: DPoP`, with a proof).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dpop_bound: bool,
    /// Where the JWT of a workload's JWT bearer grant is read (`file:PATH` or `env:NAME`; never
    /// the token), so a later run renews without being told again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwt_source: Option<String>,
    /// The identity provider of an enterprise-managed login (its endpoint, this client's id
    /// there, and where the ID token and secret are read; never either), so a later run
    /// renews through it without the person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enterprise_idp: Option<super::StoredIdp>,
}

impl fmt::Debug for StoredTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoredTokens")
            .field("access_token", &"<redacted>")
            .field("refresh_token", &self.refresh_token.as_ref().map(|_| "<redacted>"))
            .field("expires_at_ms", &self.expires_at_ms)
            .field("scopes", &self.scopes)
            .field("issuer", &self.issuer)
            .field("resource", &self.resource)
            .field("grant_type", &self.grant_type)
            .field("dpop_key", &self.dpop_key.as_ref().map(|_| "<redacted>"))
            .field("dpop_bound", &self.dpop_bound)
            .field("jwt_source", &self.jwt_source)
            .field("enterprise_idp", &self.enterprise_idp)
            .finish_non_exhaustive()
    }
}

/// A client identity at one authorization server: pre-registered, a Client
/// ID Metadata Document URL, or the result of dynamic registration.
#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientRegistration {
    /// The issuer of the authorization server it is valid at (never used at another).
    pub issuer: String,
    /// The client id.
    pub client_id: String,
    /// The client secret, for confidential clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// `client_secret_basic`, `client_secret_post`, `private_key_jwt` or `none`.
    pub token_endpoint_auth_method: String,
    /// The redirect URIs registered.
    #[serde(default)]
    pub redirect_uris: Vec<String>,
    /// How it was obtained: `pre-registered`, `metadata-document` or `dynamic`.
    pub kind: String,
    /// The PEM file of its `private_key_jwt` key (the path, not the key), read again by a
    /// later run that was not given the key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assertion_key_file: Option<String>,
}

impl ClientRegistration {
    /// A registration for `client_id` at `issuer`, with its token endpoint authentication method.
    pub fn new(
        issuer: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: Option<String>,
        token_endpoint_auth_method: impl Into<String>,
        kind: impl Into<String>,
    ) -> Self {
        Self {
            issuer: issuer.into(),
            client_id: client_id.into(),
            client_secret,
            token_endpoint_auth_method: token_endpoint_auth_method.into(),
            redirect_uris: Vec::new(),
            kind: kind.into(),
            assertion_key_file: None,
        }
    }
}

impl fmt::Debug for ClientRegistration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientRegistration")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "<redacted>"))
            .field("token_endpoint_auth_method", &self.token_endpoint_auth_method)
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

/// Keeps tokens per MCP server URL and client registrations per
/// authorization server issuer (2026-07-28: credentials are bound to the
/// issuer that issued them and never used at another).
///
/// [`MemoryCredentials`] is the default; the CLI keeps them in files readable
/// by their owner only. Implementations must keep secrets out of logs.
#[async_trait]
pub trait CredentialStore: Send + Sync + fmt::Debug {
    /// The tokens stored for the MCP server at `resource`.
    async fn tokens(&self, resource: &str) -> Result<Option<StoredTokens>, ClientError>;
    /// Stores (replaces) the tokens of `resource`.
    async fn save_tokens(&self, resource: &str, tokens: &StoredTokens) -> Result<(), ClientError>;
    /// Forgets the tokens of `resource`.
    async fn remove_tokens(&self, resource: &str) -> Result<(), ClientError>;
    /// The client registration at the authorization server `issuer`.
    async fn registration(&self, issuer: &str) -> Result<Option<ClientRegistration>, ClientError>;
    /// Stores (replaces) the client registration at `issuer`.
    async fn save_registration(&self, issuer: &str, registration: &ClientRegistration) -> Result<(), ClientError>;
}

/// Credentials held in memory for the life of the process.
#[derive(Debug, Default)]
pub struct MemoryCredentials {
    tokens: Mutex<HashMap<String, StoredTokens>>,
    registrations: Mutex<HashMap<String, ClientRegistration>>,
}

impl MemoryCredentials {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl CredentialStore for MemoryCredentials {
    async fn tokens(&self, resource: &str) -> Result<Option<StoredTokens>, ClientError> {
        Ok(self.tokens.lock().unwrap_or_else(|p| p.into_inner()).get(resource).cloned())
    }

    async fn save_tokens(&self, resource: &str, tokens: &StoredTokens) -> Result<(), ClientError> {
        self.tokens.lock().unwrap_or_else(|p| p.into_inner()).insert(resource.to_owned(), tokens.clone());
        Ok(())
    }

    async fn remove_tokens(&self, resource: &str) -> Result<(), ClientError> {
        self.tokens.lock().unwrap_or_else(|p| p.into_inner()).remove(resource);
        Ok(())
    }

    async fn registration(&self, issuer: &str) -> Result<Option<ClientRegistration>, ClientError> {
        Ok(self.registrations.lock().unwrap_or_else(|p| p.into_inner()).get(issuer).cloned())
    }

    async fn save_registration(&self, issuer: &str, registration: &ClientRegistration) -> Result<(), ClientError> {
        self.registrations.lock().unwrap_or_else(|p| p.into_inner()).insert(issuer.to_owned(), registration.clone());
        Ok(())
    }
}
