//! The credential every HTTP request carries: none, a fixed bearer token,
//! or an OAuth session that renews its token when the server refuses it.

use super::error::ClientError;
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

/// The renewals one request has made so far (each kind is bounded).
#[derive(Debug, Default)]
pub(crate) struct Retry {
    /// 401s answered by renewing the token.
    pub(crate) unauthorized: u32,
    /// 403 `insufficient_scope` answered by authorizing for more scope.
    pub(crate) step_ups: u32,
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
