//! How a session's token is presented and bound: `Authorization: Bearer`,
//! or `Authorization: DPoP` with a fresh proof for the request's method and
//! URL (RFC 9449 §7.1); the DPoP key of a new grant, and of stored tokens;
//! the token endpoint with this client's assertion key.

use super::super::assertion::ClientAssertionKey;
use super::super::dpop::DpopKey;
use super::super::token::TokenEndpoint;
use super::{AuthServer, ClientRegistration, Session, State};
use crate::client::error::ClientError;
use reqwest::Url;
use reqwest::header::{AUTHORIZATION, HeaderValue};

impl Session {
    /// Puts the current token (and its proof) on `req`; returns the token, to
    /// tell a refusal of it from one of a token renewed meanwhile.
    pub(crate) async fn authorize(&self, req: &mut reqwest::Request) -> Result<Option<String>, ClientError> {
        let Some((token, key)) = self.current().await? else { return Ok(None) };
        let header = |v: String| {
            let mut v = HeaderValue::from_str(&v).map_err(|e| ClientError::OAuth(e.to_string()))?;
            v.set_sensitive(true);
            Ok::<_, ClientError>(v)
        };
        match key {
            Some(key) => {
                let nonce = self.rs_nonce.get();
                let proof =
                    key.proof(req.method().as_str(), req.url().as_str(), Some(&token), nonce.as_deref(), self.now_s())?;
                let headers = req.headers_mut();
                headers.insert(AUTHORIZATION, header(format!("DPoP {token}"))?);
                headers.insert(crate::protocol::oauth::dpop::DPOP_HEADER, header(proof)?);
            }
            None => {
                req.headers_mut().insert(AUTHORIZATION, header(format!("Bearer {token}"))?);
            }
        }
        Ok(Some(token))
    }

    /// Keeps the MCP server's `DPoP-Nonce`, which any of its answers may carry (RFC 9449 §9).
    pub(crate) fn observe(&self, headers: &reqwest::header::HeaderMap) {
        self.rs_nonce.keep(headers);
    }

    /// The token endpoint `url` of `issuer` for `client`, with this
    /// client's assertion key and, when given, the DPoP key to bind to.
    pub(super) fn endpoint<'a>(
        &'a self,
        url: &'a Url,
        issuer: &'a str,
        client: &'a ClientRegistration,
        dpop: Option<&'a DpopKey>,
    ) -> TokenEndpoint<'a> {
        TokenEndpoint {
            fetch: &self.fetch,
            url,
            issuer,
            client,
            signer: self.cfg.identity.assertion_key.clone().or_else(|| {
                // A later run, not given the key: the file the registration names.
                let file = client.assertion_key_file.as_deref()?;
                ClientAssertionKey::from_pem_file(file)
                    .inspect_err(|e| tracing::debug!("the client assertion key named by the registration: {e}"))
                    .ok()
            }),
            dpop: dpop.map(|k| (k, &self.as_nonce)),
            now_s: self.now_s(),
        }
    }

    /// A new DPoP key for a new grant at `asm`, when this client binds its
    /// tokens and that server takes ES256 proofs.
    pub(super) fn new_dpop_key(&self, asm: &AuthServer) -> Result<Option<DpopKey>, ClientError> {
        let offered = asm.dpop_algs.as_ref().is_some_and(|a| a.iter().any(|a| a == super::super::dpop::ALG));
        if !self.cfg.dpop {
            return Ok(None);
        }
        if !offered {
            tracing::debug!("the authorization server offers no ES256 DPoP: tokens are not bound");
            return Ok(None);
        }
        DpopKey::generate().map(Some)
    }

    /// The DPoP key of `tokens`, when they have one (read once per session).
    pub(super) fn key_of(st: &mut State) -> Result<Option<DpopKey>, ClientError> {
        let Some(stored) = st.tokens.as_ref().and_then(|t| t.dpop_key.as_deref()) else { return Ok(None) };
        if let Some(k) = st.key.as_ref().filter(|k| k.stored() == stored) {
            return Ok(Some(k.clone()));
        }
        let k = DpopKey::from_stored(stored)?;
        st.key = Some(k.clone());
        Ok(Some(k))
    }
}
