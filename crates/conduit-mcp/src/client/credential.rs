//! The credential every HTTP request carries: none, a fixed bearer token,
//! or an OAuth session that renews its token when the server refuses it
//! (and binds it with DPoP proofs when it was issued bound).

use super::error::ClientError;
use super::http_options::{transport, www_authenticate};
use super::oauth::retry::Retry;
use super::oauth::session::Session;
use reqwest::RequestBuilder;
use std::sync::Arc;

/// What authenticates the client's HTTP requests.
#[derive(Debug, Clone)]
pub(crate) enum Credential {
    /// Nothing.
    None,
    /// `Authorization: Bearer TOKEN`, as given.
    Token(String),
    /// OAuth 2.1: discovered, authorized, refreshed.
    OAuth(Arc<Session>),
}

impl Credential {
    /// The request `rb` with the credential on it, and the token it carries.
    pub(crate) async fn authorize(&self, rb: RequestBuilder) -> Result<(RequestBuilder, Option<String>), ClientError> {
        match self {
            Credential::None => Ok((rb, None)),
            Credential::Token(t) => Ok((rb.bearer_auth(t), Some(t.clone()))),
            Credential::OAuth(s) => {
                // Built first: a DPoP proof names the request's method and URL.
                let (client, req) = rb.build_split();
                let mut req = req.map_err(transport)?;
                let used = s.authorize(&mut req).await?;
                Ok((RequestBuilder::from_parts(client, req), used))
            }
        }
    }

    /// Reads what a response says for the next request (a server's `DPoP-Nonce`).
    pub(crate) fn observe(&self, resp: &reqwest::Response) {
        if let Credential::OAuth(s) = self {
            s.observe(resp.headers());
        }
    }

    /// Answers a 401/403 `resp`; `Ok(true)`: send the request again.
    pub(crate) async fn renew(
        &self,
        resp: &reqwest::Response,
        used: Option<&str>,
        retry: &mut Retry,
    ) -> Result<bool, ClientError> {
        match self {
            Credential::OAuth(s) => {
                let status = resp.status().as_u16();
                s.renew(status, used, &www_authenticate(resp), resp.headers(), retry).await
            }
            _ => Ok(false),
        }
    }

    /// The error for a refusal that renewing did not cure.
    pub(crate) fn refused(&self, status: u16) -> ClientError {
        ClientError::Unauthorized { status }
    }
}
