//! The credential every HTTP request carries: none, a fixed bearer token,
//! or an OAuth session that renews its token when the server refuses it.

use super::error::ClientError;
use super::oauth::retry::Retry;
use super::oauth::session::Session;
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
    /// The bearer token to send now.
    pub(crate) async fn bearer(&self) -> Result<Option<String>, ClientError> {
        match self {
            Credential::None => Ok(None),
            Credential::Token(t) => Ok(Some(t.clone())),
            Credential::OAuth(s) => s.bearer().await,
        }
    }

    /// Answers a 401/403 with challenge `header`; `Ok(true)`: send the request again.
    pub(crate) async fn renew(
        &self,
        status: u16,
        used: Option<&str>,
        header: &str,
        retry: &mut Retry,
    ) -> Result<bool, ClientError> {
        match self {
            Credential::OAuth(s) => s.renew(status, used, header, retry).await,
            _ => Ok(false),
        }
    }

    /// The error for a refusal that renewing did not cure.
    pub(crate) fn refused(&self, status: u16) -> ClientError {
        ClientError::Unauthorized { status }
    }
}
