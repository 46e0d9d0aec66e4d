//! Enterprise-managed authorization: the person's ID token from the
//! enterprise's identity provider is exchanged there (RFC 8693) for an
//! Identity Assertion JWT Authorization Grant (ID-JAG) naming the MCP
//! server's authorization server and resource; that grant is then presented
//! to the authorization server with the JWT bearer grant (RFC 7523 §2.1).

use super::fetch::{Fetch, oauth_error};
use super::jwt_source::JwtSource;
use crate::client::error::ClientError;
use crate::client::http_options::parse_url;
use crate::protocol::oauth::grants::{ID_JAG_TOKEN_TYPE, ID_TOKEN_TYPE, TOKEN_EXCHANGE_GRANT};
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
    pub(crate) client_secret: Option<String>,
    pub(crate) id_token: JwtSource,
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

    /// This client's secret at the identity provider (sent with HTTP Basic).
    pub fn client_secret(mut self, secret: impl Into<String>) -> Self {
        self.client_secret = Some(secret.into());
        self
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
        let basic = match &self.client_secret {
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
