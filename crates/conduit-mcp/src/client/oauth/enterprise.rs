//! Enterprise-managed authorization: the person's ID token from the
//! enterprise's identity provider is exchanged there (RFC 8693) for an
//! Identity Assertion JWT Authorization Grant (ID-JAG) naming the MCP
//! server's authorization server and resource; that grant is then presented
//! to the authorization server with the JWT bearer grant (RFC 7523 §2.1).
//!
//! A login renews itself the same way when its access token expires: the
//! identity provider's settings are kept with the tokens ([`StoredIdp`]), the ID
//! token and the client secret only as where they are read (a file path, an
//! environment variable's name), never as values.

use super::fetch::{Fetch, oauth_error};
use super::jwt_source::JwtSource;
use crate::client::error::ClientError;
use crate::client::http_options::parse_url;
use crate::protocol::oauth::grants::{ID_JAG_TOKEN_TYPE, ID_TOKEN_TYPE, TOKEN_EXCHANGE_GRANT};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// The enterprise identity provider's side of enterprise-managed
/// authorization: its token endpoint, this client's registration there, and
/// the person's ID token (read again at each exchange).
#[derive(Clone)]
#[must_use]
pub struct EnterpriseIdp {
    pub(crate) token_endpoint: String,
    pub(crate) client_id: String,
    /// This client's secret there: a value given, or where it is read at each exchange.
    pub(crate) client_secret: Option<JwtSource>,
    pub(crate) id_token: JwtSource,
}

/// What a credential store keeps of an [`EnterpriseIdp`], so a later run renews
/// the tokens without the person: the endpoint, the client id, and where the ID
/// token and the client secret are read (`file:PATH` or `env:NAME`), never the
/// token or the secret.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoredIdp {
    /// The identity provider's token endpoint.
    pub token_endpoint: String,
    /// This client's id there.
    pub client_id: String,
    /// Where the person's ID token is read.
    pub id_token: String,
    /// Where this client's secret there is read, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
}

impl fmt::Debug for EnterpriseIdp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EnterpriseIdp")
            .field("token_endpoint", &self.token_endpoint)
            .field("client_id", &self.client_id)
            .field("id_token", &self.id_token)
            .finish_non_exhaustive()
    }
}

impl EnterpriseIdp {
    /// The identity provider whose token endpoint is `token_endpoint`, where
    /// this client is `client_id`, for the person whose ID token `id_token` holds.
    pub fn new(token_endpoint: impl Into<String>, client_id: impl Into<String>, id_token: JwtSource) -> Self {
        Self { token_endpoint: token_endpoint.into(), client_id: client_id.into(), client_secret: None, id_token }
    }

    /// This client's secret at the identity provider (sent with HTTP Basic). A
    /// secret given as a value is not kept with the tokens, so their renewal needs
    /// the person's login again; [`client_secret_from`](Self::client_secret_from) renews alone.
    pub fn client_secret(mut self, secret: impl Into<String>) -> Self {
        self.client_secret = Some(JwtSource::value(secret));
        self
    }

    /// This client's secret at the identity provider, read from `source` (a file or
    /// an environment variable) at each exchange; the source, never the secret, is
    /// kept with the tokens, so they renew without the person.
    pub fn client_secret_from(mut self, source: JwtSource) -> Self {
        self.client_secret = Some(source);
        self
    }

    /// What a credential store keeps of it; `None` when the ID token or the secret
    /// was given as a value (nothing of it is stored then).
    pub(crate) fn stored(&self) -> Option<StoredIdp> {
        let client_secret = match &self.client_secret {
            Some(s) => Some(s.stored()?),
            None => None,
        };
        Some(StoredIdp {
            token_endpoint: self.token_endpoint.clone(),
            client_id: self.client_id.clone(),
            id_token: self.id_token.stored()?,
            client_secret,
        })
    }

    /// The identity provider a credential store kept ([`stored`](Self::stored)).
    pub(crate) fn from_stored(s: &StoredIdp) -> Option<Self> {
        let client_secret = match &s.client_secret {
            Some(c) => Some(JwtSource::from_stored(c)?),
            None => None,
        };
        Some(Self {
            token_endpoint: s.token_endpoint.clone(),
            client_id: s.client_id.clone(),
            client_secret,
            id_token: JwtSource::from_stored(&s.id_token)?,
        })
    }

    /// Exchanges the ID token for an ID-JAG for the authorization server
    /// `audience` (its issuer) and the MCP server `resource`, asking for `scopes`.
    pub(crate) async fn exchange(
        &self,
        fetch: &Fetch,
        audience: &str,
        resource: &str,
        scopes: &[String],
    ) -> Result<String, ClientError> {
        let endpoint = parse_url("the identity provider's token endpoint", &self.token_endpoint)?;
        let id_token = self.id_token.read()?;
        let scope = scopes.join(" ");
        let mut form = vec![
            ("grant_type", TOKEN_EXCHANGE_GRANT),
            ("requested_token_type", ID_JAG_TOKEN_TYPE),
            ("audience", audience),
            ("resource", resource),
            ("subject_token", id_token.as_str()),
            ("subject_token_type", ID_TOKEN_TYPE),
        ];
        if !scope.is_empty() {
            form.push(("scope", &scope));
        }
        let secret = self.client_secret.as_ref().map(JwtSource::read_secret).transpose()?;
        let basic = match &secret {
            Some(s) => Some((self.client_id.as_str(), s.as_str())),
            None => {
                form.push(("client_id", &self.client_id));
                None
            }
        };
        let answer = fetch.post_form(&endpoint, &form, basic).await?;
        let (status, body) = &answer;
        let issued = body.get("issued_token_type").and_then(Value::as_str);
        let jag = body.get("access_token").and_then(Value::as_str).filter(|t| !t.is_empty());
        match (status, jag, issued) {
            (200..=299, Some(jag), Some(ID_JAG_TOKEN_TYPE)) if jag.bytes().all(|b| b.is_ascii_graphic()) => {
                Ok(jag.to_owned())
            }
            (200..=299, Some(_), _) => Err(ClientError::OAuth(
                "the identity provider's token exchange answered with something other than an ID-JAG".into(),
            )),
            _ => Err(oauth_error("the token exchange at the identity provider", &answer)),
        }
    }
}
